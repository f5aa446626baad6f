/**
 * SQLite's `quick_check` of an index file in a worker thread with its own read-only connection:
 * it reads every page (about 0.7 s at 100k documents, ten times that at 1M), which on the main
 * thread would stall every request for that long. WAL mode lets it read a consistent snapshot
 * while the main connection keeps writing.
 */
import {Worker} from 'node:worker_threads'

import {LOWER_THIS_THREAD, sqliteModule} from '../job-worker.js'

// The worker's code is a string (not a file) so it runs the same from dist and from the
// TypeScript sources under the test runner; better-sqlite3 is resolved here and handed over.
const WORKER = `
const {parentPort, workerData} = require('node:worker_threads')
// Background work (at 1M documents ~7 s of a core, which ran beside the first reads after open).
${LOWER_THIS_THREAD}
const Database = require(workerData.module)
let db
let result
try {
  db = new Database(workerData.file, {fileMustExist: true, readonly: true})
  const rows = db.pragma('quick_check', {simple: false})
  result = {problems: rows.map((r) => r.quick_check)}
} catch (error) {
  result = {code: error.code, error: error.message}
} finally {
  if (db) db.close()
}
// Closed before the answer leaves: the engine may then take the file for itself (a bulk build).
parentPort.postMessage(result)
`

/**
 * Resolves when every page of `file` reads back; rejects with an SQLITE_CORRUPT (or SQLite's own)
 * error naming the first problems otherwise.
 */
export function quickCheckFile(file: string): Promise<void> {
  return new Promise((resolve, reject) => {
    // execArgv: [] - a worker inherits the process's node flags, and under `--input-type=module`
    // (a host started with `node -e`) this CommonJS string would fail and the index never be checked.
    const worker = new Worker(WORKER, {eval: true, execArgv: [], workerData: {file, module: sqliteModule}})
    // A check still reading a large index must not keep a closed engine's process alive.
    worker.unref()
    let settled = false
    const done = (error?: Error): void => {
      if (settled) return
      settled = true
      if (error) reject(error)
      else resolve()
    }
    worker.once('message', (m: {code?: string; error?: string; problems?: string[]}) => {
      if (m.error !== undefined) done(Object.assign(new Error(m.error), {code: m.code}))
      else if (m.problems?.length === 1 && m.problems[0] === 'ok') done()
      else done(Object.assign(new Error(`integrity check failed: ${(m.problems ?? []).slice(0, 3).join('; ')}`), {code: 'SQLITE_CORRUPT'}))
    })
    worker.once('error', (error) => done(error))
    worker.once('exit', (code) => done(code === 0 ? undefined : new Error(`index check worker exited with code ${code}`)))
  })
}
