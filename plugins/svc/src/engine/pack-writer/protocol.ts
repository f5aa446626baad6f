/**
 * What the engine's thread sends the pack writer's worker: records of commits, branch creations,
 * checkpoints and restarts, packed into one buffer per turn of the event loop and transferred
 * (not copied). A structured clone of an object per commit would copy each pooled Buffer's whole
 * 8 KiB slab and cost more than the commit.
 */
export const REC_COMMIT = 1
export const REC_BRANCH = 2
export const REC_CHECKPOINT = 3
export const REC_RESTART = 4

/** The commit continues a branch that exists in the repository (fast-import's `from <ref>^0`). */
export const FLAG_FROM_REF = 1

export interface FileRecord {
  content?: Buffer
  path: string
}

export type WriterRecord =
  | {author: string; branch: string; committer: string; files: FileRecord[]; fromRef: boolean; message: Buffer; type: typeof REC_COMMIT}
  | {from: string; fromRef: boolean; name: string; type: typeof REC_BRANCH}
  | {token: number; type: typeof REC_CHECKPOINT | typeof REC_RESTART}

export class RecordEncoder {
  private buf = Buffer.allocUnsafeSlow(64 * 1024)
  private at = 0

  get size(): number {
    return this.at
  }

  commit(branch: string, fromRef: boolean, author: string, committer: string, message: string, files: Array<{content?: Buffer; path: string}>): void {
    this.u8(REC_COMMIT)
    this.u8(fromRef ? FLAG_FROM_REF : 0)
    this.str(branch)
    this.str(author)
    this.str(committer)
    this.str(message)
    this.u32(files.length)
    for (const f of files) {
      this.u8(f.content === undefined ? 0 : 1)
      this.str(f.path)
      if (f.content !== undefined) this.bytes(f.content)
    }
  }

  branch(name: string, from: string, fromRef: boolean): void {
    this.u8(REC_BRANCH)
    this.u8(fromRef ? FLAG_FROM_REF : 0)
    this.str(name)
    this.str(from)
  }

  token(type: typeof REC_CHECKPOINT | typeof REC_RESTART, token: number): void {
    this.u8(type)
    this.u32(token)
  }

  /** The records so far in a buffer of their own (to transfer); the encoder starts empty again. */
  take(): ArrayBuffer {
    const out = new ArrayBuffer(this.at)
    new Uint8Array(out).set(this.buf.subarray(0, this.at))
    this.at = 0
    return out
  }

  private room(n: number): void {
    if (this.at + n <= this.buf.length) return
    const next = Buffer.allocUnsafeSlow(Math.max(this.buf.length * 2, this.at + n))
    this.buf.copy(next, 0, 0, this.at)
    this.buf = next
  }

  private u8(v: number): void {
    this.room(1)
    this.buf[this.at++] = v
  }

  private u32(v: number): void {
    this.room(4)
    this.buf.writeUInt32LE(v, this.at)
    this.at += 4
  }

  private str(s: string): void {
    // At most 3 bytes per UTF-16 unit; the length is written once the bytes are.
    this.room(4 + s.length * 3)
    const n = this.buf.write(s, this.at + 4, 'utf8')
    this.buf.writeUInt32LE(n, this.at)
    this.at += 4 + n
  }

  private bytes(b: Uint8Array): void {
    this.room(4 + b.length)
    this.buf.writeUInt32LE(b.length, this.at)
    this.buf.set(b, this.at + 4)
    this.at += 4 + b.length
  }
}

export function* decodeRecords(ab: ArrayBuffer): Generator<WriterRecord> {
  const b = Buffer.from(ab)
  let at = 0
  const u32 = (): number => {
    const v = b.readUInt32LE(at)
    at += 4
    return v
  }
  const bytes = (): Buffer => {
    const n = u32()
    const v = b.subarray(at, at + n)
    at += n
    return v
  }
  const str = (): string => bytes().toString('utf8')
  while (at < b.length) {
    const type = b[at++]
    if (type === REC_COMMIT) {
      const fromRef = (b[at++] & FLAG_FROM_REF) !== 0
      const branch = str()
      const author = str()
      const committer = str()
      const message = bytes()
      const n = u32()
      const files: FileRecord[] = []
      for (let i = 0; i < n; i++) {
        const put = b[at++] === 1
        const path = str()
        files.push(put ? {content: bytes(), path} : {path})
      }
      yield {author, branch, committer, files, fromRef, message, type}
    } else if (type === REC_BRANCH) {
      const fromRef = (b[at++] & FLAG_FROM_REF) !== 0
      const name = str()
      const from = str()
      yield {from, fromRef, name, type}
    } else if (type === REC_CHECKPOINT || type === REC_RESTART) {
      yield {token: u32(), type}
    } else throw new Error(`unknown writer record ${type}`)
  }
}
