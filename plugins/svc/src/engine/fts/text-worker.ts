/**
 * Parses large documents and gathers their index text in a worker thread, for the writes the
 * full-text index applies as they are acknowledged (fulltext.ts drain): the JSON parse and walk of
 * a 900 KB document took 15-25 ms of the event loop's thread (issue 24). The worker is started on
 * the first large document and does not keep the process alive.
 */
import {Worker} from 'node:worker_threads'

// Source as a string (as in extract.ts) so it runs the same from dist and under the test runner;
// the extraction is the caller's own function, so the worker indexes exactly what the thread would.
function workerSource(textOf: (doc: unknown) => string): string {
  return `
const {parentPort} = require('node:worker_threads')
const __name = (f) => f
const documentText = ${textOf.toString()}
parentPort.on('message', ({body, id}) => {
  let text = null
  try {
    text = documentText(JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8')))
  } catch {}
  parentPort.postMessage({id, text})
})
`
}

export class TextWorker {
  private worker: undefined | Worker
  private next = 1
  private readonly waiting = new Map<number, (text: null | string) => void>()

  constructor(private readonly textOf: (doc: unknown) => string) {}

  /** The document's index text, or null when the worker could not make it (the caller then does, and reports why). */
  text(body: Buffer): Promise<null | string> {
    const w = this.start()
    const id = this.next++
    return new Promise((resolve) => {
      this.waiting.set(id, resolve)
      // A copy of the document alone, transferred (see large-writer.ts: cloning a Buffer copies its whole backing store).
      const bytes = new Uint8Array(body.length)
      bytes.set(body)
      w.postMessage({body: bytes, id}, [bytes.buffer])
    })
  }

  async close(): Promise<void> {
    const w = this.worker
    this.worker = undefined
    this.settleAll()
    if (w) await w.terminate()
  }

  private start(): Worker {
    if (this.worker) return this.worker
    // execArgv: [] so a profiler or loader flag of the process does not start in the worker too.
    const w = new Worker(workerSource(this.textOf), {eval: true, execArgv: []})
    w.unref()
    w.on('message', ({id, text}: {id: number; text: null | string}) => {
      const done = this.waiting.get(id)
      this.waiting.delete(id)
      done?.(text)
    })
    const gone = (): void => {
      if (this.worker === w) this.worker = undefined
      this.settleAll()
    }
    w.on('error', gone)
    w.on('exit', gone)
    this.worker = w
    return w
  }

  private settleAll(): void {
    for (const done of this.waiting.values()) done(null)
    this.waiting.clear()
  }
}
