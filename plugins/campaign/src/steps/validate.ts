import {existsSync, statSync} from 'node:fs'
import {isAbsolute, join} from 'node:path'

import {campaignCpc, MIN_DAILY_CLICKS} from '../budget/cpc.js'
import {englishIn, ownWords} from './copy-language.js'
import {cutCopyChecker} from './truncation.js'
import type {AssetGroup, Campaign, ImageRecord, Issue, Keyword, MatchType, Negative, ResponsiveSearchAd, Severity, Workspace} from '../types.js'

/** Google Ads limits the checks use; docs/campaign-validation.md lists them with their codes. */
export const LIMITS = {
  description: 90,
  dg_headline: 40,
  headline: 30,
  keyword_chars: 80,
  keyword_words: 10,
  long_headline: 90,
  path: 15,
  pmax_business_name: 25,
  pmax_short_description: 60,
  pmax_short_headline: 15,
} as const

const FORBIDDEN = /[!@%^*()={};~`<>?\\|,[\]"]/
/** Words a search term never ends with unless it was cut short ("grinder with", "café de"). */
const DANGLING = new Set('an and as at by for from in of on or the to with em com da das de del do dos en para por con el la los las und mit für von vom zum zur der die das den im am'.split(' '))
const EMOJI = /\p{Extended_Pictographic}/u
// eslint-disable-next-line no-control-regex -- the whole ASCII range, control characters included
const ASCII = /^[\u0000-\u007F]*$/
// From the first double-width block up, astral characters included: those count one each in the slow path.
const WIDE_RANGE = /[\u1100-\u{10FFFF}]/u

/** Every issue in the account. `runDir` lets the picture checks look at the files. */
export function validateAccount(ws: Workspace, runDir?: string): Issue[] {
  const issues: Issue[] = []
  const add = (severity: Severity, code: string, path: string, message: string) => issues.push({code, message, path, severity})
  const campaigns = ws.account.campaigns
  if (campaigns.length === 0) add('error', 'account_empty', 'account.campaigns', 'the account has no campaigns')
  const sum = campaigns.reduce((a, c) => a + c.daily_budget_cents, 0)
  if (campaigns.length > 0 && sum !== ws.input.budget.daily_cents) {
    add('error', 'budget_sum_mismatch', 'account.campaigns', `campaign budgets add up to ${money(sum)} ${ws.input.budget.currency}, the daily budget is ${money(ws.input.budget.daily_cents)}`)
  }
  for (const [i, c] of campaigns.entries()) {
    issues.push(...validateCampaign(ws, c, `account.campaigns[${i}]`, runDir))
    const {cents, kind} = campaignCpc(ws, c)
    if (cents !== null && c.daily_budget_cents > 0 && c.daily_budget_cents < cents * MIN_DAILY_CLICKS) {
      const cur = ws.input.budget.currency
      add(
        'error',
        'budget_too_thin',
        `account.campaigns[${i}].daily_budget_cents`,
        `campaign "${c.name}" gets ${money(c.daily_budget_cents)} ${cur} a day: about ${Math.floor(c.daily_budget_cents / cents)} clicks at the ${kind} CPC estimate of ${money(cents)} ${cur}; a campaign needs at least ${MIN_DAILY_CLICKS} (${money(cents * MIN_DAILY_CLICKS)} ${cur}): group it with another campaign`,
      )
    }
  }
  if (runDir !== undefined) {
    for (const [i, p] of ws.input.catalog.entries()) {
      if (p.image === null || /^https?:\/\//i.test(p.image)) continue
      if (!existsSync(isAbsolute(p.image) ? p.image : join(runDir, p.image))) {
        add('warning', 'product_image_missing', `input.catalog[${i}].image`, `product "${p.id}": photo ${p.image} was not found when the run started; its pictures use another product's photo or none`)
      }
    }
  }
  return issues
}

export function validateCampaign(ws: Workspace, c: Campaign, at: string, runDir?: string): Issue[] {
  const issues: Issue[] = []
  const add = (severity: Severity, code: string, path: string, message: string) => issues.push({code, message, path, severity})
  const maxCpc = ws.input.budget.max_cpc_cents
  const site = hostOf(ws.input.business.url)
  // Product keywords repeat their product's URL (exact and phrase): parse each URL once.
  const hosts = new Map<string, null | string>()
  const checkUrl = (url: string, path: string) => {
    let host = hosts.get(url)
    if (host === undefined) hosts.set(url, (host = hostOf(url)))
    if (host === null) add('error', 'final_url_invalid', path, `"${url}" is not an absolute http(s) URL`)
    else if (site !== null && host !== site && !host.endsWith(`.${site}`) && !site.endsWith(`.${host}`)) {
      add('error', 'final_url_off_site', path, `"${url}" is outside the business's site ${site}`)
    }
  }
  const language = ws.input.business.language.split('-')[0].toLowerCase()
  const checkLanguage = (declared: string | undefined, name: string, path: string) => {
    if (declared !== undefined && declared.split('-')[0].toLowerCase() !== language) {
      add('error', 'copy_language', path, `the copy of "${name}" is written in ${declared}, but the business's language is ${ws.input.business.language}; ads must speak the language of the people searching`)
    }
  }
  const brandWords = new Set(ws.input.business.brand_terms.flatMap((t) => words(t)))
  let own: Set<string> | undefined
  const english = language === 'en'
  const checkEnglish = (list: string[], path: string, what: string) => {
    if (english) return
    for (const [i, t] of list.entries()) {
      own ??= ownWords(ws)
      const found = englishIn(t, ws.input.business.language, own)
      if (found) {
        add('error', 'copy_language', `${path}[${i}]`, `${what} "${t}" reads as English (${found.join(', ')}), but the business's language is ${ws.input.business.language}; write it in that language`)
      }
    }
  }
  let cut: ReturnType<typeof cutCopyChecker> | undefined
  const cutOne = (t: string, path: string, what: string, limit: number) => {
    cut ??= cutCopyChecker(ws)
    const why = cut(t, limit, adLength(t))
    if (why !== null) add('error', 'copy_truncated', path, `${what} "${t}" reads as cut mid-word or mid-phrase: ${why}; write it to end on a whole word`)
  }
  const checkCut = (list: string[], path: string, what: string, limit: number) => {
    for (const [i, t] of list.entries()) cutOne(t, `${path}[${i}]`, what, limit)
  }
  const cpc = (cents: null | number, path: string) => {
    if (cents !== null && maxCpc !== null && cents > maxCpc) add('error', 'cpc_above_max', path, `max CPC ${money(cents)} is above the maximum ${money(maxCpc)}`)
  }
  if (c.daily_budget_cents <= 0) add('error', 'budget_missing', `${at}.daily_budget_cents`, `campaign "${c.name}" has no daily budget`)
  cpc(c.max_cpc_cents, `${at}.max_cpc_cents`)

  if (c.type === 'search') {
    if (c.ad_groups.length === 0) add('error', 'campaign_without_ad_groups', `${at}.ad_groups`, `search campaign "${c.name}" has no ad groups`)
    const ownKeywords: Keyword[] = []
    const ownNormals: string[] = []
    for (const [g, group] of c.ad_groups.entries()) {
      const gp = `${at}.ad_groups[${g}]`
      cpc(group.max_cpc_cents, `${gp}.max_cpc_cents`)
      checkUrl(group.final_url, `${gp}.final_url`)
      if (group.keywords.length === 0) add('error', 'ad_group_without_keywords', `${gp}.keywords`, `ad group "${group.name}" has no keywords`)
      if (group.ads.length === 0) add('error', 'ad_group_without_ads', `${gp}.ads`, `ad group "${group.name}" has no responsive search ad`)
      checkLanguage(group.language, group.name, `${gp}.language`)
      const seen = new Set<string>()
      for (const [k, kw] of group.keywords.entries()) {
        const kp = `${gp}.keywords[${k}]`
        const n = normal(kw.text)
        checkKeyword(kw.text, kp, add)
        checkQualified(kw.text, n, kp, brandWords, add)
        if (kw.final_url !== undefined) checkUrl(kw.final_url, `${kp}.final_url`)
        const key = `${kw.match}:${n}`
        if (seen.has(key)) add('warning', 'duplicate_keyword', kp, `keyword "${kw.text}" (${kw.match}) appears twice in "${group.name}"`)
        seen.add(key)
        ownKeywords.push(kw)
        ownNormals.push(n)
      }
      for (const [a, ad] of group.ads.entries()) {
        validateRsa(ad, `${gp}.ads[${a}]`, add, checkUrl)
        checkEnglish(ad.headlines, `${gp}.ads[${a}].headlines`, 'headline')
        checkEnglish(ad.descriptions, `${gp}.ads[${a}].descriptions`, 'description')
        checkCut(ad.headlines, `${gp}.ads[${a}].headlines`, 'headline', LIMITS.headline)
        checkCut(ad.descriptions, `${gp}.ads[${a}].descriptions`, 'description', LIMITS.description)
      }
      checkEnglish(group.keywords.map((k) => k.text), `${gp}.keywords`, 'keyword')
      const groupIndex = blockIndex(group.keywords, ownNormals.slice(ownNormals.length - group.keywords.length))
      for (const [n, neg] of group.negatives.entries()) {
        checkKeyword(neg.text, `${gp}.negatives[${n}]`, add)
        const hit = groupIndex(neg)
        if (hit !== undefined) add('error', 'negative_blocks_keyword', `${gp}.negatives[${n}]`, `negative "${neg.text}" (${neg.match}) blocks the ad group's own keyword "${hit}"`)
      }
    }
    repeatedAds(c, at, add)
    const campaignIndex = blockIndex(ownKeywords, ownNormals)
    for (const [n, neg] of c.negatives.entries()) {
      checkKeyword(neg.text, `${at}.negatives[${n}]`, add)
      const hit = campaignIndex(neg)
      if (hit !== undefined) add('error', 'negative_blocks_keyword', `${at}.negatives[${n}]`, `campaign negative "${neg.text}" (${neg.match}) blocks the campaign's own keyword "${hit}"`)
    }
  } else {
    if (c.asset_groups.length === 0) add('error', 'campaign_without_asset_groups', `${at}.asset_groups`, `${c.type} campaign "${c.name}" has no asset groups`)
    if (ws.input.logo === null) add('error', 'logo_missing', 'input.logo', `${c.type} campaign "${c.name}" needs a logo: set [brand] logo`)
    for (const [g, group] of c.asset_groups.entries()) {
      const gp = `${at}.asset_groups[${g}]`
      checkLanguage(group.language, group.name, `${gp}.language`)
      checkEnglish(group.headlines, `${gp}.headlines`, 'headline')
      checkEnglish(group.long_headlines, `${gp}.long_headlines`, 'long headline')
      checkEnglish(group.descriptions, `${gp}.descriptions`, 'description')
      checkEnglish(group.search_themes, `${gp}.search_themes`, 'search theme')
      checkCut(group.headlines, `${gp}.headlines`, 'headline', c.type === 'performance_max' ? LIMITS.headline : LIMITS.dg_headline)
      checkCut(group.long_headlines, `${gp}.long_headlines`, 'long headline', LIMITS.long_headline)
      checkCut(group.descriptions, `${gp}.descriptions`, 'description', LIMITS.description)
      cutOne(group.business_name, `${gp}.business_name`, 'business name', LIMITS.pmax_business_name)
      validateAssetGroup(c, group, `${at}.asset_groups[${g}]`, add, checkUrl, runDir)
    }
  }
  return issues
}

type Add = (severity: Severity, code: string, path: string, message: string) => void

function validateRsa(ad: ResponsiveSearchAd, at: string, add: Add, checkUrl: (url: string, path: string) => void): void {
  texts(ad.headlines, `${at}.headlines`, LIMITS.headline, 'headline', add)
  texts(ad.descriptions, `${at}.descriptions`, LIMITS.description, 'description', add)
  count(ad.headlines.length, 3, 15, `${at}.headlines`, 'headlines', add)
  count(ad.descriptions.length, 2, 4, `${at}.descriptions`, 'descriptions', add)
  for (const [i, h] of ad.headlines.entries()) {
    if (h.includes('!')) add('error', 'headline_exclamation', `${at}.headlines[${i}]`, `headline "${h}" has "!", which Google Ads does not allow in headlines`)
  }
  const bangs = [...ad.headlines, ...ad.descriptions].join('').split('!').length - 1
  if (bangs > 1) add('error', 'too_many_exclamations', at, `the ad has ${bangs} "!"; at most one is allowed`)
  if (ad.path1.length > LIMITS.path) add('error', 'path_too_long', `${at}.path1`, `path 1 "${ad.path1}" has ${ad.path1.length} characters; the limit is ${LIMITS.path}`)
  if (ad.path2.length > LIMITS.path) add('error', 'path_too_long', `${at}.path2`, `path 2 "${ad.path2}" has ${ad.path2.length} characters; the limit is ${LIMITS.path}`)
  if (ad.path2 !== '' && ad.path1 === '') add('error', 'path2_without_path1', `${at}.path2`, 'path 2 is set but path 1 is empty')
  for (const p of ['path1', 'path2'] as const) {
    if (/[\s/]/.test(ad[p])) add('error', 'path_invalid', `${at}.${p}`, `${p} "${ad[p]}" must not contain spaces or "/"`)
  }
  checkUrl(ad.final_url, `${at}.final_url`)
}

function validateAssetGroup(c: Campaign, g: AssetGroup, at: string, add: Add, checkUrl: (url: string, path: string) => void, runDir?: string): void {
  const pmax = c.type === 'performance_max'
  const headlineMax = pmax ? LIMITS.headline : LIMITS.dg_headline
  texts(g.headlines, `${at}.headlines`, headlineMax, 'headline', add)
  texts(g.descriptions, `${at}.descriptions`, LIMITS.description, 'description', add)
  checkUrl(g.final_url, `${at}.final_url`)
  if (g.business_name.trim() === '') add('error', 'business_name_missing', `${at}.business_name`, 'the business name is empty')
  if (g.business_name.length > LIMITS.pmax_business_name) {
    add('error', 'business_name_too_long', `${at}.business_name`, `business name "${g.business_name}" has ${g.business_name.length} characters; the limit is ${LIMITS.pmax_business_name}`)
  }
  for (const [i, h] of g.headlines.entries()) {
    if (h.includes('!')) add('error', 'headline_exclamation', `${at}.headlines[${i}]`, `headline "${h}" has "!", which Google Ads does not allow in headlines`)
  }
  if (pmax) {
    count(g.headlines.length, 3, 15, `${at}.headlines`, 'headlines', add)
    count(g.long_headlines.length, 1, 5, `${at}.long_headlines`, 'long_headlines', add)
    count(g.descriptions.length, 2, 5, `${at}.descriptions`, 'descriptions', add)
    texts(g.long_headlines, `${at}.long_headlines`, LIMITS.long_headline, 'long_headline', add)
    if (g.headlines.length > 0 && !g.headlines.some((h) => h.length <= LIMITS.pmax_short_headline)) {
      add('error', 'short_headline_missing', `${at}.headlines`, `Performance Max needs at least one headline of at most ${LIMITS.pmax_short_headline} characters`)
    }
    if (g.descriptions.length > 0 && !g.descriptions.some((d) => d.length <= LIMITS.pmax_short_description)) {
      add('error', 'short_description_missing', `${at}.descriptions`, `Performance Max needs at least one description of at most ${LIMITS.pmax_short_description} characters`)
    }
    for (const [i, t] of g.search_themes.entries()) checkKeyword(t, `${at}.search_themes[${i}]`, add)
  } else {
    count(g.headlines.length, 1, 5, `${at}.headlines`, 'headlines', add)
    count(g.descriptions.length, 1, 5, `${at}.descriptions`, 'descriptions', add)
  }
  const kinds = new Set(g.images.map((i) => i.kind))
  for (const kind of ['landscape', 'square'] as const) {
    if (!kinds.has(kind)) add('error', 'image_missing', `${at}.images`, `asset group "${g.name}" has no ${kind} picture`)
  }
  for (const [i, img] of g.images.entries()) checkImage(img, `${at}.images[${i}]`, add, runDir)
}

const IMAGE_RULES: Record<ImageRecord['kind'], {minH: number; minW: number; ratio: number}> = {
  landscape: {minH: 314, minW: 600, ratio: 1.91},
  portrait: {minH: 600, minW: 480, ratio: 0.8},
  square: {minH: 300, minW: 300, ratio: 1},
}

function checkImage(img: ImageRecord, at: string, add: Add, runDir?: string): void {
  const rule = IMAGE_RULES[img.kind]
  const ratio = img.width / img.height
  if (Math.abs(ratio - rule.ratio) / rule.ratio > 0.01 || img.width < rule.minW || img.height < rule.minH) {
    add('error', 'image_size', at, `${img.kind} picture ${img.id} is ${img.width}x${img.height}; it needs a ${rule.ratio}:1 ratio and at least ${rule.minW}x${rule.minH}`)
  }
  if (runDir === undefined) return
  try {
    const {size} = statSync(join(runDir, img.path))
    if (size > 5120 * 1024) add('error', 'image_too_large', at, `picture ${img.path} is ${Math.round(size / 1024)} KB; the limit is 5120 KB`)
  } catch {
    add('error', 'image_file_missing', at, `picture ${img.path} does not exist in the run directory`)
  }
}

/**
 * A search term a buyer would bid on: not one bare word (a head term such as "tea" or
 * "accessories" spends the budget on every kind of search) unless it is the brand, and not a
 * phrase cut off mid-way ("grinder with").
 */
function checkQualified(text: string, normalised: string, at: string, brandWords: Set<string>, add: Add): void {
  const w = normalised.split(' ').filter(Boolean)
  if (w.length === 1 && !brandWords.has(w[0]) && !/\d/.test(w[0])) {
    add('error', 'keyword_head_term', at, `keyword "${text}" is one generic word; qualify it with what is sold, an intent or an attribute ("buy ${text}", "${text} online")`)
  }
  if (w.length > 1 && DANGLING.has(w.at(-1) as string)) add('error', 'keyword_incomplete', at, `keyword "${text}" ends with "${w.at(-1)}": it reads as cut off mid-phrase`)
}

/**
 * Characters as Google Ads counts them: one each, except double-width ones (CJK ideographs, kana,
 * hangul, full-width forms), which count two.
 */
export function adLength(text: string): number {
  // Most copy has no double-width character: one test of the whole text instead of one per character.
  if (!WIDE_RANGE.test(text)) return text.length
  let n = 0
  for (const ch of text) n += /[\u1100-\u115F\u2E80-\uA4CF\uAC00-\uD7A3\uF900-\uFAFF\uFE30-\uFE4F\uFF00-\uFF60\uFFE0-\uFFE6]/u.test(ch) ? 2 : 1
  return n
}

function texts(list: string[], at: string, max: number, what: string, add: Add): void {
  const seen = new Map<string, number>()
  for (const [i, t] of list.entries()) {
    const p = `${at}[${i}]`
    if (t.trim() === '') {
      add('error', 'empty_text', p, `${what} ${i + 1} is empty`)
      continue
    }
    const length = adLength(t)
    if (length > max) add('error', `${what}_too_long`, p, `${what} "${t}" has ${length} characters${length === t.length ? '' : ' (double-width ones count 2)'}; the limit is ${max}`)
    const key = sameWords(t)
    if (seen.has(key)) add('error', 'duplicate_text', p, `${what} "${t}" repeats ${what} ${(seen.get(key) ?? 0) + 1} "${list[seen.get(key) ?? 0]}" (the same words)`)
    else seen.set(key, i)
    const caps = t.split(/\s+/).find((w) => /^[^a-z]*[A-Z]{4,}[^a-z]*$/.test(w))
    if (caps) add('warning', 'all_caps', p, `"${caps}" is in capitals; Google Ads limits excessive capitalisation`)
    if (/([!?.,;:])\1/.test(t.replace(/\.\.\.$/, ''))) add('warning', 'repeated_punctuation', p, `${what} "${t}" repeats punctuation`)
    if (EMOJI.test(t)) add('error', 'emoji', p, `${what} "${t}" has an emoji or symbol Google Ads rejects`)
  }
}

/** A text's words without case, accents, punctuation or order: "Café, Beans!" and "beans cafe" are the same copy. */
function sameWords(text: string): string {
  // Folding accents is the costly part; most ad text is plain ASCII and has none to fold.
  return (ASCII.test(text) ? text : text.normalize('NFD'))
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean)
    .sort()
    .join(' ')
}

/**
 * Ad groups split a campaign by the searches they answer; an ad that repeats most of another ad
 * group's headlines answers none of them better. Flags the later ad of each pair sharing more
 * than two thirds of the headlines of the smaller one.
 */
function repeatedAds(c: Campaign, at: string, add: Add): void {
  const ads = c.ad_groups.flatMap((g, gi) => g.ads.map((ad, ai) => ({group: g.name, keys: new Set(ad.headlines.map((h) => sameWords(h))), path: `${at}.ad_groups[${gi}].ads[${ai}]`})))
  const holders = new Map<string, number[]>()
  const shared = new Map<number, Map<number, number>>()
  for (const [i, ad] of ads.entries()) {
    for (const k of ad.keys) {
      const list = holders.get(k) ?? []
      for (const j of list) {
        const row = shared.get(i) ?? new Map<number, number>()
        row.set(j, (row.get(j) ?? 0) + 1)
        shared.set(i, row)
      }
      list.push(i)
      holders.set(k, list)
    }
  }
  for (const [i, row] of shared) {
    for (const [j, n] of row) {
      const smaller = Math.min(ads[i].keys.size, ads[j].keys.size)
      if (smaller >= 3 && n * 3 > smaller * 2) {
        add('warning', 'ad_repeated', `${ads[i].path}.headlines`, `the ad of "${ads[i].group}" repeats ${n} of its ${ads[i].keys.size} headlines from the ad of "${ads[j].group}"; write headlines for the searches of this ad group`)
        break
      }
    }
  }
}

function count(n: number, min: number, max: number, at: string, what: string, add: Add): void {
  if (n < min) add('error', `too_few_${what}`, at, `${n} ${what.replace('_', ' ')}; at least ${min} are needed`)
  if (n > max) add('error', `too_many_${what}`, at, `${n} ${what.replace('_', ' ')}; at most ${max} are allowed`)
}

function checkKeyword(text: string, at: string, add: Add): void {
  if (text.trim() === '') {
    add('error', 'keyword_empty', at, 'the keyword is empty')
    return
  }
  if (text.length > LIMITS.keyword_chars) add('error', 'keyword_too_long', at, `keyword "${text}" has ${text.length} characters; the limit is ${LIMITS.keyword_chars}`)
  const words = wordCount(text)
  if (words > LIMITS.keyword_words) add('error', 'keyword_too_many_words', at, `keyword "${text}" has ${words} words; the limit is ${LIMITS.keyword_words}`)
  const bad = FORBIDDEN.exec(text)
  if (bad) add('error', 'keyword_forbidden_char', at, `keyword "${text}" contains "${bad[0]}", which Google Ads does not allow`)
}

/** Every contiguous run of words of a normalised text: what a phrase negative must equal to block it. */
export function subphrases(text: string): string[] {
  const w = text.split(' ')
  const out: string[] = []
  for (let i = 0; i < w.length; i++) {
    let s = ''
    for (let j = i; j < w.length; j++) {
      s = j === i ? w[i] : `${s} ${w[j]}`
      out.push(s)
    }
  }
  return out
}

/**
 * Which of `keywords` a negative blocks, answered from indexes (exact texts, sub-phrases) so
 * checking every negative against every keyword stays linear on 10,000-keyword accounts.
 */
function blockIndex(keywords: Keyword[], normals: string[]): (neg: Pick<Negative, 'match' | 'text'>) => string | undefined {
  let exact: Map<string, string> | undefined
  let phrase: Map<string, string> | undefined
  let padded: string[] | undefined
  let scans = 0
  return (neg) => {
    const n = normal(neg.text)
    if (neg.match === 'exact') {
      exact ??= new Map(keywords.map((k, i) => [normals[i], k.text]))
      return exact.get(n)
    }
    if (neg.match === 'phrase') {
      // Few negatives: scanning is cheaper than indexing every sub-phrase of every keyword.
      if (!phrase && scans++ < 64) {
        padded ??= normals.map((k) => ` ${k} `)
        const i = padded.findIndex((k) => k.includes(` ${n} `))
        return i === -1 ? undefined : keywords[i].text
      }
      if (!phrase) {
        phrase = new Map()
        for (const [i, k] of keywords.entries()) for (const s of subphrases(normals[i])) if (!phrase.has(s)) phrase.set(s, k.text)
      }
      return phrase.get(n)
    }
    return keywords.find((k) => blocks(neg, k.text))?.text
  }
}

function words(text: string): string[] {
  return normal(text).split(' ').filter(Boolean)
}

/** Words separated by white space, counted without building them (10,000 keywords per export). */
function wordCount(text: string): number {
  let n = 0
  let inWord = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    const space = c < 128 ? c === 32 || (c >= 9 && c <= 13) : /\s/.test(text[i])
    if (!space && !inWord) n++
    inWord = !space
  }
  return n
}

export function normal(text: string): string {
  const lower = text.toLowerCase()
  // Most texts are already single-spaced; replacing would copy them for nothing.
  return UNEVEN_SPACE.test(lower) ? lower.replace(/\s+/g, ' ').trim() : lower
}

const UNEVEN_SPACE = /\s\s|[^\S ]|^\s|\s$/

/** Whether a negative of the given match type stops a query equal to `query`. */
export function blocks(neg: Pick<Negative, 'match' | 'text'>, query: string): boolean {
  const q = words(query)
  const n = words(neg.text)
  if (n.length === 0) return false
  const byMatch: Record<MatchType, () => boolean> = {
    broad: () => n.every((w) => q.includes(w)),
    exact: () => n.join(' ') === q.join(' '),
    phrase: () => ` ${q.join(' ')} `.includes(` ${n.join(' ')} `),
  }
  return byMatch[neg.match]()
}

export function hostOf(url: string): null | string {
  try {
    const u = new URL(url)
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return null
    return u.hostname.replace(/^www\./, '').toLowerCase()
  } catch {
    return null
  }
}

function money(cents: number): string {
  return (cents / 100).toFixed(2)
}
