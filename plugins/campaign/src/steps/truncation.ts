import {JOINERS} from '../lib/text.js'
import type {Workspace} from '../types.js'

/** A joining mark left at the end when the rest was cut: "Single-", "Grinders &", "Beans,". */
const TRAILING_JOINER = /[-–—&/,]$/

/** Scripts written without spaces between words: their word ends cannot be told from the text. */
const UNSPACED = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]/u

const WORD = /[\p{L}\p{M}\p{N}]+/gu

interface SourceIndex {
  /** After each run of one or two words of the business and catalog text, the words that follow it. */
  next: Map<string, Set<string>>
  /** Every word of the business and catalog text. */
  words: Set<string>
}

const INDEXES = new WeakMap<Workspace['input'], SourceIndex>()

function tokens(text: string): string[] {
  return text.normalize('NFC').toLowerCase().match(WORD) ?? []
}

/** Built once per input: validation runs per campaign and per tool call on large catalogs. */
function sourceIndex(ws: Workspace): SourceIndex {
  const cached = INDEXES.get(ws.input)
  if (cached) return cached
  const b = ws.input.business
  const texts = [b.name, b.description, b.goal, ...b.brand_terms, ...b.pages.map((p) => p.name), ...ws.input.catalog.flatMap((p) => [p.title, p.description, p.category])]
  const index: SourceIndex = {next: new Map(), words: new Set()}
  const follow = (key: string, word: string) => {
    let set = index.next.get(key)
    if (!set) index.next.set(key, (set = new Set()))
    set.add(word)
  }
  for (const text of texts) {
    const t = tokens(text)
    for (const [i, w] of t.entries()) {
      index.words.add(w)
      if (i >= 1) follow(t[i - 1], w)
      if (i >= 2) follow(`${t[i - 2]} ${t[i - 1]}`, w)
    }
  }
  INDEXES.set(ws.input, index)
  return index
}

/**
 * A checker of ad copy cut short, for the texts of one workspace: it answers why a text reads as
 * cut, or null. docs/campaign.md states the rule (`copy_truncated`):
 * 1. the text ends with a joining mark (`-`, `–`, `—`, `&`, `/`, `,`) or with a word of the
 *    business's language that always leads into more words ("and", "with", "de", "und");
 * 2. the text fills its field's limit exactly and its last word is the start of a longer word that
 *    follows the same one or two words in the business or catalog text, while that last word never
 *    appears whole there ("Ethiopia Yirgacheffe Whole Bea" from "... Whole Bean 250g").
 * Scripts without spaces between words (Japanese, Chinese, Thai) only get the first rule.
 */
export function cutCopyChecker(ws: Workspace): (text: string, limit: number, length: number) => null | string {
  const joiners = JOINERS[ws.input.business.language.split('-')[0].toLowerCase()]
  return (text, limit, length) => {
    const t = text.trim()
    if (t === '') return null
    if (TRAILING_JOINER.test(t)) return `it ends with "${t.at(-1)}", as if the rest were cut off`
    if (!/[\p{L}\p{M}\p{N}]$/u.test(t)) return null
    const last = t.split(/\s+/).at(-1)?.toLowerCase() ?? ''
    if (joiners?.has(last)) return `it ends with "${last}", as if the rest were cut off`
    if (length !== limit || UNSPACED.test(t)) return null
    const w = tokens(t)
    if (w.length < 2) return null
    const fragment = w.at(-1) as string
    const index = sourceIndex(ws)
    if (index.words.has(fragment)) return null
    // The longest context the source knows decides: "whole bea" against "whole bean".
    const contexts = w.length >= 3 ? [`${w.at(-3)} ${w.at(-2)}`, w.at(-2) as string] : [w.at(-2) as string]
    for (const key of contexts) {
      const followers = index.next.get(key)
      if (!followers) continue
      const whole = [...followers].find((f) => f.length > fragment.length && f.startsWith(fragment))
      return whole === undefined ? null : `it fills the ${limit}-character limit and ends with "${t.split(/\s+/).at(-1)}", the start of "${whole}" in the business or catalog text: a word cut in two`
    }
    return null
  }
}
