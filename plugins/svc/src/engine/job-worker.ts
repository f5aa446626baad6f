/**
 * A worker thread that runs jobs and answers each once (fts/large-writer.ts, history-worker.ts):
 * started on the first job, given a number per job, and when the thread fails or is closed every
 * job still waiting is answered with `failed(reason)`, so no caller waits forever. The thread's
 * code answers a job by posting `{job, ...answer}`.
 */
import {createRequire} from 'node:module'
import {type Transferable, Worker} from 'node:worker_threads'

/** better-sqlite3's entry, resolved here and handed to the thread (its code is a string, see below). */
export const sqliteModule = createRequire(import.meta.url).resolve('better-sqlite3')

/**
 * The first lines of a background worker thread's code (a string run with `eval`): on Linux the
 * nice value is per thread and 0 names the calling one, so this thread alone yields the cores to
 * the event loop's (elsewhere it would lower the whole process, so it is left alone).
 */
export const LOWER_THIS_THREAD = `
if (process.platform === 'linux') {
  try {
    require('node:os').setPriority(0, 10)
  } catch {}
}
`

export interface JobWorkerOptions<R> {
  /**
   * The thread's code, CommonJS as a string, so it runs the same from dist and under the test
   * runner (as fts/check.ts). Read when the thread starts.
   */
  source: () => string
  workerData: unknown
  /** The answer of a job the thread can no longer give. */
  failed: (reason: string) => R
  /** Names the thread in those answers ("history worker exited"). */
  name: string
}

export interface Job<R> {
  /** Resolves with the thread's answer; never rejects. */
  answer: Promise<R>
  /** Posts another message of this job (`job` is added). */
  post(message: Record<string, unknown>, transfer?: Transferable[]): void
}

export class JobWorker<R> {
  private worker: undefined | Worker
  private nextJob = 1
  private readonly waiting = new Map<number, (r: R) => void>()

  constructor(private readonly o: JobWorkerOptions<R>) {}

  /** Starts a job with its first message (`job` is added). */
  start(message: Record<string, unknown>, transfer?: Transferable[]): Job<R> {
    const w = this.thread()
    const job = this.nextJob++
    const answer = new Promise<R>((resolve) => this.waiting.set(job, resolve))
    const post = (m: Record<string, unknown>, t?: Transferable[]): void => w.postMessage({...m, job}, t)
    post(message, transfer)
    return {answer, post}
  }

  async close(): Promise<void> {
    const w = this.worker
    this.worker = undefined
    this.settleAll(`${this.o.name} closed`)
    if (w) await w.terminate()
  }

  private thread(): Worker {
    if (this.worker) return this.worker
    // execArgv: [] for the reason in fts/check.ts.
    const w = new Worker(this.o.source(), {eval: true, execArgv: [], workerData: this.o.workerData})
    // A thread with nothing to do must not keep a closed engine's process alive.
    w.unref()
    w.on('message', (m: R & {job: number}) => {
      const done = this.waiting.get(m.job)
      this.waiting.delete(m.job)
      done?.(m)
    })
    const gone = (error?: Error): void => {
      if (this.worker === w) this.worker = undefined
      this.settleAll(error?.message ?? `${this.o.name} exited`)
    }
    w.on('error', gone)
    w.on('exit', () => gone())
    this.worker = w
    return w
  }

  private settleAll(reason: string): void {
    for (const done of this.waiting.values()) done(this.o.failed(reason))
    this.waiting.clear()
  }
}
