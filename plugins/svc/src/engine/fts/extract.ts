/**
 * Reads documents from Git and turns them into index text in a worker thread, for a build of an
 * index from nothing. A build is three kinds of work: `git cat-file` unpacking blobs, JavaScript
 * parsing each blob's JSON and gathering its words, and SQLite's FTS5 inserts. On one thread the
 * last two take turns (the profile: about half each); here the worker parses batch n+1 while the
 * main thread inserts batch n, so the three run on separate cores.
 *
 * The worker has its own `git cat-file --batch` and answers, per object asked, the document's
 * text, or null when it cannot (a missing or damaged object, bytes that are not JSON, a document
 * not yet in Git): the caller then reads that one through the engine, which reports damage.
 */
import {Worker} from 'node:worker_threads'

import {gitEnv} from '../git.js'

// The worker's code is a string (not a file) so it runs the same from dist and from the
// TypeScript sources under the test runner (see check.ts); the text extraction is the caller's
// own function, passed as source so the index holds exactly what the main thread would index.
function workerSource(textOf: (doc: unknown) => string): string {
  return `
const {parentPort, workerData} = require('node:worker_threads')
const {spawn} = require('node:child_process')
// A function compiled with kept names (the test runner's transform) calls __name.
const __name = (f) => f
const documentText = ${textOf.toString()}
const git = spawn('git', ['-C', workerData.repo, 'cat-file', '--batch'], {env: workerData.env, stdio: ['pipe', 'pipe', 'ignore']})
git.stdin.on('error', () => {})
// Batches in the order asked; each answered when its last object has come back.
const batches = []
let buf = Buffer.alloc(0)
function textOf(body) {
  try {
    return documentText(JSON.parse(body.toString('utf8')))
  } catch {
    return null
  }
}
function settle() {
  while (batches.length > 0 && batches[0].asked === batches[0].out.length) {
    const b = batches.shift()
    parentPort.postMessage({seq: b.seq, texts: b.out})
  }
}
function next() {
  for (const b of batches) if (b.out.length < b.asked) return b
  return undefined
}
// Objects never asked (no sha) are answered without Git.
function skipEmpty() {
  for (let b = next(); b && b.shas[b.out.length] === null; b = next()) b.out.push(null)
}
git.stdout.on('data', (chunk) => {
  buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk])
  let at = 0
  for (;;) {
    skipEmpty()
    const b = next()
    if (!b) break
    const nl = buf.indexOf(10, at)
    if (nl === -1) break
    const header = buf.toString('latin1', at, nl)
    if (header.endsWith(' missing') || header.endsWith(' ambiguous')) {
      b.out.push(null)
      at = nl + 1
      continue
    }
    const size = Number(header.slice(header.lastIndexOf(' ') + 1))
    if (!Number.isInteger(size)) {
      fail()
      return
    }
    if (buf.length < nl + 1 + size + 1) break
    b.out.push(textOf(buf.subarray(nl + 1, nl + 1 + size)))
    at = nl + 1 + size + 1
  }
  buf = buf.subarray(at)
  skipEmpty()
  settle()
})
function fail() {
  // Every batch still open is answered with nulls: the caller reads those documents itself.
  for (const b of batches) while (b.out.length < b.asked) b.out.push(null)
  settle()
  failed = true
}
let failed = false
git.on('close', () => {
  fail()
  parentPort.close()
})
parentPort.on('message', (m) => {
  if (m.end) {
    git.stdin.end()
    return
  }
  const b = {asked: m.shas.length, out: [], seq: m.seq, shas: m.shas}
  batches.push(b)
  if (failed) return fail()
  const lines = m.shas.filter((s) => s !== null)
  if (lines.length > 0) git.stdin.write(lines.join('\\n') + '\\n')
  skipEmpty()
  settle()
})
`
}

/** Texts of documents read in a worker thread; see the file's comment. */
export class TextExtractor {
  private broken = false
  private readonly pending = new Map<number, (texts: Array<null | string>) => void>()
  private seq = 0
  private readonly worker: Worker

  constructor(repo: string, textOf: (doc: unknown) => string) {
    // execArgv: [] for the reason in check.ts.
    this.worker = new Worker(workerSource(textOf), {eval: true, execArgv: [], workerData: {env: gitEnv(), repo}})
    // A build cut short by a close must not keep the process alive.
    this.worker.unref()
    this.worker.on('message', (m: {seq: number; texts: Array<null | string>}) => {
      const resolve = this.pending.get(m.seq)
      this.pending.delete(m.seq)
      resolve?.(m.texts)
    })
    const down = (): void => {
      this.broken = true
      for (const [seq, resolve] of this.pending) {
        this.pending.delete(seq)
        resolve([])
      }
    }
    this.worker.on('error', down)
    this.worker.on('exit', down)
  }

  /**
   * The text of each object (null: not found, not JSON, or the worker is gone: read it another
   * way). `null` in `shas` asks nothing. Never rejects.
   */
  texts(shas: Array<null | string>): Promise<Array<null | string>> {
    if (this.broken) return Promise.resolve(shas.map(() => null))
    const seq = ++this.seq
    return new Promise<Array<null | string>>((resolve) => {
      this.pending.set(seq, (texts) => resolve(shas.map((_, i) => texts[i] ?? null)))
      this.worker.postMessage({seq, shas})
    })
  }

  /** Lets the worker's git finish and the worker exit. */
  close(): void {
    if (!this.broken) this.worker.postMessage({end: true})
  }
}
