/**
 * The pack writer's thread: applies the records the engine's thread sends, in order, and answers
 * each checkpoint once its pack is in the repository and the refs are moved.
 */
import {readFileSync} from 'node:fs'
import {getHeapStatistics} from 'node:v8'
import {parentPort, workerData} from 'node:worker_threads'

import {PackBuilder} from './builder.js'
import {decodeRecords, REC_CHECKPOINT, REC_RESTART} from './protocol.js'

export type ToWorker = {data: ArrayBuffer; type: 'records'} | {type: 'close'} | {type: 'stats'}
export type FromWorker =
  | {bytes: number; type: 'consumed'}
  | {token: number; type: 'checkpointed'}
  | {message: string; type: 'error'}
  | {type: 'closed'}
  | {cpu: number; heapBytes: number; stats: PackBuilder['stats']; type: 'stats'}

const port = parentPort!
const data = workerData as {env: NodeJS.ProcessEnv; repo: string; treeCacheBytes?: number}
const post = (m: FromWorker): void => port.postMessage(m)

let builder: PackBuilder
try {
  builder = new PackBuilder(data.repo, data.env, data.treeCacheBytes)
} catch (error) {
  post({message: (error as Error).message, type: 'error'})
  throw error
}
const queue: ArrayBuffer[] = []
let running = false
let failed = false
let closing = false

port.on('message', (m: ToWorker) => {
  if (m.type === 'records') {
    queue.push(m.data)
    if (!running && !failed) pump()
  } else if (m.type === 'stats') post({cpu: threadCpu(), heapBytes: getHeapStatistics().used_heap_size, stats: builder.stats, type: 'stats'})
  else {
    closing = true
    if (!running) finish()
  }
})

/**
 * Bytes applied since the last 'consumed' message: one message a megabyte, not one a batch. Not
 * when the queue runs dry either (that was a message per batch, a few us of both threads' CPU a
 * write): the writer's count of bytes in flight is then at most a megabyte high, well under its
 * 16 MB high-water mark, so a writer waiting in drain() always gets the message that frees it.
 */
let unreported = 0
const REPORT_BYTES = 1024 * 1024

/**
 * Applies every queued batch. Synchronous (reads and the ref move included), so it runs in one
 * go from the message that queued the work; messages that arrive meanwhile wait for the next turn.
 */
function pump(): void {
  running = true
  try {
    while (queue.length > 0) {
      const batch = queue.shift()!
      for (const r of decodeRecords(batch)) {
        builder.apply(r)
        if (r.type === REC_CHECKPOINT || r.type === REC_RESTART) post({token: r.token, type: 'checkpointed'})
      }
      unreported += batch.byteLength
      if (unreported >= REPORT_BYTES) {
        post({bytes: unreported, type: 'consumed'})
        unreported = 0
      }
    }
  } catch (error) {
    failed = true
    builder.abort()
    post({message: (error as Error).message, type: 'error'})
  }
  running = false
  if (closing) finish()
}

function finish(): void {
  // close() checkpointed first; anything else would be dropped, as a killed writer's is.
  if (!failed) builder.abort()
  post({type: 'closed'})
  port.close()
}

/** This thread's CPU seconds (user + system), for the bench. */
function threadCpu(): number {
  try {
    const f = readFileSync('/proc/thread-self/stat', 'utf8')
    const v = f.slice(f.lastIndexOf(')') + 2).split(' ').map(Number)
    return (v[11] + v[12]) / 100
  } catch {
    return Number.NaN
  }
}
