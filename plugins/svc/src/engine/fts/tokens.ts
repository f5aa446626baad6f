/**
 * The body terms of a text as the index's tokenizer makes them, for the search caches kept across
 * this connection's writes (fts/row-log.ts): a written row's new instances of each kept phrase.
 *
 * Why FTS5 itself, on an in-memory table of its own, rather than tokenizing here: the counts kept
 * must equal what a read of the index would give, to the instance, and only the same tokenizer
 * with the same options is sure to split, fold and keep exactly the same terms. Except for text
 * all in ASCII, where unicode61's rules are three lines (asciiTerms) and a test compares them
 * with FTS5's for every ASCII character: FTS5's way cost 60-100 us a document (a transaction, a
 * segment flushed and read back), a fifth more CPU per indexed write at 100k-1M documents.
 */
import Database from 'better-sqlite3'

import {lowerBound} from '../sorted.js'

/** The tokenizer of the index's `text` table (fts/store.ts), shared so the two cannot differ. */
export const FTS_TOKENIZE = 'unicode61 remove_diacritics 0'

/** A row's body terms: each term and its instances. */
export type Terms = Map<string, number>

export class TextTerms {
  private db?: Database.Database
  private st?: {
    clear: Database.Statement<[]>
    insert: Database.Statement<[number, string]>
    read: Database.Statement<[], {doc: number; n: number; term: string}>
  }

  /** The terms of each of `texts`, in their order. */
  of(texts: string[]): Terms[] {
    const out = texts.map((text) => asciiTerms(text))
    const rest = out.flatMap((terms, i) => (terms === undefined ? [i] : []))
    if (rest.length > 0) for (const [k, terms] of this.tokenized(rest.map((i) => texts[i])).entries()) out[rest[k]] = terms
    return out as Terms[]
  }

  /** The terms of each of `texts` from FTS5's own tokenizer (of uses it for text not all in ASCII). */
  tokenized(texts: string[]): Terms[] {
    const st = this.open()
    const out = texts.map((): Terms => new Map())
    this.db!.transaction(() => {
      for (const [i, text] of texts.entries()) st.insert.run(i + 1, text)
      for (const {doc, n, term} of st.read.iterate()) out[doc - 1].set(term, n)
      st.clear.run()
    })()
    return out
  }

  close(): void {
    this.db?.close()
    this.db = undefined
    this.st = undefined
  }

  private open(): NonNullable<TextTerms['st']> {
    if (this.st) return this.st
    const db = new Database(':memory:')
    db.exec(`
      CREATE VIRTUAL TABLE t USING fts5(body, content='', contentless_delete=1, tokenize='${FTS_TOKENIZE}');
      CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance');
    `)
    this.db = db
    this.st = {
      clear: db.prepare(`INSERT INTO t(t) VALUES ('delete-all')`),
      insert: db.prepare('INSERT INTO t(rowid, body) VALUES (?, ?)'),
      read: db.prepare('SELECT doc, term, count(*) AS n FROM v GROUP BY doc, term'),
    }
    return this.st
  }
}

/**
 * Longest run of letters and digits asciiTerms reads: FTS5 cuts a term at 32,768 bytes, and a
 * longer run is rare enough to leave to FTS5 itself.
 */
const ASCII_TERM_MAX = 1024

/**
 * The terms of a text all in ASCII as unicode61 makes them: in ASCII its token characters are the
 * letters and digits (Unicode's L* and N*), every other character separates, and a term is folded
 * to lower case (remove_diacritics changes no ASCII letter). Undefined for any other text.
 */
export function asciiTerms(text: string): Terms | undefined {
  const terms: Terms = new Map()
  let start = -1
  // Whether the run holds a capital: only then is it folded (a new string per term otherwise).
  let upper = false
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 32
    if (c > 127) return undefined
    if ((c >= 48 && c <= 57) || (c >= 97 && c <= 122)) {
      if (start < 0) start = i
      continue
    }
    if (c >= 65 && c <= 90) {
      if (start < 0) start = i
      upper = true
      continue
    }
    if (start < 0) continue
    if (i - start > ASCII_TERM_MAX) return undefined
    const term = upper ? text.slice(start, i).toLowerCase() : text.slice(start, i)
    terms.set(term, (terms.get(term) ?? 0) + 1)
    start = -1
    upper = false
  }
  return terms
}

/**
 * The instances of a body phrase (`"w"` or `"w"*`, as match.ts writes them) among a row's terms,
 * the phrase read once for many rows (patching a kept count applies thousands of rows per phrase).
 */
export function instancesOf(phrase: string): (terms: null | Terms) => number {
  const prefix = phrase.endsWith('*')
  const word = phrase.slice(1, prefix ? -2 : -1)
  if (!prefix) return (terms) => (terms === null ? 0 : terms.get(word) ?? 0)
  return (terms) => {
    if (terms === null) return 0
    // The terms starting with the word are one run of the sorted terms: a binary search finds it
    // (a walk of every term, 23 a row in the benches' documents, was 0.8 us a row and phrase).
    const keys = sortedTerms(terms)
    let n = 0
    for (let i = lowerBound(keys, word); i < keys.length && keys[i].startsWith(word); i++) n += terms.get(keys[i])!
    return n
  }
}

/** Each row's terms sorted, made once for every prefix phrase patched with that row. */
const sorted = new WeakMap<Terms, string[]>()

function sortedTerms(terms: Terms): string[] {
  let keys = sorted.get(terms)
  if (keys === undefined) {
    keys = [...terms.keys()].sort()
    sorted.set(terms, keys)
  }
  return keys
}

/**
 * The instances of each of `phrases` (`"w"` or `"w"*`) in each of `rows` (terms; null: removed),
 * as instancesOf gives them (out[p][r]), in one pass over each row's terms, the phrases a
 * distinct term counts for found once. Patching every kept count at the log's
 * end (48 phrases at 1M documents, half of them prefixes of words common enough to be most of a
 * row's terms) cost 0.5 us a row and prefix phrase one phrase at a time.
 */
export function instancesByRow(phrases: string[], rows: Array<null | Terms>): Int32Array[] {
  const out = phrases.map(() => new Int32Array(rows.length))
  const exact = new Map<string, number[]>()
  const prefixes = new Map<string, number[]>()
  const lengths = new Set<number>()
  for (const [p, phrase] of phrases.entries()) {
    const prefix = phrase.endsWith('*')
    const word = phrase.slice(1, prefix ? -2 : -1)
    const into = prefix ? prefixes : exact
    const at = into.get(word)
    if (at === undefined) into.set(word, [p])
    else at.push(p)
    if (prefix) lengths.add(word.length)
  }
  const lens = [...lengths]
  // The phrases each distinct term counts for, found once: the rows repeat a few thousand terms.
  const found = new Map<string, number[]>()
  const phrasesOf = (term: string): number[] => {
    const of = [...(exact.get(term) ?? [])]
    for (const n of lens) if (term.length >= n) of.push(...(prefixes.get(term.slice(0, n)) ?? []))
    return of
  }
  for (const [r, terms] of rows.entries()) {
    if (terms === null) continue
    for (const [term, k] of terms) {
      let of = found.get(term)
      if (of === undefined) {
        of = phrasesOf(term)
        found.set(term, of)
      }
      for (const p of of) out[p][r] += k
    }
  }
  return out
}
