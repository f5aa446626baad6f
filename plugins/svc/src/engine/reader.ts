import {type ChildProcessWithoutNullStreams, spawn} from 'node:child_process'

import {EngineError} from './errors.js'
import {gitEnv} from './git.js'

interface Pending {
  reject(err: Error): void
  resolve(value: Buffer | undefined): void
}

/**
 * One long-lived `git cat-file --batch`: object reads are pipelined through it, so a read costs
 * a pipe round trip instead of a process spawn (about 30k reads/s against 550/s for spawning).
 */
export class BlobReader {
  private buf: Buffer = Buffer.alloc(0)
  private child: ChildProcessWithoutNullStreams
  private closed = false
  private queue: Pending[] = []

  constructor(private readonly repo: string) {
    this.child = this.spawn()
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    const exited = new Promise<void>((resolve) => this.child.once('close', () => resolve()))
    this.child.stdin.end()
    await exited
  }

  /** The object's bytes, or undefined if the repository has no such object. */
  read(spec: string): Promise<Buffer | undefined> {
    if (this.closed) return Promise.reject(new EngineError('closed', 'engine is closed'))
    return new Promise((resolve, reject) => {
      this.queue.push({reject, resolve})
      this.child.stdin.write(`${spec}\n`)
    })
  }

  private fail(err: Error): void {
    for (const p of this.queue.splice(0)) p.reject(err)
  }

  private onData(chunk: Buffer): void {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk])
    for (;;) {
      const nl = this.buf.indexOf(10)
      if (nl === -1) return
      const header = this.buf.toString('latin1', 0, nl)
      if (header.endsWith(' missing') || header.endsWith(' ambiguous')) {
        this.buf = this.buf.subarray(nl + 1)
        this.queue.shift()?.resolve(undefined)
        continue
      }
      const size = Number(header.slice(header.lastIndexOf(' ') + 1))
      if (!Number.isInteger(size)) {
        this.fail(new EngineError('internal', `unexpected cat-file output: ${header}`))
        this.buf = Buffer.alloc(0)
        return
      }
      if (this.buf.length < nl + 1 + size + 1) return
      const body = Buffer.from(this.buf.subarray(nl + 1, nl + 1 + size))
      this.buf = this.buf.subarray(nl + 1 + size + 1)
      this.queue.shift()?.resolve(body)
    }
  }

  private spawn(): ChildProcessWithoutNullStreams {
    // Own process group: a Ctrl-C in the terminal reaches svc, which then shuts git down in order.
    const child = spawn('git', ['-C', this.repo, 'cat-file', '--batch'], {detached: true, env: gitEnv(), stdio: ['pipe', 'pipe', 'pipe']})
    child.stdout.on('data', (c: Buffer) => this.onData(c))
    child.stderr.resume()
    child.stdin.on('error', () => {})
    child.on('close', () => {
      this.fail(new EngineError('internal', 'git cat-file exited'))
      if (!this.closed) {
        // Restart so one crashed reader does not take every later read down with it.
        this.buf = Buffer.alloc(0)
        this.child = this.spawn()
      }
    })
    return child
  }
}
