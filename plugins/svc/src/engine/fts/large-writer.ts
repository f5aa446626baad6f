/**
 * Indexes one large acknowledged document in a worker thread with its own SQLite connection:
 * parsing its JSON, gathering its words and the FTS5 insert of that text. The insert alone is one
 * SQLite call of 20-50 ms for a 900 KB document, which on the event loop's thread stalled every
 * client for that long (issue 24's noisy neighbour); here it runs on the other core.
 *
 * Only one connection writes at a time: the full-text index (fulltext.ts) starts a job here only
 * when it is not writing itself, and writes nothing until the job has answered, so neither waits
 * for SQLite's lock. WAL mode lets the main connection read (search) meanwhile. The connection is
 * opened per job and closed after it, so none is left open when a build switches the journal off
 * (fts/store.ts beginBulk); a job costs a millisecond or two more for it, on the worker's thread.
 */
import {JobWorker, sqliteModule} from '../job-worker.js'

import {PUT_SQL} from './store.js'

// Source as a string (as check.ts) so it runs the same from dist and under the test runner; the
// text extraction is the caller's function, so the worker indexes exactly what the thread would.
function workerSource(textOf: (doc: unknown) => string): string {
  return `
const {parentPort, workerData} = require('node:worker_threads')
const Database = require(workerData.module)
const sql = workerData.sql
const __name = (f) => f
const documentText = ${textOf.toString()}
parentPort.on('message', ({body, file, id, job, sha, tbl}) => {
  let text
  try {
    text = documentText(JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8')))
  } catch {
    // Not JSON: the main thread indexes nothing for it and reports why.
    parentPort.postMessage({job, parsed: false})
    return
  }
  let db
  try {
    db = new Database(file, {fileMustExist: true})
    db.pragma('busy_timeout = 5000')
    db.pragma('synchronous = NORMAL')
    let added = false
    db.transaction(() => {
      const row = db.prepare(sql.row).get(id)
      let rowid
      if (row) {
        db.prepare(sql.delText).run(row.rowid)
        db.prepare(sql.updDoc).run(sha, row.rowid)
        rowid = row.rowid
      } else {
        rowid = db.prepare(sql.insDoc).run(id, sha).lastInsertRowid
        added = true
      }
      db.prepare(sql.insText).run(rowid, tbl, text)
    })()
    parentPort.postMessage({added, job, parsed: true})
  } catch (error) {
    parentPort.postMessage({code: error.code, error: error.message, job, parsed: true})
  } finally {
    if (db) db.close()
  }
})
`
}

export type LargeWriteResult = {added: boolean; parsed: true} | {code?: string; error: string; parsed: true} | {parsed: false}

export class LargeDocumentWriter {
  private readonly jobs: JobWorker<LargeWriteResult>

  constructor(textOf: (doc: unknown) => string) {
    this.jobs = new JobWorker<LargeWriteResult>({failed: (error) => ({error, parsed: true}), name: 'index worker', source: () => workerSource(textOf), workerData: {module: sqliteModule, sql: PUT_SQL}})
  }

  /** Indexes `body` as document `id` (table token `tbl`) in `file`; never rejects. */
  put(file: string, id: string, sha: string, tbl: string, body: Buffer): Promise<LargeWriteResult> {
    // Its own copy, transferred: a Buffer is often a view into a larger pooled or request-sized
    // ArrayBuffer, and structured cloning copies the whole backing store (15-35 ms seen in the
    // noisy-neighbour profile); a copy of just the document is a memcpy, and the transfer is free.
    const bytes = new Uint8Array(body.length)
    bytes.set(body)
    return this.jobs.start({body: bytes, file, id, sha, tbl}, [bytes.buffer]).answer
  }

  close(): Promise<void> {
    return this.jobs.close()
  }
}
