/** Sentence and name handling shared by the input reader and the offline planner. */
import {domainToUnicode} from 'node:url'

// Words that end with a dot without ending the sentence ("Acme Co. roasts", "e.g. a grinder").
const ABBREVIATIONS = new Set(
  'co corp inc ltd ltda llc plc bros dr mr mrs ms st sr sra jr no nr vs etc approx ca e.g i.e z.b u.a bzw usw ggf inkl evtl p.ex s.a s.l av dept est fig min max'.split(' '),
)

/**
 * Splits text into sentences: a sentence ends at `.`, `!`, `?` (or `。！？`) followed by a space or
 * the end, except after a known abbreviation, a single letter ("J. Smith") or a number ("Nr. 5").
 */
export function sentences(text: string): string[] {
  const out: string[] = []
  let start = 0
  const t = text.replace(/\s+/g, ' ').trim()
  for (let i = 0; i < t.length; i++) {
    const c = t[i]
    if (c === '。' || c === '！' || c === '？') {
      out.push(t.slice(start, i + 1).trim())
      start = i + 1
      continue
    }
    if (c !== '.' && c !== '!' && c !== '?') continue
    if (i + 1 < t.length && t[i + 1] !== ' ') continue
    if (c === '.') {
      const word = /(\S+)$/.exec(t.slice(start, i))?.[1]?.toLowerCase().replace(/^[("'¿¡]+/, '') ?? ''
      if (ABBREVIATIONS.has(word) || /^\p{L}$/u.test(word) || /^(\p{L}\.)+\p{L}$/u.test(word)) continue
      // "R$ 150." ends a sentence, "Nr. 5" does not: only a following lowercase word continues it.
      if (/^ \p{Ll}/u.test(t.slice(i + 1, i + 3)) && /\p{L}$/u.test(word)) continue
    }
    out.push(t.slice(start, i + 1).trim())
    start = i + 1
  }
  if (start < t.length && t.slice(start).trim() !== '') out.push(t.slice(start).trim())
  return out
}

const LEGAL = /[\s,]+(co|corp|inc|ltd|ltda|llc|plc|gmbh|ag|sa|s\.a|s\.l|sl|srl|bv|kg|me|eireli|k\.k|株式会社)\.?$/iu

/**
 * The name people would type and read in an ad: emoji and symbols out, a tagline after a dash,
 * bar or comma dropped, legal forms (Co., Inc., Ltda, GmbH) dropped, shouting capitals turned
 * into title case. `ÇAFÉ DO BRASIL & CO. ☕ LTDA — DESDE 1952` becomes `Çafé do Brasil`.
 */
export function displayName(name: string): string {
  let n = name
    .replace(/\p{Extended_Pictographic}|\uFE0F|\u200D/gu, ' ')
    .replace(/[!?*™®©]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
  n = n.split(/\s[—–|-]\s|\s[|]|,\s/)[0].trim()
  for (let prev = ''; prev !== n; ) {
    prev = n
    n = n.replace(LEGAL, '').replace(/[\s&,]+$/u, '').trim()
  }
  const letters = n.replace(/[^\p{L}]/gu, '')
  if (letters.length >= 4 && letters === letters.toUpperCase() && letters !== letters.toLowerCase()) {
    const small = new Set(['a', 'as', 'and', 'da', 'das', 'de', 'del', 'der', 'des', 'di', 'do', 'dos', 'du', 'e', 'el', 'en', 'et', 'la', 'le', 'les', 'of', 'the', 'und', 'van', 'von', 'y'])
    n = n
      .toLowerCase()
      .split(' ')
      .map((w, i) => (i > 0 && small.has(w) ? w : w.replace(/^(\P{L}*)(\p{L})/u, (_, pre: string, c: string) => pre + c.toUpperCase())))
      .join(' ')
  }
  return n === '' ? name.trim() : n
}

/**
 * A name that fits `max` characters without cutting a word: its leading words (a hyphen inside a
 * compound such as "Bo-Kaap" is a boundary too), never ending on a joining word of `language`
 * ("Kaffee und" is "Kaffee"); when even its first word is longer, the site's name from `url`
 * ("acme-coffee.example" gives "Acme Coffee", "bücher.de" — xn--bcher-kva — gives "Bücher"). Only
 * a name with neither gets cut, since the field has a hard limit.
 */
export function shortName(name: string, max: number, url: string, language = ''): string {
  const clean = name.replace(/\s+/g, ' ').trim()
  if (clean.length <= max) return clean
  let best = ''
  for (const m of clean.matchAll(/[\s-]/g)) {
    let head = clean.slice(0, m.index).replace(/[\s,;:&/–—-]+$/u, '')
    if (head.length > max) break
    for (let last = /\s(\S+)$/u.exec(head); last && isJoiner(last[1], language); last = /\s(\S+)$/u.exec(head)) {
      head = head.slice(0, last.index).replace(/[\s,;:&/–—-]+$/u, '')
    }
    best = head
  }
  if (best !== '') return best
  let site = ''
  try {
    // A host name arrives in punycode; the brand is what people read.
    site = domainToUnicode(new URL(url).hostname).replace(/^www\./, '').split('.')[0]
  } catch {
    // An unparsable URL has no site name to offer.
  }
  const fromSite = site
    .split(/[-_]+/)
    .filter(Boolean)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join(' ')
  if (fromSite !== '' && fromSite.length <= max) return fromSite
  return clean.slice(0, max).trim()
}

/**
 * Words that never end a headline or description in each language: conjunctions, articles and
 * prepositions that always lead into more words. Single letters ("e", "y", "a") are left out:
 * "Vitamin E" and "Plan B" end copy on their own.
 */
export const JOINERS: Record<string, Set<string>> = {
  de: new Set('und oder mit für von vom zum zur der die das dem des'.split(' ')),
  en: new Set('and or the of with'.split(' ')),
  es: new Set('de del la las los el con para por'.split(' ')),
  fr: new Set('et ou de du des le la les avec pour'.split(' ')),
  it: new Set('di del della il lo la le gli con per'.split(' ')),
  nl: new Set('en of de het met voor van'.split(' ')),
  pt: new Set('de da das do dos com para por sem'.split(' ')),
}

/** Whether a word always leads into more words in `language` (BCP 47), so copy must not end on it. */
export function isJoiner(word: string, language: string): boolean {
  return JOINERS[language.split('-')[0].toLowerCase()]?.has(word.toLowerCase()) ?? false
}
