/**
 * Builds the per-row counts of a common phrase (fts/score.ts keepCounts) in a worker thread with
 * its own read-only connection: reading a phrase's lists at 1M documents costs 12-40 ms per term
 * and hundreds of ms for a common prefix, which on the event loop's thread stalled whatever
 * request arrived meanwhile. WAL mode lets the thread read one consistent snapshot while the main
 * connection writes; the caller (store.ts countsDone) keeps an answer only when the index was not
 * written since it asked, so counts of an older state are never used.
 *
 * The connection is opened per job and closed after it (as large-writer.ts), so none is left
 * open when a build switches the journal off or a removed branch's file is deleted.
 */
import type Database from 'better-sqlite3'

import {JobWorker, LOWER_THIS_THREAD, sqliteModule} from '../job-worker.js'

/**
 * A phrase with a term of more instances is left to bm25: its list is read whole, as one string
 * (7-8 bytes an instance), on the worker's thread (the string is bounded by the index itself;
 * this bounds the work beyond it).
 */
export const TERM_INSTANCES_MAX = 4_000_000

/**
 * The worker's answer: the phrase's documents and instances by rowid, with the meta `gen` its
 * snapshot held (which of the store's writes it includes: store.ts countsDone), or why there are none.
 */
export type CountAnswer = {docs: number; f: Uint8Array; gen: null | string} | {error: string} | {none: true}

/**
 * Terms whose phrases warmCommonCounts counts after the catch-up, at most: each as a prefix and
 * as a word, a byte per row each (48 MB of score.ts's 64 MB at 1M documents, the rest left to
 * the phrases searches ask for).
 */
const WARMED_TERMS = 24

/** What warmCommonCounts needs of a store (fts/store.ts IndexStore). */
export interface CountedStore {
  readonly file: string
  countJob(phrase?: string): undefined | {any: boolean; at: string; phrase: string}
  countsDone(job: {at: string; phrase: string}, counts: null | {docs: number; f: Uint8Array; gen?: null | string}): boolean
  /** Whether no other connection has written the index for a while (counts would be dropped at once otherwise). */
  readonly countsQuiet: boolean
}

/**
 * Counts, in the worker, the phrases of the body's commonest terms (in more documents than
 * `minDocs`, the search window: fewer are read whole by a search anyway), each as a prefix (a
 * search's last word) and as a word, so a common word's first search is already scored from
 * them rather than by bm25 counting its lists. The terms come from FTS5's own document counts
 * (fts5vocab, one walk of the index: 2.4 s of the worker's CPU at 1M documents). Stops at another
 * connection's write (countsQuiet) or when `live` turns false; never rejects. `pause` is awaited before each
 * phrase (the engine's gives way to requests: background-gate.ts).
 */
export async function warmCommonCounts(counter: PhraseCounter, store: CountedStore, minDocs: number, live: () => boolean, pause: () => Promise<void> = async () => {}): Promise<void> {
  // Written by another connection since (the pause it waited for may have ended 60 s later): the
  // counts would be dropped at once, so the walk that picks the terms is not worth its seconds.
  if (!live() || !store.countsQuiet) return
  const common = await counter.common(store.file, minDocs, WARMED_TERMS)
  if (!('terms' in common)) return
  for (const term of common.terms) {
    for (const phrase of [`"${term}"*`, `"${term}"`]) {
      await pause()
      if (!live() || !store.countsQuiet) return
      const job = store.countJob(phrase)
      if (job === undefined) continue
      const answer = await counter.count(store.file, job.phrase, job.any)
      if (!live() || 'error' in answer) return
      store.countsDone(job, 'none' in answer ? null : answer)
    }
  }
}

/**
 * The counts of `phrase` (`"word"` or `"word"*`, as match.ts writes them) over the body column
 * (`any`: every column, when no table token can be among its terms), from the fts5vocab instance
 * table `temp.count_terms`; null when a row holds it 255 times or more, or a term has more than
 * `termMax` instances. Runs in the worker (its source is this function's text): it names
 * nothing outside itself.
 */
export function countPhraseRows(db: Database.Database, phrase: string, any: boolean, termMax: number): null | {docs: number; f: Uint8Array} {
  const prefix = phrase.endsWith('*')
  const word = phrase.slice(1, prefix ? -2 : -1)
  // One seek in the term list: the instance table reads a term's documents only as it is walked.
  const from = db.prepare<[string], string | undefined>('SELECT term FROM temp.count_terms WHERE term >= ? LIMIT 1').pluck()
  const list = db.prepare<[string], null | string>(`SELECT group_concat(doc, ',') FROM temp.count_terms WHERE term = ?${any ? '' : ` AND col = 'body'`}`).pluck()
  let f = new Uint8Array(0)
  let docs = 0
  let top = -1
  let term = prefix ? from.get(word) : word
  while (term !== undefined && term !== null && term.startsWith(word)) {
    const text = list.get(term) ?? ''
    let d = 0
    let instances = 0
    for (let i = 0; i <= text.length; i++) {
      const c = i < text.length ? text.charCodeAt(i) : 44
      if (c !== 44) {
        d = d * 10 + c - 48
        continue
      }
      // An empty list: the term is only in the table column.
      if (i === 0) break
      if (++instances > termMax) return null
      if (d >= f.length) {
        const grown = new Uint8Array(Math.max(d + 1, Math.ceil(f.length * 1.25)))
        grown.set(f)
        f = grown
      }
      if (f[d] === 0) docs++
      else if (f[d] === 254) return null
      f[d]++
      if (d > top) top = d
      d = 0
    }
    if (!prefix) break
    term = from.get(`${term}\u0001`)
  }
  // Its own buffer of the exact size: it is transferred, and its length is what the scorer's cap counts.
  return {docs, f: f.length === top + 1 ? f : f.slice(0, top + 1)}
}

// Source as a string (as check.ts) so it runs the same from dist and under the test runner.
function workerSource(): string {
  return `
const {parentPort, workerData} = require('node:worker_threads')
// Background work: the event loop's requests go first.
${LOWER_THIS_THREAD}
const Database = require(workerData.module)
const __name = (f) => f
const countPhraseRows = ${countPhraseRows.toString()}
parentPort.on('message', ({any, file, job, limit, minDocs, phrase, termMax}) => {
  let db
  let answer
  try {
    db = new Database(file, {fileMustExist: true, readonly: true})
    if (limit !== undefined) {
      db.exec("CREATE VIRTUAL TABLE temp.count_cols USING fts5vocab(main, 'text', 'col')")
      const terms = db.prepare("SELECT term FROM temp.count_cols WHERE col = 'body' AND doc > ? ORDER BY doc DESC LIMIT ?").pluck().all(minDocs, limit)
      parentPort.postMessage({job, terms})
      return
    }
    db.exec("CREATE VIRTUAL TABLE temp.count_terms USING fts5vocab(main, 'text', 'instance')")
    // One read transaction: every term of the phrase from one snapshot, and the store's
    // generation in it (which of its writes the counts hold).
    db.exec('BEGIN')
    const gen = db.prepare("SELECT value FROM meta WHERE key = 'gen'").pluck().get()
    const counts = countPhraseRows(db, phrase, any, termMax)
    db.exec('COMMIT')
    answer = counts ? {docs: counts.docs, f: counts.f, gen: gen === undefined ? null : gen} : {none: true}
  } catch (error) {
    answer = {error: String(error && error.message)}
  } finally {
    if (db) db.close()
  }
  // Transferred, not copied (up to a byte per row of the index).
  if (answer.f) parentPort.postMessage({...answer, job}, [answer.f.buffer])
  else parentPort.postMessage({...answer, job})
})
`
}

export class PhraseCounter {
  private readonly jobs = new JobWorker<CountAnswer | {terms: string[]}>({failed: (error) => ({error}), name: 'phrase count worker', source: workerSource, workerData: {module: sqliteModule}})

  /** Counts `phrase` in the index file `file` (see countPhraseRows); never rejects. */
  count(file: string, phrase: string, any: boolean): Promise<CountAnswer> {
    return this.jobs.start({any, file, phrase, termMax: TERM_INSTANCES_MAX}).answer as Promise<CountAnswer>
  }

  /** The body's `limit` commonest terms in more than `minDocs` documents, commonest first; never rejects. */
  common(file: string, minDocs: number, limit: number): Promise<{error: string} | {terms: string[]}> {
    return this.jobs.start({file, limit, minDocs}).answer as Promise<{error: string} | {terms: string[]}>
  }

  /** Terminates the thread (a job under way is answered with an error). */
  close(): Promise<void> {
    return this.jobs.close()
  }
}
