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

import type {RowLengths} from './lengths.js'
import type {RowLog} from './row-log.js'
import {instancesByRow, instancesOf, type Terms} from './tokens.js'

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

/** Words that a table's token (`t` and lowercase hex) could equal or start with. */
export const TABLE_TOKENISH = /^t[\da-f]*$/

/** The integers of a comma-separated list (group_concat's), without a string per number. */
function parseIntegers(list: string): Int32Array {
  let count = list.length === 0 ? 0 : 1
  for (let i = 0; i < list.length; i++) if (list.charCodeAt(i) === 44) count++
  const out = new Int32Array(count)
  let n = 0
  let k = 0
  for (let i = 0; i < list.length; i++) {
    const c = list.charCodeAt(i)
    if (c === 44) {
      out[k++] = n
      n = 0
    } else n = n * 10 + (c - 48)
  }
  if (count > 0) out[k] = n
  return out
}

/** Instances read at first per term of a prefix (then four times more until past the last row). */
const FIRST_READ = 256

/**
 * Rowids of whole lists kept between searches in one state of the index (see instancesOf): 4
 * bytes each, 16 MB at most.
 */
const KEPT_INSTANCES = 4 << 20

/**
 * Per-row instance counts of common phrases (count-worker.ts), one byte per rowid: 64 MB in all at
 * most (64 phrases at 1M documents), oldest dropped first.
 */
const COUNTED_BYTES = 64 << 20

/** Phrases waiting for their counts, at most (the rest are asked again by later searches). */
const COUNT_QUEUE = 16

/** A phrase's body instances per row (rows past the array's end hold none) and its documents. */
export interface RowCounts {
  docs: number
  f: Uint8Array
}

/** Something kept of the index and the generation (fts/row-log.ts) it describes. */
interface AtGen<T> {
  gen: number
  value: T
}

export class Bm25Scorer {
  /** Scratch arrays by rowid for scoreWhole: each row's place, and the last phrase that counted a document. */
  private slot = new Int32Array(0)
  private mark = new Int32Array(0)
  private stamp = 0
  /**
   * Whole lists read by scoreWhole, by phrase, until another connection writes the index
   * (forget): the words a search combines with rarer ones are the common ones, searched again
   * and again, and reading such a list costs about 0.2 us an instance (3 ms for a word in 13% of
   * 100k documents) where a kept one costs a pass over an array. Also the rows of a set of
   * phrases (matchesOf, its key a newline and the phrases: no phrase starts with one). Oldest
   * first. Each is brought up to date with this connection's writes when next used (current).
   */
  private readonly kept = new Map<string, AtGen<Int32Array>>()
  private keptInstances = 0
  /**
   * Per-row counts of common phrases, until another connection writes the index (forget), brought
   * up to date with this connection's writes when next used (countsOf): built in a worker
   * thread (count-worker.ts) for phrases a search left to bm25, whose count of every document of
   * each phrase (37 ms for `"kalo"*` at 1M documents) is paid again by every search naming it.
   * With them a search of few rows reads each row's count, and the phrase's documents, from an
   * array. null: the phrase cannot be kept so (a row holding it 255 times or more, or a term of
   * it with too many instances: count-worker.ts).
   */
  private readonly counts = new Map<string, AtGen<null | RowCounts>>()
  private countedBytes = 0
  private readonly countQueue: string[] = []
  private readonly st: {
    idf: Database.Statement<[number], null | number>
    instances: Database.Statement<[string, number], null | string>
    whole: Database.Statement<[string], null | string>
    wholeAny: Database.Statement<[string], null | string>
    wholePrefix: Database.Statement<[string, string], null | string>
    wholePrefixAny: Database.Statement<[string, string], null | string>
    termFrom: Database.Statement<[string], string | undefined>
  }

  /** `vocab`: an fts5vocab table of type instance over the index (store.ts creates it). */
  constructor(db: Database.Database, vocab: string, private readonly lengths: RowLengths, private readonly log: RowLog) {
    // Lists are read as one string per statement (group_concat): a row per instance or per
    // document through the driver cost 3-4 times as much.
    this.st = {
      idf: db.prepare<[number], null | number>('SELECT ln(?)').pluck(),
      instances: db.prepare<[string, number], null | string>(`SELECT group_concat(doc, ',') FROM (SELECT doc FROM ${vocab} WHERE term = ? AND col = 'body' LIMIT ?)`).pluck(),
      whole: db.prepare<[string], null | string>(`SELECT group_concat(doc, ',') FROM ${vocab} WHERE term = ? AND col = 'body'`).pluck(),
      // Every term starting with the word: U+10FFFF is no token character of unicode61 (a
      // noncharacter), so every such term sorts before the word followed by it, and every other
      // term at or after the word sorts after it.
      wholePrefix: db.prepare<[string, string], null | string>(`SELECT group_concat(doc, ',') FROM ${vocab} WHERE term >= ? AND term <= ? || char(1114111) AND col = 'body'`).pluck(),
      wholeAny: db.prepare<[string], null | string>(`SELECT group_concat(doc, ',') FROM ${vocab} WHERE term = ?`).pluck(),
      wholePrefixAny: db.prepare<[string, string], null | string>(`SELECT group_concat(doc, ',') FROM ${vocab} WHERE term >= ? AND term <= ? || char(1114111)`).pluck(),
      // One seek in the term list: the instance table reads a term's documents only as it is walked.
      termFrom: db.prepare<[string], string | undefined>(`SELECT term FROM ${vocab} WHERE term >= ? LIMIT 1`).pluck(),
    }
  }

  /** Another connection wrote the index: the lists kept describe another state of it. */
  forget(): void {
    this.kept.clear()
    this.keptInstances = 0
    this.counts.clear()
    this.countedBytes = 0
    this.countQueue.length = 0
  }

  /** Whether `phrase`'s per-row counts are kept (see counts): scoring a few rows with it then reads no list. */
  counted(phrase: string): boolean {
    return this.countedDocs(phrase) !== undefined
  }

  /** Whether `phrase` was counted since another connection last wrote (its counts kept, or found not keepable). */
  tried(phrase: string): boolean {
    return this.counts.has(phrase)
  }

  /** The documents holding `phrase` in the body, when its per-row counts are kept. */
  countedDocs(phrase: string): number | undefined {
    return this.countsOf(phrase)?.docs
  }

  /** Asks for `phrase`'s per-row counts (a search left it to bm25): see nextCount. */
  wantCounts(phrase: string): void {
    if (this.tried(phrase) || this.countQueue.includes(phrase)) return
    if (this.countQueue.length < COUNT_QUEUE) this.countQueue.push(phrase)
  }

  /** Whether phrases wait for their counts. */
  get countsPending(): boolean {
    return this.countQueue.length > 0
  }

  /** The next phrase whose counts were asked for (taken off the queue: keepCounts answers it). */
  nextCount(): string | undefined {
    return this.countQueue.shift()
  }

  /**
   * Keeps `phrase`'s per-row counts, read (count-worker.ts) from the index at generation `gen` of
   * this connection's writes (the caller checks that no other connection wrote since: store.ts
   * countsDone); null: left to bm25. The oldest counts are dropped past COUNTED_BYTES.
   */
  keepCounts(phrase: string, counts: null | RowCounts, gen = this.log.gen): void {
    this.dropCounts(phrase)
    const size = counts?.f.length ?? 0
    if (size > COUNTED_BYTES) return
    for (const name of this.counts.keys()) {
      if (this.countedBytes + size <= COUNTED_BYTES) break
      this.dropCounts(name)
    }
    this.counts.set(phrase, {gen, value: counts})
    this.countedBytes += size
  }

  /** Whether the whole list of `phrase` is kept (scoring with it then costs no read). */
  keeps(phrase: string): boolean {
    return this.current(phrase) !== undefined
  }

  /** Whether anything is kept that this connection's writes must be applied to (fts/row-log.ts). */
  get keepsAny(): boolean {
    return this.kept.size > 0 || this.counts.size > 0
  }

  /** Brings everything kept up to date with this connection's writes (before the log starts again). */
  catchUp(): void {
    for (const key of [...this.kept.keys()]) this.current(key)
    this.catchUpCounts()
  }

  /**
   * Brings the kept per-row counts up to date with this connection's writes. The counts kept at
   * one generation (usually all: the last catch-up brought them there) are patched together,
   * each row's terms read once for all of them (instancesByRow).
   */
  catchUpCounts(): void {
    const byGen = new Map<number, string[]>()
    for (const [phrase, kept] of this.counts) {
      if (kept.value === null || kept.gen === this.log.gen) continue
      const at = byGen.get(kept.gen)
      if (at === undefined) byGen.set(kept.gen, [phrase])
      else at.push(phrase)
    }
    for (const [gen, phrases] of byGen) {
      const changes = this.log.since(gen)
      const instances = changes && instancesByRow(phrases, changes.map(([, terms]) => terms))
      for (const [p, phrase] of phrases.entries()) {
        const kept = this.counts.get(phrase)!
        const counts = kept.value!
        const size = counts.f.length
        if (changes === undefined || !patchCounts(counts, changes, (k) => instances![p][k])) {
          this.dropCounts(phrase)
          continue
        }
        this.countedBytes += counts.f.length - size
        kept.gen = this.log.gen
      }
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
    return this.formula(freq, this.lengths.of(rows), idf, totals)
  }

  /**
   * The scores of every row of a search (ascending), as bm25 gives them negated, from each
   * phrase's whole list: one walk per distinct phrase gives its instances per row and its
   * document count, so nothing is counted twice. `within`: the search's rows when they are not
   * simply the documents of any phrase (the store found them with words that score nothing);
   * else the rows are those documents. Undefined when the rows found are not `expected` of them,
   * or a row of `within` holds none of the phrases (another answer than the probe's: the caller
   * ranks by bm25).
   */
  scoreWhole(phrases: string[], totals: Totals, expected: number, within?: number[]): undefined | {rows: Int32Array; scores: Float64Array} {
    const lists = new Map<string, Int32Array | RowCounts>()
    // Over listed rows, a phrase whose per-row counts are kept is read from them (no list).
    for (const phrase of phrases) if (!lists.has(phrase)) lists.set(phrase, (within && this.countsOf(phrase)) || this.instancesOf(phrase))
    let top = within?.at(-1) ?? 0
    for (const docs of lists.values()) if (docs instanceof Int32Array) for (let j = 0; j < docs.length; j++) if (docs[j] > top) top = docs[j]
    this.reserve(top)
    // Each row's place in `rows`, plus one, by rowid (0: not a row); cleared after the search.
    const {mark, slot} = this
    let rows: Int32Array
    if (within) rows = Int32Array.from(within)
    else {
      const seen: number[] = []
      for (const docs of lists.values()) {
        if (!(docs instanceof Int32Array)) continue
        for (let j = 0; j < docs.length; j++) {
          const d = docs[j]
          if (slot[d] === 0) {
            slot[d] = -1
            seen.push(d)
          }
        }
      }
      rows = Int32Array.from(seen).sort()
    }
    try {
      if (rows.length !== expected) return undefined
      for (let i = 0; i < rows.length; i++) slot[rows[i]] = i + 1
      const freq: Float64Array[] = []
      const idf: number[] = []
      let held = within ? new Uint8Array(rows.length) : undefined
      for (const phrase of phrases) {
        const docs = lists.get(phrase)!
        // A phrase written twice (store.ts writes a prefix no longer term extends as its word) is counted once.
        if (freq.length > 0 && lists.get(phrases[freq.length - 1]) === docs) {
          freq.push(freq.at(-1)!)
          idf.push(idf.at(-1)!)
          continue
        }
        const f = new Float64Array(rows.length)
        let n = 0
        if (docs instanceof Int32Array) {
          // Documents counted by a stamp per phrase: a prefix's terms may repeat a document.
          const stamp = this.nextStamp()
          for (let j = 0; j < docs.length; j++) {
            const d = docs[j]
            if (mark[d] !== stamp) {
              mark[d] = stamp
              n++
            }
            if (slot[d] > 0) f[slot[d] - 1]++
          }
        } else {
          // Per-row counts kept (count-worker.ts): the phrase's documents and each row's instances.
          n = docs.docs
          for (let i = 0; i < rows.length; i++) f[i] = rows[i] < docs.f.length ? docs.f[rows[i]] : 0
        }
        if (held) for (let i = 0; i < rows.length; i++) if (f[i] > 0) held[i] = 1
        freq.push(f)
        idf.push(this.idf(n, totals.rows))
      }
      if (held?.includes(0)) return undefined
      held = undefined
      return {rows, scores: this.formula(freq, this.lengths.of(rows), idf, totals)}
    } finally {
      for (let i = 0; i < rows.length; i++) slot[rows[i]] = 0
    }
  }

  /**
   * The rows holding any of `phrases` (their whole lists, see instancesOf), ascending; kept with
   * the lists (a search of one word repeats it with each page asked).
   */
  matchesOf(phrases: string[]): Int32Array {
    const distinct = [...new Set(phrases)]
    const key = `\n${distinct.join('\n')}`
    const known = this.current(key)
    if (known) return known
    const lists = distinct.map((phrase) => this.instancesOf(phrase))
    let top = 0
    for (const docs of lists) for (let j = 0; j < docs.length; j++) if (docs[j] > top) top = docs[j]
    this.reserve(top)
    const stamp = this.nextStamp()
    const {mark} = this
    let size = 0
    for (const docs of lists) size += docs.length
    const seen = new Int32Array(size)
    let k = 0
    for (const docs of lists) {
      for (let j = 0; j < docs.length; j++) {
        const d = docs[j]
        if (mark[d] !== stamp) {
          mark[d] = stamp
          seen[k++] = d
        }
      }
    }
    // One word's list is ascending already (its instances by row); a prefix's terms follow one another.
    const matches = seen.slice(0, k)
    if (lists.length > 1 || phrases.some((phrase) => phrase.endsWith('*'))) matches.sort()
    this.keep(key, matches)
    return matches
  }

  /** The scratch arrays of scoreWhole, kept between searches: at least `top` + 1 rowids. */
  private reserve(top: number): void {
    if (this.slot.length > top) return
    const size = Math.max(top + 1, 2 * this.slot.length)
    this.slot = new Int32Array(size)
    const mark = new Int32Array(size)
    mark.set(this.mark)
    this.mark = mark
  }

  private nextStamp(): number {
    if (this.stamp === 0x7f_ff_ff_ff) {
      this.mark.fill(0)
      this.stamp = 0
    }
    return ++this.stamp
  }

  /**
   * The rowid of each body instance of a phrase (`"w"` or `"w"*`) over its whole list: ascending
   * per term, a prefix's terms one after another.
   */
  private instancesOf(phrase: string): Int32Array {
    const known = this.current(phrase)
    if (known) return known
    const list = this.readInstances(phrase)
    this.keep(phrase, list)
    return list
  }

  /** Keeps `list` under `key` (a phrase, or matchesOf's key: a newline and its phrases), the oldest dropped past KEPT_INSTANCES. */
  private keep(key: string, list: Int32Array): void {
    if (list.length > KEPT_INSTANCES) return
    for (const [old, docs] of this.kept) {
      if (this.keptInstances + list.length <= KEPT_INSTANCES) break
      this.kept.delete(old)
      this.keptInstances -= docs.value.length
    }
    this.kept.set(key, {gen: this.log.gen, value: list})
    this.keptInstances += list.length
  }

  /**
   * The list kept under `key`, brought up to date with the rows this connection wrote since it
   * was read (their instances removed, their last texts' added); undefined when none is kept, or
   * when the log no longer reaches back to it (then dropped).
   */
  private current(key: string): Int32Array | undefined {
    const kept = this.kept.get(key)
    if (kept === undefined || kept.gen === this.log.gen) return kept?.value
    const changes = this.log.since(kept.gen)
    this.keptInstances -= kept.value.length
    if (changes === undefined) {
      this.kept.delete(key)
      return undefined
    }
    kept.value = key.startsWith('\n') ? this.patchRows(kept.value, key.slice(1).split('\n'), changes) : this.patchInstances(kept.value, key, changes)
    kept.gen = this.log.gen
    this.keptInstances += kept.value.length
    return kept.value
  }

  /**
   * The per-row counts kept for `phrase`, brought up to date with the rows this connection wrote
   * since they were read: each such row's count becomes its instances in its last text, and the
   * document count follows. Undefined when none are kept (or null: left to bm25), when the log no
   * longer reaches back to them, or when a row now holds the phrase 255 times or more (dropped).
   */
  private countsOf(phrase: string): RowCounts | undefined {
    const kept = this.counts.get(phrase)
    if (kept === undefined || kept.value === null) return undefined
    if (kept.gen === this.log.gen) return kept.value
    const changes = this.log.since(kept.gen)
    const counts = kept.value
    const size = counts.f.length
    const instances = instancesOf(phrase)
    if (changes === undefined || !patchCounts(counts, changes, (k) => instances(changes[k][1]))) {
      this.dropCounts(phrase)
      return undefined
    }
    this.countedBytes += counts.f.length - size
    kept.gen = this.log.gen
    return counts
  }

  private dropCounts(phrase: string): void {
    const kept = this.counts.get(phrase)
    if (kept === undefined) return
    this.counts.delete(phrase)
    this.countedBytes -= kept.value?.f.length ?? 0
  }

  /**
   * A phrase's instance list (rowids, ascending for a word, a prefix's terms one after another)
   * with `changes` applied: every instance of a changed row removed, its last text's added (in
   * rowid order for a word, at the end for a prefix: matchesOf sorts a prefix's rows).
   */
  private patchInstances(list: Int32Array, phrase: string, changes: Array<[number, null | Terms]>): Int32Array {
    if (changes.length === 0) return list
    const stamp = this.markRows(changes)
    const added: number[] = []
    const instances = instancesOf(phrase)
    for (const [r, terms] of changes) for (let k = instances(terms); k > 0; k--) added.push(r)
    return phrase.endsWith('*') ? this.mergeKept(list, stamp, added, false) : this.mergeKept(list, stamp, added, true)
  }

  /** A set of phrases' rows (matchesOf: ascending, distinct) with `changes` applied. */
  private patchRows(rows: Int32Array, phrases: string[], changes: Array<[number, null | Terms]>): Int32Array {
    if (changes.length === 0) return rows
    const stamp = this.markRows(changes)
    const added: number[] = []
    const instances = phrases.map((phrase) => instancesOf(phrase))
    for (const [r, terms] of changes) if (instances.some((of) => of(terms) > 0)) added.push(r)
    return this.mergeKept(rows, stamp, added, true)
  }

  /** Marks the rows of `changes` with a fresh stamp (the scratch array `mark`). */
  private markRows(changes: Array<[number, null | Terms]>): number {
    this.reserve(changes.at(-1)![0])
    const stamp = this.nextStamp()
    for (const [r] of changes) this.mark[r] = stamp
    return stamp
  }

  /** `list` without the rows marked `stamp`, with `added` (ascending) merged in order (`sorted`) or appended. */
  private mergeKept(list: Int32Array, stamp: number, added: number[], sorted: boolean): Int32Array {
    const {mark} = this
    const out = new Int32Array(list.length + added.length)
    let k = 0
    let j = 0
    for (let i = 0; i < list.length; i++) {
      const d = list[i]
      if (d < mark.length && mark[d] === stamp) continue
      if (sorted) while (j < added.length && added[j] < d) out[k++] = added[j++]
      out[k++] = d
    }
    while (j < added.length) out[k++] = added[j++]
    return k === out.length ? out : out.slice(0, k)
  }

  private readInstances(phrase: string): Int32Array {
    const prefix = phrase.endsWith('*')
    const word = phrase.slice(1, prefix ? -2 : -1)
    // Only a table's token (`t` and hex, match.ts) is ever in the table column: the filter on the
    // column is left out when no such token can be among the terms read (a third of the walk).
    const any = !TABLE_TOKENISH.test(word)
    const list = prefix ? (any ? this.st.wholePrefixAny : this.st.wholePrefix).get(word, word) : (any ? this.st.wholeAny : this.st.whole).get(word)
    return parseIntegers(list ?? '')
  }

  /** fts5_aux.c's bm25 per row, in its double operations and order (see the file's comment), negated. */
  private formula(freq: Float64Array[], length: Float64Array, idf: number[], totals: Totals): Float64Array {
    const scores = new Float64Array(length.length)
    for (let i = 0; i < length.length; i++) {
      let score = 0
      const D = length[i]
      for (let p = 0; p < freq.length; p++) {
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

/**
 * Per-row counts with `changes` applied (the row of change k now holds the phrase `instances(k)`
 * times, in its last text; the document count follows). False when a row now holds it 255
 * times or more (a byte holds at most 254, as count-worker.ts builds them).
 */
function patchCounts(counts: RowCounts, changes: Array<[number, null | Terms]>, instances: (change: number) => number): boolean {
  for (let k = 0; k < changes.length; k++) {
    const r = changes[k][0]
    const now = instances(k)
    if (now > 254) return false
    const was = r < counts.f.length ? counts.f[r] : 0
    if (now === was) continue
    counts.docs += (now > 0 ? 1 : 0) - (was > 0 ? 1 : 0)
    if (r >= counts.f.length) {
      // New rows come at the end: room for more than this one, so each insert does not copy the array.
      const grown = new Uint8Array(Math.max(r + 1, Math.ceil(counts.f.length * 1.0625) + 1024))
      grown.set(counts.f)
      counts.f = grown
    }
    counts.f[r] = now
  }
  return true
}
