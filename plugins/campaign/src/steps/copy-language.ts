import type {Workspace} from '../types.js'

/**
 * Words that give away English copy. Left out on purpose: words other languages' ads use as they
 * are ("online", "shop", "site", "store", "deals", "fast", "sale", "compare", "fair", "all", "in").
 */
const ENGLISH = new Set(
  'the and with for your our you we from of to now today free best buy order get new more only just off save shipping delivery quality official discover visit browse secure checkout price prices choose range full call book near quote trusted'.split(' '),
)

/** Scripts whose copy has no Latin words of its own: a text without one of their letters is foreign. */
const OWN_SCRIPT: Record<string, RegExp> = {
  ja: /[\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Han}]/u,
  ko: /\p{Script=Hangul}/u,
  zh: /\p{Script=Han}/u,
}

const OWN = new WeakMap<Workspace['input'], Set<string>>()

export function wordsOf(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^\p{L}\p{N}']+/u)
    .filter(Boolean)
}

/**
 * Words a text of any language may hold without being English: the business's name and brand
 * terms, product titles and categories (a Portuguese shop may sell a "Travel Mug").
 */
export function ownWords(ws: Workspace): Set<string> {
  // Computed once per input: validation runs per campaign and per tool call on large catalogs.
  const cached = OWN.get(ws.input)
  if (cached) return cached
  const b = ws.input.business
  const sources = [b.name, ...b.brand_terms, ...ws.input.catalog.flatMap((p) => [p.title, p.category]), ...b.pages.map((p) => p.name)]
  const out = new Set<string>()
  for (const s of sources) for (const w of wordsOf(s)) out.add(w)
  OWN.set(ws.input, out)
  return out
}

/**
 * The English words that make `text` read as English in a business whose language is
 * `language`, or null when it does not: two such words, or one in every three words ("buy café
 * online"), or one in a text with no letter of the language's own script (Japanese, ...).
 */
export function englishIn(text: string, language: string, own: Set<string>): null | string[] {
  const primary = language.split('-')[0].toLowerCase()
  if (primary === 'en') return null
  const words = wordsOf(text)
  const found = [...new Set(words.filter((w) => ENGLISH.has(w) && !own.has(w)))]
  if (found.length === 0) return null
  const script = OWN_SCRIPT[primary]
  if (found.length >= 2 || found.length * 3 >= words.length || (script !== undefined && !script.test(text))) return found
  return null
}
