/**
 * Runs the full-text stores' WAL checkpoints in a worker thread, on a connection of its own.
 * SQLite's automatic checkpoint runs inside the commit of whichever write crosses 1,000 pages of
 * WAL: on the event loop, copying the pages into the file with synchronous=NORMAL's two fsyncs
 * (measured: the longest apply 78-200 ms with it, 35-66 ms without, the same CPU;
 * docs/benchmarks.md, fts-cpu and fts-wal).
 *
 * Bounded: the store's connection keeps SQLite's own checkpoint, at WAL_LIMIT_PAGES instead of
 * 1,000, so a worker that falls behind (a checkpoint copies only the frames before it started;
 * the WAL starts again from its beginning only at a write after one that copied them all) costs
 * at most one checkpoint on the loop of the frames the worker has not copied yet. A worker that
 * fails puts every store back to SQLite's default, as before this module. Another connection's
 * checkpoint changes no page, so the store's data_version does not move and what it keeps
 * (fts/score.ts) stays valid.
 *
 * The connection is opened per job and closed after it (as count-worker.ts), and the caller waits
 * for a store's job (idle) before a bulk build switches its journal off, before it closes, and
 * before a removed branch's folder is deleted.
 */
import {JobWorker, LOWER_THIS_THREAD, sqliteModule} from '../job-worker.js'

/** SQLite's default wal_autocheckpoint, pages: the store's again once the worker failed. */
export const WAL_FALLBACK_PAGES = 1000
/** The store's own checkpoint while the worker runs them, pages (16 MB of 4 KB pages): 4x the default. */
export const WAL_LIMIT_PAGES = 4000
/**
 * A store's checkpoints start at most this often (ms): each one that copies frames fsyncs the WAL
 * and the file, and the applies come every 25 ms under a stream of writes.
 */
export const CHECKPOINT_GAP_MS = 200

/** What the checkpointer needs of a store (fts/store.ts IndexStore). */
export interface CheckpointedStore {
  readonly file: string
  readonly bulkBuilding: boolean
  /** Sets the store's connection's wal_autocheckpoint (pages). */
  walAutocheckpoint(pages: number): void
}

/** `wal_checkpoint(PASSIVE)`'s row: `log` frames in the WAL, `checkpointed` of them in the file. */
export type CheckpointAnswer = {busy: number; checkpointed: number; log: number} | {error: string}

export interface WalCheckpointerOptions {
  gapMs?: number
  limitPages?: number
  fallbackPages?: number
  /** Told once, when the worker failed and the stores went back to checkpointing themselves. */
  failed?: (error: string) => void
  /** The thread's code (tests give a failing one). */
  source?: () => string
}

// Source as a string (as check.ts) so it runs the same from dist and under the test runner.
function workerSource(): string {
  return `
const {parentPort, workerData} = require('node:worker_threads')
const {statSync} = require('node:fs')
// Background work: the event loop's requests go first.
${LOWER_THIS_THREAD}
const Database = require(workerData.module)
parentPort.on('message', ({file, job}) => {
  let db
  let ino
  let answer
  try {
    ino = statSync(file).ino
    db = new Database(file, {fileMustExist: true})
    db.pragma('synchronous = NORMAL')
    const r = db.pragma('wal_checkpoint(PASSIVE)')[0]
    answer = {busy: r.busy, checkpointed: r.checkpointed, log: r.log}
  } catch (error) {
    answer = {error: String(error && error.message)}
  }
  if (db) {
    // A connection closing last on its file deletes the WAL by name: a file removed (or replaced
    // by a rebuilt index) meanwhile must not lose the new one's WAL, so that connection is left open.
    let same = false
    try {
      same = statSync(file).ino === ino
    } catch {}
    if (same) db.close()
  }
  parentPort.postMessage({...answer, job})
})
`
}

export class WalCheckpointer {
  private readonly jobs: JobWorker<CheckpointAnswer>
  /** The job under way per store file. */
  private readonly running = new Map<string, Promise<void>>()
  private readonly started = new Map<string, number>()
  private readonly stores = new Set<CheckpointedStore>()
  private failedWith: string | undefined
  private closed = false
  private readonly gapMs: number
  private readonly limitPages: number
  private readonly fallbackPages: number

  constructor(private readonly o: WalCheckpointerOptions = {}) {
    this.gapMs = o.gapMs ?? CHECKPOINT_GAP_MS
    this.limitPages = o.limitPages ?? WAL_LIMIT_PAGES
    this.fallbackPages = o.fallbackPages ?? WAL_FALLBACK_PAGES
    this.jobs = new JobWorker<CheckpointAnswer>({failed: (error) => ({error}), name: 'WAL checkpoint worker', source: o.source ?? workerSource, workerData: {module: sqliteModule}})
  }

  /** Whether the worker failed (the stores checkpoint themselves, as SQLite does by default). */
  get failed(): boolean {
    return this.failedWith !== undefined
  }

  /** Takes over a store's checkpoints: its own only past the limit from now on. */
  attach(store: CheckpointedStore): void {
    this.stores.add(store)
    store.walAutocheckpoint(this.failed ? this.fallbackPages : this.limitPages)
  }

  /** Forgets a store (closed); its job, if one runs, is waited for with idle. */
  detach(store: CheckpointedStore): void {
    this.stores.delete(store)
    this.started.delete(store.file)
  }

  /** A transaction of the store committed: a checkpoint starts unless one runs or ran just now. */
  committed(store: CheckpointedStore): void {
    if (this.closed || this.failed || store.bulkBuilding || !this.stores.has(store) || this.running.has(store.file)) return
    const now = performance.now()
    if (now - (this.started.get(store.file) ?? -Infinity) < this.gapMs) return
    this.started.set(store.file, now)
    const file = store.file
    const done = this.jobs.start({file}).answer.then((a) => {
      this.running.delete(file)
      if ('error' in a) this.fail(a.error)
    })
    this.running.set(file, done)
  }

  /** Whether a checkpoint of `file` runs now. */
  busy(file: string): boolean {
    return this.running.has(file)
  }

  /** Resolves once no checkpoint of `file` runs (a job started while waiting is waited for too). */
  async idle(file: string): Promise<void> {
    for (let r = this.running.get(file); r; r = this.running.get(file)) await r
  }

  /** Waits for the jobs under way and ends the thread; no job starts after. */
  async close(): Promise<void> {
    this.closed = true
    await Promise.all(this.running.values())
    await this.jobs.close()
  }

  private fail(error: string): void {
    if (this.failed || this.closed) return
    this.failedWith = error
    for (const s of this.stores) {
      try {
        s.walAutocheckpoint(this.fallbackPages)
      } catch {
        // A store closed meanwhile: nothing of it to bound.
      }
    }
    this.o.failed?.(error)
  }
}
