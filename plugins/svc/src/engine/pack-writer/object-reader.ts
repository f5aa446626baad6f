/**
 * The worker's own `git cat-file --batch`, for trees (and branch tips) it has not written itself.
 * Requests are pipelined; answers come back in order.
 */
import {type ChildProcessWithoutNullStreams, spawn} from 'node:child_process'

export interface GitObject {
  data: Buffer
  id: string
  type: string
}

export class ObjectReader {
  private readonly child: ChildProcessWithoutNullStreams
  private readonly waiting: Array<{reject(e: Error): void; resolve(o: GitObject | undefined): void}> = []
  private buf: Buffer = Buffer.alloc(0)
  private failed: Error | undefined

  constructor(repo: string, env: NodeJS.ProcessEnv) {
    this.child = spawn('git', ['-C', repo, 'cat-file', '--batch'], {env, stdio: ['pipe', 'pipe', 'pipe']})
    this.child.stdin.on('error', () => {})
    this.child.stdout.on('data', (d: Buffer) => this.onData(d))
    let err = ''
    this.child.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-2000)))
    this.child.on('close', (code) => this.fail(new Error(`git cat-file exited (${code}): ${err.trim()}`)))
  }

  /** The object `rev` names (an id or `refs/heads/x^0`), or undefined when it does not exist. */
  read(rev: string): Promise<GitObject | undefined> {
    if (this.failed) return Promise.reject(this.failed)
    return new Promise((resolve, reject) => {
      this.waiting.push({reject, resolve})
      this.child.stdin.write(`${rev}\n`)
    })
  }

  /** Requests until `uncork()` go to cat-file in one write. */
  cork(): void {
    this.child.stdin.cork()
  }

  uncork(): void {
    this.child.stdin.uncork()
  }

  close(): void {
    this.child.stdin.end()
  }

  /** CPU seconds the cat-file process used so far (Linux), for the bench's accounting. */
  get pid(): number | undefined {
    return this.child.pid
  }

  private onData(d: Buffer): void {
    this.buf = this.buf.length === 0 ? d : Buffer.concat([this.buf, d])
    let at = 0
    while (this.waiting.length > 0) {
      const nl = this.buf.indexOf(10, at)
      if (nl === -1) break
      const header = this.buf.toString('latin1', at, nl)
      if (header.endsWith(' missing') || header.endsWith(' ambiguous')) {
        this.waiting.shift()!.resolve(undefined)
        at = nl + 1
        continue
      }
      const [id, type, sizeText] = header.split(' ')
      const size = Number(sizeText)
      if (this.buf.length < nl + 1 + size + 1) break
      this.waiting.shift()!.resolve({data: Buffer.from(this.buf.subarray(nl + 1, nl + 1 + size)), id, type})
      at = nl + 1 + size + 1
    }
    this.buf = this.buf.subarray(at)
  }

  private fail(e: Error): void {
    this.failed ??= e
    for (const w of this.waiting.splice(0)) w.reject(e)
  }
}
