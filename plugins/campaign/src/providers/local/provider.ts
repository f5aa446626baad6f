import {setTimeout as sleep} from 'node:timers/promises'

import {slugify} from '../../lib/slug.js'
import {shortName} from '../../lib/text.js'
import type {BidStrategy, Budget, Business, CampaignType, Keyword, Product} from '../../types.js'
import type {MissionSession, Provider, ProviderOptions} from '../provider.js'
import {type CpcKind, kindOfBands, sumBands} from '../../budget/cpc.js'
import type {CatalogSummary, CategorySummary} from '../../tools/catalog-summary.js'
import {PermanentFailure} from '../../missions/failure.js'
import {displayName, fit, firstSentence, keywordOf, pathOf, pick, price, titleCase} from './copy.js'
import {LOCAL_LANGUAGES, type Phrases, phrasesFor} from './phrases.js'


interface Planned {
  /** Categories whose products all belong to the group (set_account_plan resolves them to ids). */
  categories?: string[]
  final_url: string
  name: string
  product_ids: string[]
  theme: string
}

interface BusinessInfo {
  brand: {colors: string[]; logo: null | string}
  budget: Budget
  budget_rule: {cpc_estimate_cents: Record<CpcKind, null | number>; min_daily_clicks: number}
  business: Business
  catalog: CatalogSummary
  formats: CampaignType[]
  search_bid_strategy: BidStrategy
}

interface Brief {
  brand_kit: {business_name: string} | null
  /** Products in the whole catalog (from the brief's catalog summary). */
  catalog_products?: number
  budget: Budget
  business: Business
  campaign: {max_cpc_cents: null | number; name: string; planned: Planned[]; type: CampaignType}
  products: Product[]
}

/**
 * The offline planner: deterministic, no network, no account. It knows nothing the tools do
 * not tell it and changes nothing except through them, exactly like a model would, so it
 * exercises the whole engine and gives a sound account to start from.
 */
export function createLocalProvider(options: ProviderOptions): Provider {
  const delay = Number(process.env.TOOLKIT_CAMPAIGN_LOCAL_DELAY_MS ?? 0)
  return {
    model: options.model,
    name: 'local',
    async runMission(session) {
      const call = async <T>(name: string, input: unknown = {}): Promise<T> => {
        session.transcript({content: [{input, name, type: 'tool_use'}], role: 'assistant'})
        const res = await session.call(name, input)
        session.transcript({content: [{content: res, name, type: 'tool_result'}], role: 'user'})
        if (delay > 0) await sleep(delay, undefined, {signal: session.signal})
        if (!res.ok) throw new Error(`${name} refused: ${res.error}`)
        return res.result as T
      }
      session.transcript({content: session.prompt, role: 'user'})
      if (session.kind === 'plan') await plan(call, session)
      else await build(call, session)
      session.usage({cost_usd: 0, input_tokens: 0, output_tokens: 0})
    },
  }
}

type Call = <T>(name: string, input?: unknown) => Promise<T>

async function plan(call: Call, session: MissionSession): Promise<void> {
  const info = await call<BusinessInfo>('get_business')
  const {business, budget} = info
  if (phrasesFor(business.language) === null) {
    throw new PermanentFailure(
      `the offline planner writes ad copy in ${LOCAL_LANGUAGES.join(', ')} only, and business.language is ${business.language}; run with a model provider (--provider) that writes ${business.language}, or set the language the ads should use`,
    )
  }
  const name = displayName(business.name)
  const colors = info.brand.colors.length > 0 ? info.brand.colors : ['#1f2937', '#f59e0b']
  await call('set_brand_kit', {business_name: fit(name, 25, business.language) ?? shortName(name, 25, business.url, business.language), colors, tone: 'clear, factual, friendly'})

  // Planned from the catalog summary (largest categories first), whatever the catalog's size.
  // Without a catalog, the business's pages stand in for categories.
  const empty = (n: string): CategorySummary => ({max_price_cents: 0, median_price_cents: 0, min_price_cents: 0, name: n, price_bands: {premium: 0, standard: 0, value: 0}, products: 0, top_products: [], with_photo_file: 0})
  let categories = info.catalog.categories
  if (categories.length === 0) categories = [...new Map(business.pages.map((pg) => [pg.name.toLowerCase(), empty(pg.name)])).values()]
  if (categories.length === 0) categories = [empty(name)]
  const pageFor = (category: string) =>
    business.pages.find((pg) => pg.name.toLowerCase() === category.toLowerCase())?.url ??
    business.pages.find((pg) => pg.name.toLowerCase().includes(category.toLowerCase()))?.url ??
    business.url
  const cpc = budget.max_cpc_cents ?? Math.max(10, Math.min(budget.daily_cents, Math.round(budget.daily_cents / 20)))
  const estimates = info.budget_rule.cpc_estimate_cents
  const minClicks = info.budget_rule.min_daily_clicks
  // Cents a day a campaign selling these categories needs (0 when the currency has no estimate);
  // categories without products are services.
  const need = (cats: CategorySummary[], kind?: CpcKind) => (estimates[kind ?? kindOfBands(sumBands(cats))] ?? 0) * minClicks

  interface Draft {
    ad_groups: Planned[]
    bid_strategy: BidStrategy
    max_cpc_cents: null | number
    name: string
    need: number
    type: CampaignType
    weight: number
  }
  const daily = budget.daily_cents
  const search = info.formats.includes('search')
  const notes: string[] = []
  // Brand searches are cheap and convert best: 10 % of the budget, or what 10 clicks cost.
  const brandNeed = need([], 'brand')
  let brandCents = search && business.brand_terms.length > 0 ? Math.max(Math.round(daily * 0.1), brandNeed) : 0
  const cheapestCategory = Math.min(...categories.map((c) => need([c])))
  // Image campaigns come after Search: each needs its own 10 clicks, and Search must keep enough.
  const image: {share: number; type: CampaignType}[] = []
  const photos = categories.some((c) => c.with_photo_file > 0)
  for (const [type, share] of [['performance_max', 0.25], ['demand_gen', 0.15]] as const) {
    if (!info.formats.includes(type)) continue
    if (!photos) {
      notes.push(`no ${type === 'performance_max' ? 'Performance Max' : 'Demand Gen'} campaign: no product has a photo to make its pictures from`)
      continue
    }
    const cents = Math.round(daily * share)
    const left = daily - brandCents - image.reduce((a, x) => a + Math.round(daily * x.share), 0) - cents
    if (cents >= need(categories) && (!search || left >= cheapestCategory)) image.push({share, type})
    else notes.push(`no ${type === 'performance_max' ? 'Performance Max' : 'Demand Gen'} campaign: its ${Math.round(share * 100)} % share would not buy ${minClicks} clicks a day next to the Search campaigns`)
  }
  let searchCents = daily - brandCents - image.reduce((a, x) => a + Math.round(daily * x.share), 0)
  if (search && brandCents > 0 && searchCents < cheapestCategory) {
    notes.push('no separate Brand campaign: the budget is needed for the category campaigns')
    searchCents += brandCents
    brandCents = 0
  }
  const bins = search ? groupCategories(categories, searchCents, (cats) => need(cats)) : []
  if (bins.length < categories.length && bins.length > 0) {
    notes.push(`${categories.length} categories in ${bins.length} Search campaigns: one campaign per category would buy fewer than ${minClicks} clicks a day each at the CPC estimates`)
  }

  const drafts: Draft[] = []
  if (brandCents > 0) {
    drafts.push({ad_groups: [{final_url: business.url, name: 'Brand', product_ids: [], theme: 'brand'}], bid_strategy: info.search_bid_strategy, max_cpc_cents: cpc, name: `${name} - Brand`, need: brandNeed, type: 'search', weight: brandCents})
  }
  for (const bin of bins) {
    const groups: Planned[] = []
    for (const c of bin) {
      const label = titleCase(c.name)
      const own = {categories: c.products > 0 ? [c.name] : [], final_url: pageFor(c.name), product_ids: []}
      groups.push({...own, name: label, theme: 'generic'})
      if (await namesProducts(call, c)) groups.push({...own, name: `${label} - Products`, theme: 'products'})
      groups.push({...own, name: `${label} - Prices`, theme: 'prices'})
    }
    drafts.push({
      ad_groups: groups,
      bid_strategy: info.search_bid_strategy,
      max_cpc_cents: cpc,
      name: `${name} - ${binLabel(bin.map((c) => titleCase(c.name)))}`,
      need: need(bin),
      type: 'search',
      weight: bin.reduce((a, c) => a + Math.max(1, c.products), 0),
    })
  }
  // Category campaigns share the Search money by product count (pages: evenly), never below need.
  const catDrafts = drafts.filter((d) => d.type === 'search' && d.ad_groups[0]?.theme !== 'brand')
  const catShares = splitWithFloor(searchCents, catDrafts.map((d) => d.weight), catDrafts.map((d) => d.need))
  for (const [i, d] of catDrafts.entries()) d.weight = catShares[i]

  // Asset groups: the biggest categories, with the products that have photos first.
  // (The summary's top products list those with a photo first.)
  const imageGroups: Planned[] = categories.slice(0, 5).map((c) => ({final_url: pageFor(c.name), name: titleCase(c.name), product_ids: c.top_products.slice(0, 3).map((p) => p.id), theme: 'image'}))
  for (const x of image) {
    const pmax = x.type === 'performance_max'
    drafts.push({ad_groups: pmax ? imageGroups : imageGroups.slice(0, 3), bid_strategy: 'maximize_conversions', max_cpc_cents: null, name: `${name} - ${pmax ? 'Performance Max' : 'Demand Gen'}`, need: 0, type: x.type, weight: Math.round(daily * x.share)})
  }
  if (drafts.length === 0) throw new PermanentFailure('no campaign fits the daily budget and the formats asked for')
  // Two names with one slug (a category called "Brand", say) would collide: number the later one.
  const used = new Set<string>()
  for (const d of drafts) {
    let n = d.name
    for (let k = 2; used.has(slugify(n)); k++) n = `${d.name} ${k}`
    used.add(slugify(n))
    d.name = n
  }
  const budgets = split(daily, drafts.map((d) => d.weight))
  session.text(`Planned ${drafts.length} campaigns over ${categories.length} categories and ${info.catalog.products} products.${notes.length > 0 ? ` ${notes.join('; ')}.` : ''}`)
  await call('set_account_plan', {
    campaigns: drafts.map((d, i) => ({ad_groups: d.ad_groups, bid_strategy: d.bid_strategy, daily_budget_cents: budgets[i], max_cpc_cents: d.max_cpc_cents, name: d.name, type: d.type})),
  })
  await call('finish', {summary: `${drafts.length} campaigns`})
}

/** `A`, `A & B`, `A, B & C`, or `A, B & 3 more` (so a campaign name stays short). */
function binLabel(labels: string[]): string {
  if (labels.length === 1) return labels[0]
  if (labels.length <= 3) return `${labels.slice(0, -1).join(', ')} & ${labels.at(-1)}`
  return `${labels.slice(0, 2).join(', ')} & ${labels.length - 2} more`
}

/**
 * Groups categories into as many Search campaigns as the money allows: each campaign's share (by
 * product count) must buy the minimum clicks at its CPC estimate. Biggest categories first, each
 * into the campaign with the fewest products so far.
 */
function groupCategories(categories: CategorySummary[], cents: number, need: (cats: CategorySummary[]) => number): CategorySummary[][] {
  const weight = (c: CategorySummary) => Math.max(1, c.products)
  const total = categories.reduce((a, c) => a + weight(c), 0)
  for (let k = categories.length; k >= 1; k--) {
    const bins: CategorySummary[][] = Array.from({length: k}, () => [])
    const size = new Array<number>(k).fill(0)
    for (const c of categories) {
      const i = size.indexOf(Math.min(...size))
      bins[i].push(c)
      size[i] += weight(c)
    }
    const fits = bins.every((bin, i) => (cents * size[i]) / total >= need(bin))
    if (fits || k === 1) return bins
  }
  return []
}

/**
 * Whether a category has a product whose name is a search term: its top products say so for
 * most catalogs; otherwise the rest of the category is paged through until one does.
 */
async function namesProducts(call: Call, c: CategorySummary): Promise<boolean> {
  if (c.top_products.some((p) => productTerm(p.title) !== null)) return true
  if (c.products <= c.top_products.length) return false
  for (let offset = 0; offset < c.products; offset += 100) {
    const page = await call<{products: Product[]; total: number}>('query_catalog', {category: c.name, limit: 100, offset})
    if (page.products.some((p) => productTerm(p.title) !== null)) return true
    if (page.products.length === 0) break
  }
  return false
}

/** Like split(), but every part first gets its floor when the total allows. */
function splitWithFloor(total: number, weights: number[], floors: number[]): number[] {
  const floorSum = floors.reduce((a, b) => a + b, 0)
  if (weights.length === 0) return []
  if (floorSum > total) return split(total, weights)
  const raw = split(total, weights)
  if (raw.every((r, i) => r >= floors[i])) return raw
  const extra = split(total - floorSum, weights)
  return floors.map((f, i) => f + extra[i])
}

/** Splits `total` cents by weight with the largest-remainder method, so the parts add up exactly. */
export function split(total: number, weights: number[]): number[] {
  const sum = weights.reduce((a, b) => a + b, 0) || 1
  const raw = weights.map((w) => (total * w) / sum)
  const parts = raw.map((r) => Math.max(1, Math.floor(r)))
  let left = total - parts.reduce((a, b) => a + b, 0)
  const order = raw.map((r, i) => [r - Math.floor(r), i] as const).sort((a, b) => b[0] - a[0] || a[1] - b[1])
  for (let k = 0; left > 0; k = (k + 1) % order.length, left--) parts[order[k][1]]++
  // The 1-cent floor can overshoot a tiny budget: take the excess back from the largest parts.
  while (left < 0) {
    const i = parts.indexOf(Math.max(...parts))
    if (parts[i] <= 1) break
    parts[i]--
    left++
  }
  return parts
}

async function build(call: Call, session: MissionSession): Promise<void> {
  const raw = await call<Brief & {catalog: {products: number}}>('get_brief')
  const brief: Brief = {...raw, catalog_products: raw.catalog.products}
  const {business, budget, campaign} = brief
  const words = phrasesFor(business.language)
  if (words === null) throw new PermanentFailure(`the offline planner cannot write ${business.language} copy; use a model provider (--provider)`)
  const name = displayName(business.name)
  const byId = new Map(brief.products.map((p) => [p.id, p]))
  const maxCpc = campaign.max_cpc_cents ?? budget.max_cpc_cents ?? 100
  const own: string[] = []
  if (campaign.type === 'search') {
    for (const g of campaign.planned) {
      const items = g.product_ids.map((id) => byId.get(id)).filter((p): p is Product => p !== undefined)
      const category = items[0]?.category ?? g.name.replace(/ - (Products|Prices)$/, '')
      const keywords = keywordsFor(g.theme, category, items, business, words)
      own.push(...keywords.map((k) => k.text))
      const factor = g.theme === 'products' ? 1 : g.theme === 'prices' ? 0.9 : 0.8
      await call('upsert_ad_group', {
        ads: [adFor(g, category, items, business, name, budget, words, brief.catalog_products === 0)],
        final_url: g.final_url,
        keywords,
        language: business.language,
        max_cpc_cents: Math.max(1, Math.round(maxCpc * factor)),
        name: g.name,
        negatives: [],
      })
    }
    const negatives = [...words.negatives, ...business.avoid, ...business.competitors]
      .map(keywordOf)
      .filter((n) => n !== '' && !own.some((k) => ` ${k} `.includes(` ${n} `) || n.split(' ').every((w) => k.split(' ').includes(w))))
    await call('set_campaign_negatives', {negatives: [...new Set(negatives)].map((text) => ({match: 'phrase', text}))})
  } else {
    const short = brief.brand_kit?.business_name ?? fit(name, 25, business.language) ?? shortName(name, 25, business.url, business.language)
    await call('set_assets', {
      asset_groups: campaign.planned.map((g) => {
        const items = g.product_ids.map((id) => byId.get(id)).filter((p): p is Product => p !== undefined)
        return {...assetGroupFor(g, items, business, name, budget, short, campaign.type, words), language: business.language}
      }),
    })
  }
  const check = await call<{errors: unknown[]}>('validate')
  if (check.errors.length > 0) session.text(`validate reports ${check.errors.length} errors the offline planner cannot fix`)
  await call('finish', {summary: campaign.name})
}

/**
 * A product name as a search term, whole or not at all: the title, or its part before a
 * separator ("Moka Pot 6 Cup - Aluminium" -> "moka pot 6 cup"), when it fits Google's 10 words
 * and 80 characters and does not end on a connecting word.
 */
export function productTerm(title: string): null | string {
  const clean = (part: string) => part.toLowerCase().replace(/[’‘]/g, "'").replace(/[^\p{L}\p{N}\s&'.+/-]/gu, ' ').replace(/\.(?=\s|$)/g, '').trim().split(/\s+/).filter(Boolean)
  const fits = (w: string[]) => w.length >= 2 && w.length <= 10 && w.join(' ').length <= 80 && !CONNECTORS.has(w.at(-1) as string)
  for (const part of [title, title.split(/\s[-–—|:]\s|[,(/]/)[0]]) {
    const w = clean(part)
    if (fits(w)) return keywordOf(w.join(' '))
    // Too long: stop before a connecting word, so the term ends where a phrase does
    // ("moedor manual de café com regulagem ..." -> "moedor manual de café").
    for (let i = Math.min(w.length, 11) - 1; i >= 2; i--) if (CONNECTORS.has(w[i]) && fits(w.slice(0, i))) return keywordOf(w.slice(0, i).join(' '))
  }
  return null
}

const CONNECTORS = new Set('and with for in of or to e com para em de da do das dos und mit für von y con en del'.split(' '))

function keywordsFor(theme: string, category: string, items: Product[], business: Business, words: Phrases): Keyword[] {
  const cat = keywordOf(category)
  const both = (text: string, final_url?: string): Keyword[] => [
    {match: 'exact', text, ...(final_url ? {final_url} : {})},
    {match: 'phrase', text, ...(final_url ? {final_url} : {})},
  ]
  let list: Keyword[]
  if (theme === 'brand') list = business.brand_terms.flatMap((t) => both(keywordOf(t)))
  else if (theme === 'products') list = items.flatMap((p) => {
    const term = productTerm(p.title)
    return term === null ? [] : both(term, p.url)
  })
  else if (theme === 'prices') list = (items.length === 0 ? words.servicePrice(cat) : words.price(cat)).map((text) => ({match: 'phrase', text: keywordOf(text)}))
  // A one-word category ("tea") alone is a head term that buys every kind of search: only with intent.
  else list = [...(cat.includes(' ') ? both(cat) : []), ...(items.length === 0 ? words.service(cat) : words.intent(cat)).map((text): Keyword => ({match: 'phrase', text: keywordOf(text)}))]
  const seen = new Set<string>()
  return list.filter((k) => k.text !== '' && !seen.has(`${k.match}:${k.text}`) && seen.add(`${k.match}:${k.text}`))
}

function adFor(g: Planned, category: string, items: Product[], business: Business, name: string, budget: Budget, w: Phrases, noCatalog: boolean) {
  const a = w.ad
  const cat = titleCase(category)
  const min = items.length > 0 ? Math.min(...items.map((p) => p.price_cents)) : null
  const from = min === null ? null : price(min, budget.currency, business.language)
  const productTitles = items.map((p) => p.title)
  const priceLines = from ? [a.from(cat, from), a.pricesFrom(from)] : [a.deals(cat), a.fairPrices]
  // A service business (no catalog): no shop words, no prices.
  const service = g.theme !== 'brand' && items.length === 0 && g.product_ids.length === 0 && business.pages.length > 0
  if (service || (g.theme === 'brand' && business.pages.length > 0 && noCatalog)) {
    const label = g.theme === 'brand' ? (business.pages[0]?.name ?? cat) : cat
    const all = w.serviceAd.headlines(titleCase(label), name)
    // The price ad group leads with the quote and price lines, the others with the service.
    const h = pick(g.theme === 'prices' ? [all[0], ...all.slice(6), all[3]] : g.theme === 'brand' ? all : all.slice(0, 6), 30, 15)
    const d = pick([firstSentence(business.description), ...w.serviceAd.descriptions(label, name)], 90, 4)
    return {descriptions: d, final_url: g.final_url, headlines: h, path1: pathOf(label) || w.paths.shop, path2: g.theme === 'prices' ? w.paths.prices : ''}
  }
  // Each ad group answers its own searches, so each ad leads with its own lines and shares only a
  // few general ones: the engine warns (ad_repeated) when two ads repeat most of their headlines.
  const choose = items.length > 1 ? [a.toChoose(items.length, cat)] : []
  const byTheme: Record<string, string[]> = {
    brand: a.brandHeadlines(name),
    generic: [cat, a.shop(cat), a.at(cat, name), a.buyOnline(cat), ...choose, a.fullRange, a.officialStore(name), a.discover(name), a.order],
    prices: [...priceLines, a.deals(cat), a.fairPrices, a.compareCategory(cat), a.secure],
    products: [...productTitles.slice(0, 10), ...choose, a.shopNow, a.secure],
  }
  const headlines = byTheme[g.theme] ?? byTheme.generic
  const lower = category.toLowerCase()
  const descriptions = [
    firstSentence(business.description),
    g.theme === 'brand' ? a.rangeBrand(name) : items.length > 1 ? a.browse(items.length, lower, name) : a.orderCategory(lower, name),
    from ? a.pricesFromCompare(from) : a.compare,
    g.theme === 'brand' ? a.orderBrand(name) : a.orderCategory(lower, name),
    g.theme === 'brand' ? a.careBrand(name) : a.careCategory(name, lower),
    a.secureOrder,
  ]
  const h = pick(headlines, 30, 15)
  for (const extra of [a.order, a.shopNow, a.fullRange, a.compare]) if (h.length < 3) h.push(...pick([extra], 30, 1).filter((x) => !h.includes(x)))
  const d = pick(descriptions, 90, 4)
  for (const extra of [a.secureOrder, a.orderFrom(name)]) if (d.length < 2 && !d.includes(extra)) d.push(extra)
  const p1 = pathOf(g.theme === 'brand' ? w.paths.shop : category) || w.paths.shop
  return {descriptions: d, final_url: g.final_url, headlines: h, path1: p1, path2: g.theme === 'prices' ? w.paths.prices : g.theme === 'products' ? w.paths.products : ''}
}

function assetGroupFor(g: Planned, items: Product[], business: Business, name: string, budget: Budget, businessName: string, type: CampaignType, w: Phrases) {
  const a = w.ad
  const cat = g.name
  const min = items.length > 0 ? Math.min(...items.map((p) => p.price_cents)) : null
  const from = min === null ? null : price(min, budget.currency, business.language)
  const pmax = type === 'performance_max'
  const headlineMax = pmax ? 30 : 40
  const headlines = pick([a.shop(cat), cat, a.at(cat, name), a.buyOnline(cat), from ? a.from(cat, from) : a.deals(cat), ...items.map((p) => p.title), a.order, a.discover(name)], headlineMax, pmax ? 15 : 5)
  if (pmax && !headlines.some((x) => x.length <= 15)) headlines.unshift(pick([a.shop(cat), a.shopNow], 15, 1)[0])
  const descriptions = pick([a.shopOnline(cat.toLowerCase()), firstSentence(business.description), from ? `${a.fromSentence(cat, from)} ${a.orderFrom(name)}` : a.orderFrom(name), a.orderCategory(cat.toLowerCase(), name), a.secureOrder], 90, 5)
  return {
    business_name: businessName,
    call_to_action: a.cta,
    descriptions,
    final_url: g.final_url,
    headlines: pmax ? headlines.slice(0, 15) : headlines.slice(0, 5),
    long_headlines: pmax ? pick([...a.longHeadlines(cat, name).slice(0, 1), firstSentence(business.description), ...a.longHeadlines(cat, name).slice(1)], 90, 5) : [],
    name: g.name,
    product_ids: items.map((p) => p.id),
    search_themes: pmax ? [keywordOf(cat), ...items.slice(0, 4).map((p) => productTerm(p.title) ?? '')].filter((t) => t.includes(' ') || (t !== '' && t === keywordOf(cat))) : [],
  }
}
