/**
 * FTS5's bm25 for a list of rows near the start of the index, computed here from FTS5's own
 * data, to the bit, without bm25's per-query count of every document of each phrase.
 *
 * Why: bm25 weighs each phrase by the documents holding it and counts them on every query,
 * walking the phrase's whole list (10 ms of CPU for a word in 24% of 1M documents, 20 for a
 * prefix), however few rows it then scores. A search matching more than the window ranks only
 * its first matches (store.ts), whose rows sit at the start of the index: their term counts are
 * read from the start of each phrase's list (FTS5's instance vocabulary), their lengths from
 * `text_docsize`, and the phrase's document count is counted once per state of the index
 * (store.ts keeps it until the next write).
 *
 * What is reproduced, from fts5_aux.c's fts5Bm25Function (k1 = 1.2, b = 0.75, weights 0 for the
 * table column and 1 for the body): per phrase i, idf_i = ln((N - n_i + 0.5) / (n_i + 0.5)),
 * 1e-6 when not above 0, with N FTS5's row total; per row, f_i its instances of phrase i in the
 * body, D its tokens in both columns, avgdl the tokens of both columns over N; the score is
 * the sum over i, in the phrases' order, of idf_i * (f_i * (k1 + 1)) / (f_i + k1 * (1 - b + b *
 * D / avgdl)). The same double operations in the same order give the same double; the
 * logarithm is SQLite's ln(), the C library's log() that FTS5 calls. A test compares every
 * score with bm25's.
 */
import type Database from 'better-sqlite3'

const K1 = 1.2
const B = 0.75

/** What bm25 reads of the whole index: FTS5's row total and the average row length. */
export interface Totals {
  avgdl: number
  rows: number
}

/** SQLite's varint (big-endian 7-bit groups, a 9th byte of 8 bits) at `at`: value and next offset. */
function varint(buf: Buffer, at: number): [number, number] {
  let n = 0
  for (let i = 0; i < 9 && at + i < buf.length; i++) {
    const byte = buf[at + i]
    if (i === 8) return [n * 256 + byte, at + 9]
    n = n * 128 + (byte & 0x7f)
    if ((byte & 0x80) === 0) return [n, at + i + 1]
  }
  return [n, buf.length]
}

/** FTS5's averages record: the row total, then the tokens of each column. */
export function parseTotals(block: Buffer | undefined): Totals {
  if (!block) return {avgdl: 0, rows: 0}
  const [rows, start] = varint(block, 0)
  let at = start
  let tokens = 0
  while (at < block.length) {
    const [n, next] = varint(block, at)
    tokens += n
    at = next
  }
  return {avgdl: tokens / rows, rows}
}

/** The sum of the varints written in hex (`hex(sz)` of text_docsize: one per column). */
function hexVarintsSum(hex: string): number {
  let sum = 0
  let n = 0
  let bytes = 0
  for (let i = 0; i < hex.length; i += 2) {
    const byte = Number.parseInt(hex.slice(i, i + 2), 16)
    bytes++
    if (bytes === 9) {
      sum += n * 256 + byte
      n = 0
      bytes = 0
      continue
    }
    n = n * 128 + (byte & 0x7f)
    if ((byte & 0x80) === 0) {
      sum += n
      n = 0
      bytes = 0
    }
  }
  return sum
}

/** Instances read at first per term of a prefix (then four times more until past the last row). */
const FIRST_READ = 256

export class Bm25Scorer {
  private readonly st: {
    idf: Database.Statement<[number], null | number>
    sizes: Database.Statement<[string], null | string>
    instances: Database.Statement<[string, number], null | string>
    termFrom: Database.Statement<[string], string | undefined>
  }

  /** `vocab`: an fts5vocab table of type instance over the index (store.ts creates it). */
  constructor(db: Database.Database, vocab: string) {
    // Lists are read as one string per statement (group_concat): a row per instance or per
    // document through the driver cost 3-4 times as much.
    this.st = {
      idf: db.prepare<[number], null | number>('SELECT ln(?)').pluck(),
      instances: db.prepare<[string, number], null | string>(`SELECT group_concat(doc, ',') FROM (SELECT doc FROM ${vocab} WHERE term = ? AND col = 'body' LIMIT ?)`).pluck(),
      // The listed rows only (JSON): a range would read every row between them.
      sizes: db.prepare<[string], null | string>(`SELECT group_concat(id || ',' || hex(sz), ',') FROM text_docsize WHERE id IN (SELECT value FROM json_each(?))`).pluck(),
      // One seek in the term list: the instance table reads a term's documents only as it is walked.
      termFrom: db.prepare<[string], string | undefined>(`SELECT term FROM ${vocab} WHERE term >= ? LIMIT 1`).pluck(),
    }
  }

  /** The first indexed term at or after `key` (either column), by one seek in the term list. */
  firstTermFrom(key: string): string | undefined {
    return this.st.termFrom.get(key)
  }

  /** bm25's weight of a phrase in `n` of `rows` rows. */
  idf(n: number, rows: number): number {
    const idf = this.st.idf.get((rows - n + 0.5) / (n + 0.5))
    return idf === null || idf === undefined || idf <= 0 ? 1e-6 : idf
  }

  /**
   * The scores of `rows` (ascending rowids) for `phrases` (`"w"` or `"w"*`, body phrases as
   * match.ts writes them), weighed by `idf` (one per phrase), as bm25 would give them negated
   * (higher is better). `expected`: per phrase, about how many of its instances lie up to the
   * last row (a first read; more is read when short). Walks each list up to the last row only.
   */
  score(rows: number[], phrases: string[], idf: number[], totals: Totals, expected: number[]): Float64Array {
    const at = new Map<number, number>()
    for (const [i, r] of rows.entries()) at.set(r, i)
    const last = rows.at(-1) ?? 0
    // A phrase written twice (store.ts writes a prefix no longer term extends as its word) is walked once.
    const walked = new Map<string, Float64Array>()
    for (const phrase of phrases) if (!walked.has(phrase)) walked.set(phrase, new Float64Array(rows.length))
    const freq = phrases.map((phrase) => walked.get(phrase)!)
    for (const [phrase, f] of walked) {
      const prefix = phrase.endsWith('*')
      const word = phrase.slice(1, prefix ? -2 : -1)
      const first = prefix ? FIRST_READ : Math.max(FIRST_READ, expected[phrases.indexOf(phrase)])
      if (!prefix) {
        this.walk(word, last, first, at, f)
        continue
      }
      // Every term starting with the word, each up to the last row.
      for (let term = this.firstTermFrom(word); term?.startsWith(word); term = this.firstTermFrom(`${term}\u0001`)) {
        this.walk(term, last, first, at, f)
      }
    }
    const length = new Float64Array(rows.length)
    const sizes = (this.st.sizes.get(JSON.stringify(rows)) ?? '').split(',')
    for (let k = 0; k + 1 < sizes.length; k += 2) {
      const i = at.get(Number(sizes[k]))
      if (i !== undefined) length[i] = hexVarintsSum(sizes[k + 1])
    }
    const scores = new Float64Array(rows.length)
    for (let i = 0; i < rows.length; i++) {
      let score = 0
      const D = length[i]
      for (let p = 0; p < phrases.length; p++) {
        const fi = freq[p][i]
        score += idf[p] * ((fi * (K1 + 1)) / (fi + K1 * (1 - B + (B * D) / totals.avgdl)))
      }
      scores[i] = score
    }
    return scores
  }

  /**
   * Adds to `f` the body instances of `term` in the rows of `at`, reading its list from the
   * start until past `last`: `limit` instances first, four times as many again while short.
   */
  private walk(term: string, last: number, limit: number, at: Map<number, number>, f: Float64Array): void {
    for (;;) {
      const list = this.st.instances.get(term, limit)
      const docs = list ? list.split(',') : []
      if (docs.length === limit && Number(docs[docs.length - 1]) <= last) {
        limit *= 4
        continue
      }
      for (const d of docs) {
        const doc = Number(d)
        if (doc > last) break
        const i = at.get(doc)
        if (i !== undefined) f[i]++
      }
      return
    }
  }
}
