import {existsSync, rmSync} from 'node:fs'
import {join} from 'node:path'

import {PhraseCounter, warmCommonCounts} from './fts/count-worker.js'
import {EngineError} from './errors.js'
import {BackgroundGate, whenQuiet} from './background-gate.js'
import {pace} from './loop-turns.js'
import {quickCheckFile} from './fts/check.js'
import {type CleanState, markCleanClose, takeCleanClose} from './fts/clean-close.js'
import {TextExtractor} from './fts/extract.js'
import {FTS_FILE, IndexStore, isCorruption, SEARCH_WINDOW} from './fts/store.js'
import {LargeDocumentWriter, type LargeWriteResult} from './fts/large-writer.js'
import {tableToken} from './fts/match.js'
import {TextWorker} from './fts/text-worker.js'
import {WalCheckpointer} from './fts/wal-checkpointer.js'
import type {Logger} from './types.js'

export interface IndexStatus {
  documents: number
  /** Documents still to (re)index in the running catch-up. */
  pending: number
  /** `building`: first build or rebuild, search answers from part of the documents; `catching-up`: behind; `ready`. */
  state: 'building' | 'catching-up' | 'disabled' | 'ready'
}

/** Progress counters behind the `svc_index_*` metrics (the spec's `svc.index.*`). */
export interface IndexProgress {
  corruptDetected: number
  documentErrors: number
  documentsIndexed: number
  lastRunSeconds: number
  runs: number
}

export interface FullTextOptions {
  batchSize: number
  checkIntervalMs: number
  /** The sha a document has now, to drop results of reads that a newer write overtook. */
  currentSha(branch: string, id: string): string | undefined
  /** Ids of every current document of a branch (a live view: it is walked across event-loop turns). */
  currentIds(branch: string): Iterable<string>
  /** How many documents the branch has now. */
  currentCount(branch: string): number
  dir: string
  logger: Logger
  readBody(branch: string, id: string): Promise<{body: Buffer; sha: string} | undefined>
  /** The Git repository: when given, a build from nothing reads it in a worker thread (fts/extract.ts). */
  repo?: string
  /** How long writes wait to be indexed together (APPLY_DELAY_MS by default). */
  applyDelayMs?: number
  /** First wait before a failed catch-up is tried again (doubling up to a minute); 1 s by default. */
  retryMs?: number
}

/** A document read for indexing: its bytes, or the text the extraction worker made of them. */
type Read = {body: Buffer; sha: string} | {sha: string; text: string}

/** What a search found, and how complete the index it searched was. */
export interface IndexSearchResult {
  ids: Array<{id: string; score: number}>
  /** Set while the index is behind the branch: the answer covers only what is indexed so far. */
  incomplete?: IndexStatus
  total: number
  /** Set when `total` is an estimate: the query matches more documents than one search ranks (fts/store.ts SEARCH_WINDOW). */
  totalEstimated?: true
}

interface BranchIndex {
  /** The page check running in a worker, if one is. */
  check?: Promise<void>
  /** What the last process's clean close left (fts/clean-close.ts): taken at open, used by the first catch-up only. */
  clean?: CleanState
  /** During a build from nothing: ids that writes put in the index meanwhile (every other id is known absent). */
  written?: Set<string>
  /** Ids whose indexed version may differ from the current one, still to check. */
  queue: string[]
  /** The next try of a catch-up that failed, and the wait before the one after it. */
  retry?: {delayMs: number; timer?: NodeJS.Timeout}
  running: boolean
  /** Set while queued writes are being applied across turns of the event loop (drain). */
  draining?: boolean
  /** Set while the row lengths are read into memory (warmLengths). */
  warming?: boolean
  /** Set by a search: the warm-up no longer gives way to requests (searches are what it serves). */
  searched?: boolean
  /** Set while common phrases' per-row counts are built in the count worker (countPhrases). */
  counting?: Promise<void>
  /** Set while the commonest phrases' counts wait for a pause or are built (warmCounts). */
  warmingCounts?: boolean
  /**
   * A large document being indexed by the worker's connection (fts/large-writer.ts): nothing
   * writes through the store meanwhile (applyWrites returns, a catch-up waits), so the two
   * connections never wait for each other's lock.
   */
  offload?: Promise<void>
  state: IndexStatus['state']
  store: IndexStore
  /** Acknowledged writes not yet applied to the index (undefined = delete). */
  writes: Map<string, QueuedWrite | undefined>
}

/** A write waiting to be indexed; `text` is set once a large document's text was extracted (drain). */
interface QueuedWrite {
  body: Buffer
  /** Set when the worker could not index it: the main thread does (drain). */
  local?: true
  sha: string
  text?: null | string
}

/**
 * Documents at least this large are indexed in turns of the event loop of their own: one to
 * parse the document and gather its text, one for the SQLite insert (issue 24: a 900 KB document
 * was parsed and indexed with every other queued write in one turn).
 */
const LARGE_DOC_BYTES = 256 * 1024

/**
 * How long acknowledged writes wait before they are indexed together. Each FTS5 transaction
 * flushes a new segment and merges segments: indexed once per event-loop turn, a durable write
 * stream paid that per handful of writes (the profile of a Redis SET run: the index took about a
 * third of the server's work). A search, count or status applies what waits first, so no reader
 * ever sees the delay; it only bounds how long the bodies stay queued. At 1M documents a
 * transaction of 400 writes cost FTS5 20 us a write against 32 for one of 100 (25 ms of writes
 * at 4,000 a second), with fts/store.ts FTS_MERGE (34 against 50 with FTS5's defaults;
 * docs/benchmarks.md, "the full-text apply's cost per write").
 */
const APPLY_DELAY_MS = 100

/**
 * Queued writes of a branch at which they are applied at the next turn rather than after the
 * delay: bounds how long one apply holds the event loop when writes arrive faster than this many
 * per APPLY_DELAY_MS. In the 1M-document A/B (loop profiles, wall time at load 3-5) an apply held
 * the loop 14-22 ms at the median, as the 25 ms batches before did (14-21), the longest 50-156
 * against their 64-264: fewer commits of FTS5, each cheaper per write.
 */
const APPLY_AT_ONCE = 512

/** Documents per transaction while an index is first built (see process). */
const BUILD_BATCH = 4000

/** The longest wait between tries of a catch-up that keeps failing. */
const MAX_RETRY_MS = 60_000

/**
 * The common phrases' counts (warmCounts) start after this long without requests, or this long
 * after the catch-up whatever arrives (a server searched without pause still gets them).
 */
const WARM_COUNTS_QUIET_MS = 500
const WARM_COUNTS_MAX_WAIT_MS = 60_000

/**
 * Rows read per page when the index is compared with the branch; pages run back to back until
 * the loop's shared slice is used up (loop-turns.ts pace). A page of 5,000 per turn held the loop
 * ~11 ms at 1M documents (the walk at open after a crash, and at every periodic check), a wait
 * for any request that arrived meanwhile; 500 rows are about 1 ms.
 */
const SCAN_PAGE = 500

/** Every string, number and boolean in a document, the id's key included, as one text field. */
export function documentText(doc: unknown): string {
  const parts: string[] = []
  const walk = (v: unknown): void => {
    if (typeof v === 'string') parts.push(v)
    else if (typeof v === 'number' || typeof v === 'boolean') parts.push(String(v))
    else if (Array.isArray(v)) for (const x of v) walk(x)
    else if (v && typeof v === 'object') for (const x of Object.values(v)) walk(x)
  }
  walk(doc)
  return parts.join(' ')
}

/** Whether a large write still waits to be handed to the worker (no array of every queued write per search). */
function hasLargeQueued(writes: BranchIndex['writes']): boolean {
  for (const w of writes.values()) if (w !== undefined && w.text === undefined && !w.local && w.body.length >= LARGE_DOC_BYTES) return true
  return false
}

/** Waits for `p` to settle, or `ms` at most; never rejects. */
async function settledWithin(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  await Promise.race([p.then(() => undefined, () => undefined), new Promise((r) => (timer = setTimeout(r, ms)))])
  clearTimeout(timer)
}

/** How a catch-up starts (see process). */
type StartFrom = 'check' | 'in-line' | 'intact'

const turn = (): Promise<void> => new Promise((r) => setImmediate(r))

/**
 * The full-text index: one SQLite FTS5 file per branch (fts/store.ts), read on demand, so opening
 * it costs nothing and memory does not grow with the documents. Writes update it as they are
 * acknowledged; a background task brings it in line with the repository (at open, after a
 * rebuild, and at every periodic check) by comparing the blob sha it indexed for each document
 * with the current one, in batches, while the server already answers.
 */
export class FullTextIndex {
  readonly progress: IndexProgress = {corruptDetected: 0, documentErrors: 0, documentsIndexed: 0, lastRunSeconds: 0, runs: 0}
  private applyScheduled = false
  private branches = new Map<string, BranchIndex>()
  private closed = false
  /** Page checks running in worker threads, each with a read connection of its own. */
  private readonly checks = new Set<Promise<void>>()
  private timers: NodeJS.Timeout[] = []
  /** Makes large documents' text off the event loop's thread (drain). */
  private readonly texts = new TextWorker(documentText)
  /** Indexes large documents on another thread with its own connection (drain). */
  private readonly large = new LargeDocumentWriter(documentText)
  /** Counts common phrases' instances per row on another thread with its own connection (countPhrases). */
  private readonly counter = new PhraseCounter()
  /** Runs the stores' WAL checkpoints off the event loop's thread (fts/wal-checkpointer.ts). */
  private readonly checkpoints: WalCheckpointer
  /** Aborted at close: background waits end at once. */
  private readonly stopping = new AbortController()

  constructor(private readonly o: FullTextOptions) {
    this.checkpoints = new WalCheckpointer({
      failed: (error) => o.logger.warn('full-text index WAL checkpoint worker failed; the indexes checkpoint on the event loop again', {error}),
    })
  }

  addBranch(name: string): void {
    const b = this.openBranch(name)
    if (b) this.reconcile(name, b)
  }

  /**
   * `heads`: each branch's head commit once every acknowledged write is in Git, when the engine
   * knows its documents are exactly that commit's; a branch whose index then holds exactly them
   * is marked closed cleanly (fts/clean-close.ts), so the next open skips its check and walk.
   */
  async close(heads?: ReadonlyMap<string, string>): Promise<void> {
    this.closed = true
    this.stopping.abort()
    for (const t of this.timers) clearInterval(t)
    await this.texts.close()
    for (const b of this.branches.values()) {
      clearTimeout(b.retry?.timer)
      while (b.offload) await b.offload
    }
    await this.large.close()
    // Its read connection closed before the stores close theirs (the last one folds the log in).
    await this.counter.close()
    // Its connection closed before the stores close theirs, as the count worker's; a checkpoint
    // left waiting on a stalled disk does not hold the close (the thread is ended).
    await settledWithin(this.checkpoints.close(), 5000)
    // A check's read connection still open would keep SQLite from folding its write-ahead log
    // into the file at our close; a short one is waited for, a long one (a huge index) is not.
    if (this.checks.size > 0) await settledWithin(Promise.allSettled(this.checks), 2000)
    for (const [name, b] of this.branches) {
      let applied = false
      try {
        this.guard(name, b, () => this.applyWrites(b))
        applied = this.branches.get(name) === b
      } catch (error) {
        this.o.logger.error('full-text index update failed at close; the next start catches up', {branch: name, error: (error as Error).message})
      }
      const head = heads?.get(name)
      const documents = b.store.documents
      const inLine = applied && head !== undefined && this.inLine(name, b)
      b.store.close()
      if (!inLine) continue
      try {
        markCleanClose(b.store.file, head, documents)
      } catch (error) {
        // Only the next open's shortcut is lost.
        this.o.logger.warn('full-text index clean-close marker not written; the next start checks the index', {branch: name, error: (error as Error).message})
      }
    }
  }

  /** Whether the branch's index holds exactly its current documents: caught up, nothing queued or running, as many rows as documents. */
  private inLine(name: string, b: BranchIndex): boolean {
    return b.state === 'ready' && !b.running && b.queue.length === 0 && b.writes.size === 0 && b.offload === undefined && b.written === undefined && !b.store.bulkBuilding && b.retry === undefined && b.store.documents === this.o.currentCount(name)
  }

  count(branch: string): number {
    const b = this.branches.get(branch)
    if (!b) return 0
    // Large documents are left to drain (the worker): a count does not index one on this thread.
    this.guard(branch, b, () => this.applyWrites(b, true))
    return this.branches.get(branch)?.store.documents ?? 0
  }

  /**
   * Forgets a removed branch's index and deletes its file. The branch is already gone from Git,
   * so a file that cannot be deleted is logged, not thrown: it is derived data.
   */
  async dropBranch(name: string): Promise<void> {
    const b = this.branches.get(name)
    this.branches.delete(name)
    if (b) {
      clearTimeout(b.retry?.timer)
      while (b.offload) await b.offload
      // A count job's read connection ends first: the store's, closed last, removes SQLite's files.
      if (b.counting) await settledWithin(b.counting, 2000)
      this.checkpoints.detach(b.store)
      await settledWithin(this.checkpoints.idle(b.store.file), 2000)
      b.store.close()
      // A page check just started opens the file read-only, and SQLite then creates its -wal and
      // -shm files beside it: deleting the folder under it would fail with ENOTEMPTY.
      if (b.check) await settledWithin(b.check, 2000)
    }
    try {
      rmSync(join(this.o.dir, name), {force: true, maxRetries: 3, recursive: true})
    } catch (error) {
      this.o.logger.warn('the removed branch\'s full-text index could not be deleted', {branch: name, error: (error as Error).message, path: join(this.o.dir, name)})
    }
  }

  /** Runs the consistency check now (what the hourly timer does). Resolves when caught up. */
  async check(): Promise<void> {
    for (const [name, b] of this.branches) this.reconcile(name, b)
    await this.idle()
  }

  /** True while a branch's catch-up runs (start-up maintenance waits for it: engine.ts startupGraph). */
  catchingUp(): boolean {
    for (const b of this.branches.values()) if (b.running) return true
    return false
  }

  /** Resolves once no catch-up is running. */
  async idle(timeoutMs = 600_000): Promise<void> {
    const until = Date.now() + timeoutMs
    while ([...this.branches.values()].some((b) => b.running) && Date.now() < until) await new Promise((r) => setTimeout(r, 5))
  }

  /**
   * Records a write; it is indexed off the request path (APPLY_DELAY_MS later, or at the next
   * turn once APPLY_AT_ONCE wait, one transaction for every write queued), and any search or
   * count applies what is still queued first, so search always sees acknowledged writes.
   */
  onWrite(branch: string, id: string, body: Buffer | undefined, sha: string | undefined): void {
    const b = this.branches.get(branch)
    if (!b) return
    b.writes.set(id, body === undefined || sha === undefined ? undefined : {body, sha})
    if (b.writes.size === APPLY_AT_ONCE) {
      // Not on this write's own path: the next turn, as the timer's apply.
      setImmediate(() => {
        if (!this.closed && this.branches.get(branch) === b) void this.drain(branch, b)
      })
    }
    if (!this.applyScheduled) {
      this.applyScheduled = true
      const timer = setTimeout(() => {
        this.applyScheduled = false
        if (this.closed) return
        for (const [name, x] of this.branches) void this.drain(name, x)
      }, this.o.applyDelayMs ?? APPLY_DELAY_MS)
      timer.unref()
    }
  }

  /**
   * Applies a branch's queued writes off the request path: the small ones together in one
   * transaction, each large document's text extraction and insert in slices of the event loop
   * shared with the servers (loop-turns.ts). A search, count or status meanwhile still applies
   * everything queued at once (applyWrites), so it sees every acknowledged write.
   */
  private async drain(name: string, b: BranchIndex): Promise<void> {
    if (b.draining) return
    b.draining = true
    try {
      while (!this.closed && this.branches.get(name) === b && b.writes.size > 0) {
        this.guard(name, b, () => this.applyWrites(b, true))
        const next = [...b.writes].find(([, w]) => w !== undefined && w.text === undefined)
        if (next === undefined) break
        const [id, w] = next as [string, QueuedWrite]
        if (!w.local && b.written === undefined && !b.store.bulkBuilding) {
          await this.offload(name, b, id, w)
          continue
        }
        const text = await this.texts.text(w.body)
        // A newer write of the document replaced this one while it waited: that one is extracted next.
        // (null: the worker could not parse it; the thread tries and reports why.)
        if (b.writes.get(id) === w && w.text === undefined) {
          await pace()
          w.text = text ?? this.textOf(id, w.body)
        }
        await pace()
      }
    } catch (error) {
      // A full disk, say: the writes are in Git all the same, and the catch-up indexes them later.
      this.o.logger.error('full-text index update failed; the next check catches up', {branch: name, error: (error as Error).message})
      b.state = 'catching-up'
    } finally {
      b.draining = false
    }
  }

  /**
   * Hands one large write to the worker (fts/large-writer.ts); the store is not written through
   * until it has answered. A write the worker could not make goes back to the queue for this thread.
   */
  private async offload(name: string, b: BranchIndex, id: string, w: QueuedWrite): Promise<void> {
    b.writes.delete(id)
    const colon = id.indexOf(':')
    const job = this.large.put(b.store.file, id, w.sha, colon === -1 ? '' : tableToken(id.slice(0, colon)), w.body)
    const settled = job.then((r) => this.offloaded(name, b, id, w, r))
    b.offload = settled
    try {
      await settled
    } finally {
      if (b.offload === settled) b.offload = undefined
    }
  }

  private offloaded(name: string, b: BranchIndex, id: string, w: QueuedWrite, r: LargeWriteResult): void {
    if (this.branches.get(name) !== b) return
    b.written?.add(id)
    if (!r.parsed) {
      // Counted and logged as on this thread; nothing is indexed for bytes that are not JSON.
      this.textOf(id, w.body)
      return
    }
    if ('added' in r) {
      b.store.noteWritten(r.added)
      return
    }
    if (isCorruption(r) && !this.closed) {
      this.corrupt(name, Object.assign(new Error(r.error), {code: r.code}))
      return
    }
    // A newer write of the document waits already: it replaces this one. Otherwise this thread indexes it.
    if (this.closed || b.writes.has(id)) return
    this.o.logger.warn('large document not indexed by the index worker; indexing it on the main thread', {branch: name, error: r.error, id})
    b.writes.set(id, {...w, local: true})
  }

  /** Resolves when no large write of the branch is being indexed by the worker (a search then sees every acknowledged write). */
  async settled(branch: string): Promise<void> {
    for (;;) {
      const b = this.branches.get(branch)
      if (!b || this.closed) return
      if (b.offload) {
        await b.offload
        continue
      }
      // A large write still queued is handed to the worker now rather than indexed on this thread by the search.
      if (!hasLargeQueued(b.writes)) return
      void this.drain(branch, b)
      await (b.offload ?? turn())
    }
  }

  /** `heads`: each branch's head commit, whose documents the engine opened with (see close). */
  async open(branches: string[], heads?: ReadonlyMap<string, string>): Promise<void> {
    for (const name of branches) {
      const b = this.openBranch(name)
      if (!b) continue
      const clean = b.clean
      b.clean = undefined
      // Closed cleanly at the very commit opened now, nothing written since: the index holds
      // exactly the branch's documents (writes replayed from the log arrive through onWrite).
      if (clean !== undefined && clean.head === heads?.get(name) && clean.documents === b.store.documents && clean.documents === this.o.currentCount(name)) {
        this.o.logger.info('full-text index closed cleanly at the branch head; no check or walk at open', {branch: name, documents: clean.documents})
        this.reconcile(name, b, 'in-line')
      } else this.reconcile(name, b, clean === undefined ? 'check' : 'intact')
    }
    if (this.o.checkIntervalMs > 0) {
      this.timers.push(setInterval(() => {
        this.o.logger.info('periodic index check')
        for (const [name, b] of this.branches) this.reconcile(name, b)
      }, this.o.checkIntervalMs))
    }
    for (const t of this.timers) t.unref()
  }

  /**
   * Best matches first. While the index is behind the branch (being built or catching up) the
   * answer covers what is indexed so far and says so in `incomplete`.
   */
  search(branch: string, query: string, options: {limit: number; offset: number; table?: string}): IndexSearchResult {
    const b = this.branches.get(branch)
    if (!b) throw new EngineError('branch_not_found', `branch ${branch} has no index`)
    b.searched = true
    const r = this.guard(branch, b, () => {
      this.applyWrites(b)
      return b.store.search(query, options)
    })
    if (b.store.countsPending) this.countPhrases(branch, b)
    const now = this.branches.get(branch)!
    const result: IndexSearchResult = {ids: r?.hits ?? [], total: r?.total ?? 0, ...(r?.estimated ? {totalEstimated: true as const} : {})}
    if (now.state !== 'ready') result.incomplete = this.status(branch)
    return result
  }

  status(branch: string): IndexStatus {
    const b = this.branches.get(branch)
    if (!b) return {documents: 0, pending: 0, state: 'disabled'}
    this.guard(branch, b, () => this.applyWrites(b, true))
    const now = this.branches.get(branch)!
    return {documents: now.store.documents, pending: now.running || now.queue.length > 0 ? Math.max(now.queue.length, this.o.currentCount(branch) - now.store.documents) : 0, state: now.state}
  }

  /** `ready`: only deletes, small documents and large ones whose text is extracted (drain). */
  private applyWrites(b: BranchIndex, ready = false): void {
    // The worker writes the file now (offload): these wait for the next apply.
    if (b.writes.size === 0 || b.offload) return
    let writes = [...b.writes]
    if (ready) writes = writes.filter(([, w]) => w === undefined || w.text !== undefined || w.body.length < LARGE_DOC_BYTES)
    if (writes.length === b.writes.size) b.writes.clear()
    else for (const [id] of writes) b.writes.delete(id)
    if (writes.length === 0) return
    b.store.transaction(() => {
      for (const [id, w] of writes) {
        b.written?.add(id)
        if (w === undefined) b.store.remove(id)
        else this.indexOne(b, id, w.body, w.sha, undefined, w.text)
      }
    })
  }

  /**
   * Runs `fn` against a branch's index; when SQLite reports the file damaged, counts and logs
   * it, replaces the index with an empty one and rebuilds it from the repository.
   */
  private guard<T>(name: string, b: BranchIndex, fn: () => T): T | undefined {
    try {
      return fn()
    } catch (error) {
      if (!isCorruption(error) || this.branches.get(name) !== b) throw error
      this.corrupt(name, error as Error)
      return undefined
    }
  }

  private corrupt(name: string, error: Error): void {
    this.progress.corruptDetected++
    const path = join(this.o.dir, name)
    this.o.logger.error('corrupt full-text index detected; rebuilding it from the repository', {branch: name, error: error.message, path})
    const old = this.branches.get(name)
    if (old) {
      // A checkpoint under way may finish on the deleted file (its worker then leaves it open).
      this.checkpoints.detach(old.store)
      try {
        old.store.close()
      } catch {
        // a damaged file may refuse to close cleanly; it is deleted next
      }
    }
    this.branches.delete(name)
    rmSync(path, {force: true, recursive: true})
    const b = this.openBranch(name)
    if (b) this.reconcile(name, b)
  }

  private endBuild(b: BranchIndex): void {
    b.written = undefined
    b.store.endBulk()
  }

  /** A build without a journal failed (a full disk, say): the file is emptied and built again by the next check. */
  private reset(name: string, b: BranchIndex, error: Error): void {
    this.o.logger.error('full-text index build failed; the index is emptied and built again at the next check', {branch: name, error: error.message})
    this.checkpoints.detach(b.store)
    try {
      b.store.close()
    } catch {
      // deleted next in any case
    }
    this.branches.delete(name)
    rmSync(join(this.o.dir, name), {force: true, recursive: true})
    this.openBranch(name)
  }

  /** `text`: already extracted (textOf), null when extraction failed. */
  private indexOne(b: BranchIndex, id: string, body: Buffer, sha: string, row?: {rowid: number} | null, text?: null | string): void {
    const t = text === undefined ? this.textOf(id, body) : text
    if (t !== null) b.store.put(id, sha, t, row)
  }

  /** The text indexed for a document, or null (counted and logged) when its bytes are not JSON. */
  private textOf(id: string, body: Buffer): null | string {
    try {
      return documentText(JSON.parse(body.toString('utf8')))
    } catch (error) {
      this.progress.documentErrors++
      this.o.logger.error('document could not be indexed', {error: (error as Error).message, id})
      return null
    }
  }

  /** Opens the branch's index file; a damaged one is reported and replaced by an empty one. */
  private openBranch(name: string): BranchIndex | undefined {
    const dir = join(this.o.dir, name)
    const file = join(dir, FTS_FILE)
    // index.json is the in-memory index of earlier versions: derived data, rebuilt in the new form.
    if (existsSync(join(dir, 'index.json'))) rmSync(join(dir, 'index.json'), {force: true})
    const existed = existsSync(file)
    // Taken (deleted) before the file is opened for writing: a process that stops without closing leaves none.
    let clean: CleanState | undefined
    try {
      clean = takeCleanClose(file)
    } catch (error) {
      // A marker that cannot be deleted must not be trusted by a later open either: the index is rebuilt.
      this.o.logger.error('full-text index clean-close marker could not be removed; rebuilding the index', {branch: name, error: (error as Error).message, path: dir})
      rmSync(dir, {force: true, recursive: true})
    }
    let store: IndexStore
    try {
      store = new IndexStore(file)
    } catch (error) {
      const code = (error as {code?: string}).code
      if (code === 'SVC_FTS_FORMAT' || code === 'SVC_FTS_UNFINISHED') this.o.logger.info('full-text index of another format or unfinished; rebuilding it', {branch: name, error: (error as Error).message})
      else {
        this.progress.corruptDetected++
        this.o.logger.error('corrupt full-text index detected; rebuilding it from the repository', {branch: name, error: (error as Error).message, path: dir})
      }
      rmSync(dir, {force: true, recursive: true})
      try {
        store = new IndexStore(file)
      } catch (error2) {
        this.o.logger.error('full-text index could not be created; search on this branch is unavailable', {branch: name, error: (error2 as Error).message, path: dir})
        return undefined
      }
    }
    if (!existed) this.o.logger.info('no full-text index on disk; building it', {branch: name})
    try {
      this.checkpoints.attach(store)
      store.afterCommit = () => this.checkpoints.committed(store)
    } catch (error) {
      // SQLite's own checkpoints stay as they are: only the event loop pays for them.
      this.o.logger.warn('full-text index WAL checkpoints stay on the event loop', {branch: name, error: (error as Error).message})
    }
    const b: BranchIndex = {clean, queue: [], running: false, state: store.documents === 0 ? 'building' : 'catching-up', store, writes: new Map()}
    this.branches.set(name, b)
    return b
  }

  /**
   * Brings the index in line with the branch: drops deleted documents, reindexes changed and new
   * ones. `from`: `check` reads every page first; `intact` (the file is as a clean close left it)
   * skips that; `in-line` (and it matched the branch head opened now) skips the walk too.
   */
  private async process(name: string, b: BranchIndex, from: StartFrom): Promise<void> {
    const started = Date.now()
    const live = (): boolean => !this.closed && this.branches.get(name) === b
    let indexed = 0
    let total = 0
    let extractor: TextExtractor | undefined
    try {
      // 0. Every page readable (a damaged one throws SQLITE_CORRUPT: rebuilt below). Here, not
      // at open, so a large index never delays the server's start, and in a worker thread, so
      // reading every page never stalls requests.
      if (from === 'check') {
        const check = quickCheckFile(b.store.file)
        this.checks.add(check)
        b.check = check
        await check.finally(() => {
          this.checks.delete(check)
          if (b.check === check) b.check = undefined
        })
      }
      if (!live()) return
      // 1. Walk the index: documents gone from the branch are removed, changed ones queued.
      const gone: string[] = []
      for (let after = 0; live() && from !== 'in-line'; ) {
        const rows = b.store.page(after, SCAN_PAGE)
        if (rows.length === 0) break
        after = rows.at(-1)!.rowid
        for (const r of rows) {
          const current = this.o.currentSha(name, r.id)
          if (current === undefined) gone.push(r.id)
          else if (current !== r.sha) b.queue.push(r.id)
        }
        await pace()
      }
      if (!live()) return
      while (b.offload) await b.offload
      if (!live()) return
      if (gone.length > 0) b.store.transaction(() => gone.forEach((id) => b.store.remove(id)))
      // 2. Every indexed document is current now; when there are fewer than the branch holds,
      // the missing ones are queued (all of them at once when the index is empty).
      if (from !== 'in-line' && b.store.documents < this.o.currentCount(name)) {
        const empty = b.store.documents === 0
        let n = 0
        for (const id of this.o.currentIds(name)) {
          if (empty || b.store.sha(id) === undefined) b.queue.push(id)
          if (++n % SCAN_PAGE === 0) {
            await pace()
            if (!live()) return
          }
        }
      }
      total = b.queue.length
      if (total > 0) this.o.logger.info('reindex started', {branch: name, documents: total})
      // 3. Read and index the queued documents, one transaction per batch. A first build (or a
      // rebuild) writes larger transactions: FTS5 flushes and merges segments per commit, which
      // is most of the cost of a small one; an index being built has no earlier version to compare.
      const building = b.store.documents === 0
      const size = building ? Math.max(this.o.batchSize, BUILD_BATCH) : this.o.batchSize
      // A build from nothing: no journal (fts/store.ts beginBulk), and no lookup of each id's
      // row, since only ids that writes indexed meanwhile can have one.
      // Nor a checkpoint's connection: it would keep the journal from being switched off.
      for (;;) {
        if (b.offload) await b.offload
        else if (building && total > 0 && this.checkpoints.busy(b.store.file)) await this.checkpoints.idle(b.store.file)
        else break
      }
      if (!live()) return
      if (building && total > 0 && b.store.beginBulk()) b.written = new Set()
      // And its documents are read and turned into text in a worker thread (fts/extract.ts).
      if (building && total > 0 && this.o.repo !== undefined) extractor = new TextExtractor(this.o.repo, documentText)
      const read = (id: string): Promise<Read | null | undefined> => this.o.readBody(name, id).catch(() => null)
      const fetch = (): {batch: string[]; reads: Promise<Array<Read | null | undefined>>} => {
        const batch = b.queue.splice(0, size)
        const shas = batch.map((id) => {
          const current = this.o.currentSha(name, id)
          return current === undefined || (!building && b.store.sha(id) === current) ? null : current
        })
        if (extractor) {
          const reads = extractor.texts(shas).then((texts) => Promise.all(texts.map((text, i): Read | Promise<Read | null | undefined> | undefined => {
            const sha = shas[i]
            if (sha === null) return undefined
            return text === null ? read(batch[i]) : {sha, text}
          })))
          return {batch, reads}
        }
        return {batch, reads: Promise.all(batch.map((id, i) => (shas[i] === null ? undefined : read(id))))}
      }
      // The next batch is read from Git while this one is indexed: git and SQLite overlap.
      let next = b.queue.length > 0 ? fetch() : undefined
      while (next && live()) {
        const {batch} = next
        const reads = await next.reads
        next = b.queue.length > 0 ? fetch() : undefined
        // No await between this wait and the transaction: no worker write can start in between.
        while (b.offload) await b.offload
        if (!live()) return
        this.applyWrites(b)
        b.store.transaction(() => {
          for (let i = 0; i < batch.length; i++) {
            const id = batch[i]
            const r = reads[i]
            const current = this.o.currentSha(name, id)
            if (current === undefined) {
              b.store.remove(id)
              continue
            }
            if (r === null) {
              this.progress.documentErrors++
              this.o.logger.error('document could not be read for indexing', {branch: name, id})
              continue
            }
            const row = r && r.sha === current ? (b.written && !b.written.has(id) ? null : b.store.rowOf(id)) : undefined
            if (r && r.sha === current && row?.sha !== current) {
              if ('text' in r) b.store.put(id, r.sha, r.text, row ?? null)
              else this.indexOne(b, id, r.body, r.sha, row ?? null)
              indexed++
              this.progress.documentsIndexed++
            }
          }
        })
        // Yield so requests and writes keep flowing while a large index builds.
        await turn()
      }
      if (live()) this.endBuild(b)
    } catch (error) {
      if (b.store.bulkBuilding && live()) {
        // Without a journal a failed transaction is not rolled back: start again from an empty
        // file at the next check rather than search a half-written one.
        b.running = false
        this.reset(name, b, error as Error)
        return
      }
      if (!isCorruption(error) || !live()) throw error
      b.running = false
      this.corrupt(name, error as Error)
      return
    } finally {
      extractor?.close()
      b.running = false
    }
    if (!live()) return
    b.state = 'ready'
    b.retry = undefined
    this.progress.runs++
    this.progress.lastRunSeconds = (Date.now() - started) / 1000
    if (total > 0) this.o.logger.info('reindex finished', {branch: name, documents: b.store.documents, indexed, seconds: this.progress.lastRunSeconds})
    void this.warmLengths(name, b)
  }

  /**
   * Reads the row lengths of a caught-up index into memory in slices (fts/store.ts warmLengths:
   * about 1 ms each, one per turn of the loop), once per store: searches ranked by fts/score.ts
   * then find them known instead of reading each row's (0.5 us a row, 40% of the rows the
   * searches of bench/svc-search.mjs needed were read so). An optimisation only: a failure
   * leaves the lengths to be read by the searches.
   */
  private async warmLengths(name: string, b: BranchIndex): Promise<void> {
    if (b.warming) return
    b.warming = true
    try {
      // Bounded: another connection's commits start the walk again (the lengths are dropped).
      // Requests go first: each slice is a millisecond or more of the loop, and at 1M documents
      // the walk's 245 slices ran under the first reads after open (background-gate.ts). Not once
      // searches arrive: held, it left each of them to read its rows' lengths (0.5 us a row), the
      // work the warm-up exists to save, for the first second and more of searches after open.
      const gate = new BackgroundGate()
      for (let slices = 0; slices < 4096 && !this.closed && this.branches.get(name) === b; slices++) {
        if (!b.store.warmLengths()) break
        await turn()
        await gate.pass(undefined, () => b.searched === true)
      }
    } catch {
      // left to the searches
    } finally {
      b.warming = false
    }
    this.warmCounts(name, b)
  }

  /**
   * Counts the commonest terms' phrases in the count worker (fts/count-worker.ts
   * warmCommonCounts) once the row lengths are in, so a common word's first search is scored from
   * arrays too. Shares countPhrases' slot (one job at a time); phrases searches asked for
   * meanwhile are counted after it.
   */
  private warmCounts(name: string, b: BranchIndex): void {
    if (b.warmingCounts === true || this.closed || this.branches.get(name) !== b) return
    b.warmingCounts = true
    const live = (): boolean => !this.closed && this.branches.get(name) === b
    const signal = this.stopping.signal
    const gate = new BackgroundGate()
    const run = async (): Promise<void> => {
      try {
        // Starts in a pause of requests: its first step (picking the terms) is seconds of a core
        // at 1M documents that cannot be held once begun, and right after the catch-up it made
        // the first searches' p95 worse than without counts (docs/benchmarks.md, fts-count2).
        // Meanwhile searches still get the counts they ask for (countPhrases); between phrases
        // the warm-up gives way as the other background work does.
        await whenQuiet(WARM_COUNTS_QUIET_MS, WARM_COUNTS_MAX_WAIT_MS, signal)
        while (b.counting !== undefined && live()) await b.counting
        if (!live()) return
        b.counting = warmCommonCounts(this.counter, b.store, SEARCH_WINDOW, live, () => gate.pass(signal))
          .catch(() => {
            // left to bm25
          })
          .finally(() => {
            b.counting = undefined
            if (live() && b.store.countsPending) this.countPhrases(name, b)
          })
        await b.counting
      } finally {
        b.warmingCounts = false
      }
    }
    void run()
  }

  /**
   * Builds the per-row counts of the common phrases searches left to bm25, one phrase a job, in
   * the count worker's thread (fts/count-worker.ts), so the next searches naming them score their
   * few rows from arrays instead of bm25 counting the whole lists again. This thread only posts
   * the job and keeps the answer (a transferred array) if the index was not written meanwhile
   * (fts/store.ts countsDone). An optimisation only: a failure leaves those searches to bm25.
   */
  private countPhrases(name: string, b: BranchIndex): void {
    if (b.counting) return
    const live = (): boolean => !this.closed && this.branches.get(name) === b
    const run = async (): Promise<void> => {
      try {
        // Bounded per call: later searches start it again.
        for (let jobs = 0; jobs < 64 && live(); jobs++) {
          const job = b.store.countJob()
          if (job === undefined) return
          const answer = await this.counter.count(b.store.file, job.phrase, job.any)
          if (!live() || 'error' in answer) return
          b.store.countsDone(job, 'none' in answer ? null : answer)
        }
      } catch {
        // left to bm25
      }
    }
    // Cleared in a reaction, never inside run(): a run that ends before its first await (no job:
    // a bulk build going on) would clear the slot before this assignment filled it, and a
    // resolved promise left there kept every later count from starting and spun the warm-up's
    // `await b.counting` loop without end, the event loop with it.
    const running: Promise<void> = run().finally(() => {
      if (b.counting === running) b.counting = undefined
    })
    b.counting = running
  }

  private reconcile(name: string, b: BranchIndex, from: StartFrom = 'check'): void {
    if (b.running) return
    b.running = true
    this.process(name, b, from).catch((error: Error) => {
      b.running = false
      // The branch was removed (or the index closed) under the catch-up: its file is gone, as meant.
      if (this.closed || this.branches.get(name) !== b) return
      // A failure that is not corruption (a Git read, a full disk, a busy file) is often gone a
      // moment later: try again soon, backing off, rather than leave the index behind until the
      // next periodic check. Searches keep saying the answer is incomplete meanwhile.
      const delayMs = b.retry?.delayMs ?? this.o.retryMs ?? 1000
      this.o.logger.error('full-text reindex failed; trying again', {branch: name, error: error.message, retryInMs: delayMs})
      clearTimeout(b.retry?.timer)
      const timer = setTimeout(() => {
        if (!this.closed && this.branches.get(name) === b) this.reconcile(name, b)
      }, delayMs)
      timer.unref()
      b.retry = {delayMs: Math.min(delayMs * 2, MAX_RETRY_MS), timer}
    })
  }
}
