/** Text helpers for the offline planner: keywords and ad copy that respect Google Ads limits. */

import {dashed} from '../../lib/slug.js'
import {isJoiner, sentences} from '../../lib/text.js'

export {displayName, sentences} from '../../lib/text.js'

const FORBIDDEN = /[!@%^*()={};~`<>?\\|,[\]"]/g

/** A search term from a product or category name: lowercase, no forbidden characters, <= 10 words, <= 80 chars. */
export function keywordOf(text: string): string {
  const words = text
    .toLowerCase()
    .replace(/[’‘]/g, "'")
    .replace(FORBIDDEN, ' ')
    .replace(/[^\p{L}\p{N}\s&'.+/-]/gu, ' ')
    .replace(/\.(?=\s|$)/g, '')
    .split(/\s+/)
    .filter(Boolean)
    .slice(0, 10)
  let out = words.join(' ')
  while (out.length > 80) out = out.split(' ').slice(0, -1).join(' ')
  return out
}

/** `coffee beans` -> `Coffee Beans`, keeping capitals already in the text. */
export function titleCase(text: string): string {
  return text.replace(/(^|\s)(\p{Ll}[\p{L}']*)/gu, (whole: string, s: string, w: string, at: number) => (at > 0 && SMALL_WORDS.has(w) ? whole : s + w[0].toUpperCase() + w.slice(1)))
}

/** Words a title keeps in lowercase ("Métodos de Preparo", "Salt and Pepper"). */
const SMALL_WORDS = new Set(['a', 'an', 'and', 'as', 'at', 'da', 'das', 'de', 'del', 'der', 'des', 'die', 'do', 'dos', 'du', 'e', 'el', 'en', 'et', 'für', 'in', 'la', 'le', 'mit', 'of', 'on', 'or', 'the', 'to', 'und', 'von', 'y'])

/** The text if it fits, else cut at a word boundary; null when not even one word fits. */
export function fit(text: string, max: number, language = 'en'): null | string {
  const clean = text.replace(/\s+/g, ' ').replace(/!/g, '').trim()
  if (clean.length <= max) return clean
  const words = clean.split(' ')
  let out = ''
  for (const w of words) {
    if ((out ? `${out} ${w}` : w).length > max) break
    out = out ? `${out} ${w}` : w
  }
  // A cut that ends on a joining mark or on "and", "with", "de" ... (in the copy's language)
  // reads as cut, the copy_truncated rule: drop them.
  const trail = /[\s,;:&/–—-]+$/u
  let kept = out.replace(trail, '').split(' ')
  while (kept.length > 1 && isJoiner(kept.at(-1)!, language)) kept = kept.slice(0, -1)
  out = kept.join(' ').replace(trail, '')
  return out.length >= Math.min(8, max) ? out : null
}

/**
 * Distinct (case-insensitive) texts that fit whole, in order, at most `count`. Texts are never
 * cut: a headline that stops mid-name ("Ethiopia Yirgacheffe Whole") reads worse than none.
 */
export function pick(candidates: string[], max: number, count: number): string[] {
  const out: string[] = []
  const seen = new Set<string>()
  for (const c of candidates) {
    const t = c.replace(/\s+/g, ' ').replace(/!/g, '').trim()
    if (t === '' || t.length > max) continue
    if (/\b[A-Z]{4,}\b/.test(t)) continue
    const key = t.toLowerCase()
    if (seen.has(key)) continue
    seen.add(key)
    out.push(t)
    if (out.length === count) break
  }
  return out
}

/** A URL path segment for path1/path2: letters and digits joined by dashes, <= 15 chars. */
export function pathOf(text: string): string {
  const slug = dashed(text)
  if (slug.length <= 15) return slug
  const parts = slug.split('-')
  let out = parts[0].slice(0, 15)
  for (const p of parts.slice(1)) {
    if (`${out}-${p}`.length > 15) break
    out = `${out}-${p}`
  }
  return out
}

/** A price as the business's language writes it: `$12.90`, `R$ 39,90`, `12,90 €`, `￥1,200`. */
export function price(cents: number, currency: string, language = 'en'): string {
  const whole = cents % 100 === 0
  try {
    return formatter(language, currency, whole)
      .format(cents / 100)
      .replace(/\s/g, ' ')
  } catch {
    return `${whole ? cents / 100 : (cents / 100).toFixed(2)} ${currency}`
  }
}

// Making an Intl.NumberFormat costs far more than formatting with one, and a plan formats
// prices for every ad group.
const formatters = new Map<string, Intl.NumberFormat>()

function formatter(language: string, currency: string, whole: boolean): Intl.NumberFormat {
  const key = `${language}\0${currency}\0${whole}`
  let f = formatters.get(key)
  if (!f) {
    f = new Intl.NumberFormat(language, {currency, maximumFractionDigits: whole ? 0 : undefined, minimumFractionDigits: whole ? 0 : undefined, style: 'currency'})
    formatters.set(key, f)
  }
  return f
}

/** The first sentence of a description, for a description line. */
export function firstSentence(text: string): string {
  return (sentences(text)[0] ?? text.trim()).replace(/!/g, '.')
}

