/**
 * Parses the history index's `git log` pass and writes its rows in a worker thread with its own
 * SQLite connection. At 100k commits that is ~1.8 s of CPU (trailers, paths, two inserts a
 * commit), which on the event loop's thread ran in 10-20 ms pieces right after start, while the
 * first searches came in (issue 13: a 35 ms search p95 that was 10 ms once the catch-up was over).
 *
 * `git` itself is still started by the git helper (git-spawner.ts: a worker would fork the
 * server's address space); the thread only copies its output across, gathered per turn of the
 * loop (a memcpy and a transfer). The worker keeps up with `git log` (~18 us a commit against git's
 * ~26 us), so the chunks queued at it stay few. It runs at nice 10 (Linux), so on a busy machine
 * a search does not wait for a core behind it either.
 *
 * Only one connection writes at a time: history-index.ts starts a job here only inside a
 * branch's catch-up, after its own writes (a cut back), and reads the file's new state (reload)
 * when the job has answered. WAL mode lets the thread's connection read meanwhile.
 */
import {BackgroundGate} from './background-gate.js'
import {parseTrailers} from './commit-message.js'
import {gitStream, type StreamControl} from './git.js'
import {commitScanner, logArgs} from './history-scan.js'
import {appendCommits, asOfKey, MERGE_AT, mergeDue, mergeRecent, readHistoryState} from './history-store.js'
import {JobWorker, LOWER_THIS_THREAD, sqliteModule} from './job-worker.js'

// Source as a string (as fts/large-writer.ts) so it runs the same from dist and under the test
// runner; the parsing and the inserts are the thread's own functions, so both write the same rows.
const WORKER = `
const {parentPort, workerData} = require('node:worker_threads')
const {StringDecoder} = require('node:string_decoder')
const Database = require(workerData.module)
${LOWER_THIS_THREAD}
const __name = (f) => f
const parseTrailers = ${parseTrailers.toString()}
const asOfKey = ${asOfKey.toString()}
const commitScanner = ${commitScanner.toString()}
const appendCommits = ${appendCommits.toString()}
const readHistoryState = ${readHistoryState.toString()}
const mergeDue = ${mergeDue.toString()}
const mergeRecent = ${mergeRecent.toString()}
const jobs = new Map()
const finish = (id, job, error) => {
  jobs.delete(id)
  try {
    job.db.close()
  } catch {}
  parentPort.postMessage({commits: job.commits, error, job: id})
}
parentPort.on('message', (m) => {
  if (m.type === 'start') {
    let db
    try {
      db = new Database(m.file, {fileMustExist: true})
      db.pragma('busy_timeout = 5000')
      db.pragma('synchronous = NORMAL')
      const state = readHistoryState(db)
      // A build from the first commit ends merged whatever waits: no read uses the index before it ends.
      const job = {commits: 0, db, error: undefined, full: state.pos === 0, mergeAt: m.mergeAt, state}
      job.scanner = commitScanner(parseTrailers, new StringDecoder('utf8'), (batch) => {
        appendCommits(db, state, batch, asOfKey)
        job.commits += batch.length
        // Mid-walk (a full build, a long catch-up) only well past the mark: see 'end'.
        if (mergeDue(state, job.mergeAt, 4)) mergeRecent(db, state)
      }, m.batchSize)
      jobs.set(m.job, job)
    } catch (error) {
      if (db) db.close()
      parentPort.postMessage({commits: 0, error: error.message, job: m.job})
    }
    return
  }
  const job = jobs.get(m.job)
  if (!job) return
  if (m.type === 'abort') return finish(m.job, job, 'aborted')
  if (job.error === undefined) {
    try {
      if (m.type === 'data') job.scanner.push(m.bytes)
      else {
        job.scanner.end()
        if ((m.merge || job.full) && mergeDue(job.state, job.mergeAt)) mergeRecent(job.db, job.state)
      }
    } catch (error) {
      job.error = error.message
    }
  }
  if (m.type === 'end') finish(m.job, job, job.error)
})
`

/** How long a background catch-up gathers git's output before handing it to the thread. */
const GATHER_MS = 50

interface JobEnd {
  commits: number
  error?: string
}

export class HistoryWorker {
  /** @param mergeAt how many commits the file's recent tables gather before they move into the sealed ones (history-store.ts mergeDue). */
  constructor(private readonly mergeAt = MERGE_AT) {}

  private readonly jobs = new JobWorker<JobEnd>({failed: (error) => ({commits: 0, error}), name: 'history worker', source: () => WORKER, workerData: {module: sqliteModule}})

  /**
   * Walks `range` of `repo` (history-scan.ts logArgs) and appends its commits to the history file
   * `file`; resolves with how many. `stillWanted` runs before each chunk and throws to stop the
   * walk (the branch was removed). Commits appended before a failure stay (each batch is one
   * transaction): the caller reloads the file's state either way.
   *
   * While requests keep arriving the walk is held (background-gate.ts): git's output is no longer
   * read, so git waits on its full pipe and the worker runs out of work, until the requests stop
   * or the bounded hold runs out, or `urgent()` says a request waits for this catch-up.
   */
  async scan(file: string, repo: string, range: string[], signal: AbortSignal, stillWanted: () => void, urgent: () => boolean = () => false, batchSize = 2000): Promise<number> {
    const {answer: ended, post} = this.jobs.start({batchSize, file, mergeAt: this.mergeAt, type: 'start'})
    // git flushes its output after every commit, so the helper's chunks are often a few hundred
    // bytes: they are gathered and sent every GATHER_MS (or per 256 KB), not one message each (a
    // postMessage per chunk cost the loop's thread ~0.3 s at 100k commits). Once per turn of the
    // loop was still a message every few commits under writes, ~5 us of the loop per write
    // (docs/benchmarks.md, "write-loop"); a request waiting for this catch-up gets each turn's.
    let gathered: Buffer[] = []
    let bytes = 0
    let queued = false
    let timer: NodeJS.Timeout | undefined
    const gate = new BackgroundGate()
    let control: StreamControl | undefined
    let holding = false
    const hold = (): void => {
      if (holding || !control || urgent() || !gate.hold()) return
      holding = true
      control.pause()
      void gate.pass(signal, urgent).then(() => {
        holding = false
        control?.resume()
      })
    }
    const send = (): void => {
      queued = false
      clearTimeout(timer)
      timer = undefined
      if (bytes === 0) return
      const out = new Uint8Array(bytes)
      let at = 0
      for (const b of gathered) {
        out.set(b, at)
        at += b.length
      }
      gathered = []
      bytes = 0
      post({bytes: out, type: 'data'}, [out.buffer])
    }
    try {
      await gitStream(
        repo,
        logArgs(range),
        (chunk) => {
          stillWanted()
          hold()
          gathered.push(chunk)
          bytes += chunk.length
          // A read that came to wait for this catch-up meanwhile does not wait out the gathering.
          if (bytes >= 256 * 1024 || (timer !== undefined && urgent())) send()
          else if (!queued) {
            queued = true
            if (urgent()) setImmediate(send)
            else timer = setTimeout(send, GATHER_MS)
          }
        },
        signal,
        'git log',
        {background: true, control: (c) => (control = c)},
      )
      send()
    } catch (error) {
      clearTimeout(timer)
      post({type: 'abort'})
      await ended
      throw error
    }
    // The merge (at 1M commits ~0.3-0.8 s of this thread, once per MERGE_AT commits) waits for a
    // catch-up no read waits for; past 4x the mark it runs mid-walk whatever waits.
    post({merge: !urgent(), type: 'end'})
    const r = await ended
    if (r.error !== undefined) throw new Error(`history index not written: ${r.error}`)
    return r.commits
  }

  close(): Promise<void> {
    return this.jobs.close()
  }
}
