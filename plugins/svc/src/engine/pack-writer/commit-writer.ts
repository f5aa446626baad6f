/**
 * `CommitWriter`'s interface over the in-process pack writer (a worker thread) instead of
 * `git fast-import`: the same commits, trees and blobs (the same object ids), visible at each
 * checkpoint. The engine's default writer (`writer: 'fast-import'` or `SVC_WRITER=fast-import`
 * chooses fast-import instead); `bench/svc-packwriter.mjs` compares the two.
 */
import {basename, dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {Worker} from 'node:worker_threads'

import {EngineError} from '../errors.js'
import {gitEnv} from '../git.js'
import type {CommitSpec, GitWriter} from '../writer.js'
import {RecordEncoder, REC_CHECKPOINT, REC_RESTART} from './protocol.js'
import type {BuilderStats} from './builder.js'
import type {FromWorker, ToWorker} from './worker.js'

/** Bytes sent and not yet applied past which `commit()` asks the caller to wait for `drain()`. */
const HIGH_WATER = 16 * 1024 * 1024

export interface WriterStats {
  /** CPU seconds of the worker thread. */
  cpu: number
  /** The worker's V8 heap in use (bytes). */
  heapBytes: number
  stats: BuilderStats
}

export interface PackWriterOptions {
  /** The tree cache's budget in bytes (tree-cache.ts; tests make it tiny so every write reads its trees back). */
  treeCacheBytes?: number
}

export class PackCommitWriter implements GitWriter {
  private readonly worker: Worker
  private readonly encoder = new RecordEncoder()
  private flushScheduled = false
  private closed = false
  private abandoned = false
  private exitError: Error | undefined
  private readonly committed = new Set<string>()
  private readonly known = new Set<string>()
  private token = 0
  private readonly waiters = new Map<number, {reject(e: Error): void; resolve(): void}>()
  private inflight = 0
  private drainWaiters: Array<() => void> = []
  private statsWaiter: ((s: WriterStats) => void) | undefined
  private closedWaiter: (() => void) | undefined

  constructor(
    repo: string,
    private readonly existingBranches: () => Set<string>,
    private readonly committer = 'svc <svc@localhost>',
    _pidFile?: string,
    private readonly onExit?: (error: Error) => void,
    options: PackWriterOptions = {},
  ) {
    this.worker = startWorker(repo, options)
    this.worker.on('message', (m: FromWorker) => this.onMessage(m))
    this.worker.on('error', (e) => this.failed(e))
    this.worker.on('exit', (code) => {
      if (!this.closed || this.closedWaiter === undefined) this.failed(new Error(`pack writer thread exited (${code})`))
      this.closedWaiter?.()
    })
  }

  get error(): Error | undefined {
    return this.exitError
  }

  commit(spec: CommitSpec): boolean {
    if (this.exitError) throw this.exitError
    const when = `${Math.floor(spec.time / 1000)} +0000`
    let fromRef = false
    if (!this.known.has(spec.branch)) {
      fromRef = this.committed.has(spec.branch) || this.existingBranches().has(spec.branch)
      this.known.add(spec.branch)
      this.committed.add(spec.branch)
    }
    this.encoder.commit(spec.branch, fromRef, `${sanitize(spec.authorName)} <${spec.authorEmail ?? 'svc@localhost'}> ${when}`, `${this.committer} ${when}`, spec.message, spec.files)
    this.schedule()
    return this.inflight + this.encoder.size < HIGH_WATER
  }

  createBranch(branch: string, from: string): void {
    this.encoder.branch(branch, from, !this.known.has(from))
    this.known.add(from)
    this.known.add(branch)
    this.committed.add(branch)
    this.schedule()
  }

  checkpoint(): Promise<void> {
    return this.ask(REC_CHECKPOINT)
  }

  /** A checkpoint after which the worker forgets the trees it holds (fast-import's restart, without a process to replace). */
  restart(): Promise<void> {
    if (this.closed || this.exitError) return Promise.resolve()
    return this.ask(REC_RESTART)
  }

  drain(): Promise<void> {
    if (this.inflight + this.encoder.size < HIGH_WATER || this.exitError) return Promise.resolve()
    return new Promise((resolve) => this.drainWaiters.push(resolve))
  }

  async close(): Promise<void> {
    if (this.closed) return
    if (this.exitError) {
      this.closed = true
      return
    }
    // Like fast-import's `done`: every commit sent is in the repository when close resolves.
    await this.checkpoint()
    this.closed = true
    this.flush()
    const gone = new Promise<void>((resolve) => (this.closedWaiter = resolve))
    this.worker.postMessage({type: 'close'} satisfies ToWorker)
    await gone
    if (this.exitError) throw this.exitError
  }

  kill(): Promise<void> {
    this.closed = true
    this.abandoned = true
    this.exitError ??= new EngineError('unavailable', 'pack writer was replaced')
    this.failWaiters()
    return this.worker.terminate().then(() => undefined)
  }

  /** The worker's CPU and counters (for the bench). */
  stats(): Promise<WriterStats> {
    return new Promise((resolve) => {
      this.statsWaiter = resolve
      this.worker.postMessage({type: 'stats'} satisfies ToWorker)
    })
  }

  private ask(type: typeof REC_CHECKPOINT | typeof REC_RESTART): Promise<void> {
    if (this.exitError) return Promise.reject(this.exitError)
    const token = ++this.token
    const done = new Promise<void>((resolve, reject) => this.waiters.set(token, {reject, resolve}))
    this.encoder.token(type, token)
    this.schedule()
    return done
  }

  /** Everything encoded in one turn of the event loop goes to the worker as one message. */
  private schedule(): void {
    if (this.flushScheduled) return
    this.flushScheduled = true
    setImmediate(() => this.flush())
  }

  private flush(): void {
    this.flushScheduled = false
    if (this.encoder.size === 0 || this.exitError) return
    const data = this.encoder.take()
    this.inflight += data.byteLength
    this.worker.postMessage({data, type: 'records'} satisfies ToWorker, [data])
  }

  private onMessage(m: FromWorker): void {
    if (m.type === 'consumed') {
      this.inflight -= m.bytes
      if (this.inflight + this.encoder.size < HIGH_WATER) for (const w of this.drainWaiters.splice(0)) w()
    } else if (m.type === 'checkpointed') {
      for (const [t, w] of this.waiters) {
        if (t > m.token) break
        this.waiters.delete(t)
        w.resolve()
      }
    } else if (m.type === 'error') this.failed(new Error(m.message))
    else if (m.type === 'stats') {
      this.statsWaiter?.({cpu: m.cpu, heapBytes: m.heapBytes, stats: m.stats})
      this.statsWaiter = undefined
    }
  }

  private failed(e: Error): void {
    if (this.exitError || this.abandoned) return
    this.exitError = new EngineError('internal', `pack writer failed: ${e.message}`)
    this.failWaiters()
    for (const w of this.drainWaiters.splice(0)) w()
    this.onExit?.(this.exitError)
  }

  private failWaiters(): void {
    for (const w of this.waiters.values()) w.reject(this.exitError ?? new EngineError('closed', 'writer closed'))
    this.waiters.clear()
  }
}

/**
 * The worker runs from dist (its own entry point, `dist/engine/pack-writer/worker.js`, wherever
 * the bundler put this module) or, under the test runner, from the TypeScript source through tsx.
 */
function startWorker(repo: string, options: PackWriterOptions): Worker {
  const here = fileURLToPath(import.meta.url)
  const workerData = {env: gitEnv(), repo, treeCacheBytes: options.treeCacheBytes}
  // The process's own flags are not the worker's (a test runner's loaders, say); a bench's
  // SVC_PACKWRITER_PROFILE=DIR profiles the worker's thread into DIR.
  const profile = process.env.SVC_PACKWRITER_PROFILE
  const execArgv = profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : []
  if (here.endsWith('.ts')) {
    const url = new URL('worker.ts', import.meta.url).href
    return new Worker(`import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(url)}) })`, {eval: true, execArgv, workerData})
  }
  let dir = dirname(here)
  while (basename(dir) !== 'dist' && dirname(dir) !== dir) dir = dirname(dir)
  return new Worker(join(dir, 'engine', 'pack-writer', 'worker.js'), {execArgv, workerData})
}

function sanitize(name: string): string {
  return name.replace(/[<>\n\r]/g, '').slice(0, 100) || 'svc'
}
