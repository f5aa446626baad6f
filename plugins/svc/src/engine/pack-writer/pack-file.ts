/**
 * One pack file being written: objects appended under a temporary name in `objects/pack/`, then
 * at `finish()` the object count in the header, the trailing SHA-1, a v2 `.idx`, fsync of both,
 * and a rename to `pack-<sha>.pack` / `.idx` (pack first, index last, as git itself does: a
 * reader finds packs through their index). Until then git sees nothing of it; a process killed
 * before leaves only the temporary file, which the next writer removes (`removeStaleTemps`).
 */
import {hash, createHash} from 'node:crypto'
import {closeSync, fsyncSync, openSync, readdirSync, readSync, renameSync, rmSync, writeSync, writevSync} from 'node:fs'
import {join} from 'node:path'
import zlib from 'node:zlib'

export const OBJ_COMMIT = 1
export const OBJ_TREE = 2
export const OBJ_BLOB = 3
export const OBJ_OFS_DELTA = 6

const TYPE_NAMES = ['', 'commit', 'tree', 'blob']
export const TEMP_PREFIX = 'tmp_svcpack_'
const FLUSH_BYTES = 1024 * 1024

/** The object id git gives `data` of `type`. */
export function objectId(type: number, data: Uint8Array): Buffer {
  const h = createHash('sha1')
  h.update(`${TYPE_NAMES[type]} ${data.length}\0`)
  h.update(data)
  return h.digest()
}

/** Same as objectId, in one native call for the common small object (crypto.hash is a third of a Hash object's cost). */
export function objectIdSmall(type: number, data: Uint8Array): Buffer {
  if (data.length > 16 * 1024) return objectId(type, data)
  const head = `${TYPE_NAMES[type]} ${data.length}\0`
  const buf = Buffer.allocUnsafe(head.length + data.length)
  buf.write(head, 0, 'latin1')
  buf.set(data, head.length)
  return hash('sha1', buf, 'buffer') as unknown as Buffer
}

interface Entry {
  crc: number
  offset: number
  sha: Buffer
}

/** The pack entry header: type and inflated size, 7 bits a byte after the first 4. */
function entryHeader(type: number, size: number, ofs?: number): Buffer {
  const bytes: number[] = []
  let c = (type << 4) | (size & 15)
  size = Math.floor(size / 16)
  while (size > 0) {
    bytes.push(c | 0x80)
    c = size & 0x7f
    size = Math.floor(size / 128)
  }
  bytes.push(c)
  if (ofs !== undefined) {
    // OFS_DELTA's base distance: big-endian 7-bit groups, each but the last minus one (pack-format.txt).
    const tail = [ofs & 0x7f]
    ofs = Math.floor(ofs / 128)
    while (ofs > 0) {
      ofs -= 1
      tail.unshift(0x80 | (ofs & 0x7f))
      ofs = Math.floor(ofs / 128)
    }
    bytes.push(...tail)
  }
  return Buffer.from(bytes)
}

export class PackFile {
  private readonly fd: number
  private readonly tempPath: string
  private readonly entries: Entry[] = []
  /** Object id (latin1 of the 20 bytes) -> entry index, so no object goes in twice. */
  private readonly byId = new Map<string, number>()
  private pending: Buffer[] = []
  private pendingBytes = 0
  private size = 0
  private finished = false

  constructor(private readonly packDir: string) {
    this.tempPath = join(packDir, `${TEMP_PREFIX}${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}.pack`)
    // Read back at finish() for the trailer; read-only once renamed, as git leaves its packs.
    this.fd = openSync(this.tempPath, 'wx+', 0o444)
    // The count is written at finish(); until then the header says 0.
    const head = Buffer.alloc(12)
    head.write('PACK', 0, 'latin1')
    head.writeUInt32BE(2, 4)
    this.append(head)
  }

  get count(): number {
    return this.entries.length
  }

  /** Bytes written so far (header included). */
  get bytes(): number {
    return this.size
  }

  /** Offset of the object `id` in this pack, or -1. */
  offsetOf(id: Buffer): number {
    const i = this.byId.get(id.toString('latin1'))
    return i === undefined ? -1 : this.entries[i].offset
  }

  /** Appends a whole object (its zlib stream `z` of `size` inflated bytes); returns its offset. */
  add(type: number, id: Buffer, size: number, z: Buffer): number {
    return this.put(id, entryHeader(type, size), z)
  }

  /** Appends an OFS_DELTA against the object at `baseOffset` of this pack. */
  addDelta(id: Buffer, baseOffset: number, deltaSize: number, z: Buffer): number {
    return this.put(id, entryHeader(OBJ_OFS_DELTA, deltaSize, this.size - baseOffset), z)
  }

  private put(id: Buffer, head: Buffer, z: Buffer): number {
    const offset = this.size
    this.entries.push({crc: zlib.crc32(z, zlib.crc32(head)), offset, sha: id})
    this.byId.set(id.toString('latin1'), this.entries.length - 1)
    this.append(head)
    this.append(z)
    return offset
  }

  private append(b: Buffer): void {
    this.pending.push(b)
    this.pendingBytes += b.length
    this.size += b.length
    if (this.pendingBytes >= FLUSH_BYTES) this.flush()
  }

  private flush(): void {
    let parts = this.pending
    while (parts.length > 0) {
      // writev takes at most IOV_MAX (1,024) buffers a call and may write less than asked.
      const batch = parts.slice(0, 1024)
      let written = writevSync(this.fd, batch)
      let i = 0
      while (i < batch.length && written >= batch[i].length) written -= batch[i++].length
      if (i < batch.length) batch[i] = batch[i].subarray(written)
      parts = [...batch.slice(i), ...parts.slice(1024)]
    }
    this.pending = []
    this.pendingBytes = 0
  }

  /**
   * Makes the pack part of the repository: header count, trailer, index, fsync, rename.
   * Returns the pack's name (its trailer's hex), or undefined when it held no object (nothing is left behind).
   */
  finish(): string | undefined {
    this.finished = true
    if (this.entries.length === 0) {
      closeSync(this.fd)
      rmSync(this.tempPath, {force: true})
      return undefined
    }
    this.flush()
    const count = Buffer.alloc(4)
    count.writeUInt32BE(this.entries.length)
    writeSync(this.fd, count, 0, 4, 8)
    // The trailer hashes the header too, whose count was only known now: read the file back (it is in the page cache).
    const h = createHash('sha1')
    const buf = Buffer.allocUnsafe(FLUSH_BYTES)
    for (let at = 0; at < this.size; ) {
      const n = readSync(this.fd, buf, 0, Math.min(buf.length, this.size - at), at)
      if (n <= 0) throw new Error(`short read of ${this.tempPath} at ${at}`)
      h.update(buf.subarray(0, n))
      at += n
    }
    const trailer = h.digest()
    writeSync(this.fd, trailer, 0, 20, this.size)
    fsyncSync(this.fd)
    closeSync(this.fd)
    const name = trailer.toString('hex')
    const idxTemp = this.tempPath.replace(/\.pack$/, '.idx')
    const fd = openSync(idxTemp, 'wx', 0o444)
    try {
      writeSync(fd, this.index(trailer))
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    renameSync(this.tempPath, join(this.packDir, `pack-${name}.pack`))
    renameSync(idxTemp, join(this.packDir, `pack-${name}.idx`))
    const dir = openSync(this.packDir, 'r')
    try {
      fsyncSync(dir)
    } finally {
      closeSync(dir)
    }
    return name
  }

  /** Removes the temporary file (a writer giving up); nothing of it was visible to git. */
  abort(): void {
    if (this.finished) return
    this.finished = true
    try {
      closeSync(this.fd)
    } catch {
      // already closed
    }
    rmSync(this.tempPath, {force: true})
  }

  /** The v2 index (gitformat-pack): fan-out, sorted ids, CRC32s, offsets, large offsets, checksums. */
  private index(packSha: Buffer): Buffer {
    const sorted = [...this.entries].sort((a, b) => Buffer.compare(a.sha, b.sha))
    const n = sorted.length
    const large = sorted.filter((e) => e.offset >= 0x80_00_00_00).length
    const out = Buffer.alloc(8 + 1024 + n * 28 + large * 8 + 40)
    out.writeUInt32BE(0xff_74_4f_63, 0)
    out.writeUInt32BE(2, 4)
    const fan = new Uint32Array(256)
    for (const e of sorted) fan[e.sha[0]]++
    let acc = 0
    for (let i = 0; i < 256; i++) {
      acc += fan[i]
      out.writeUInt32BE(acc, 8 + i * 4)
    }
    let at = 8 + 1024
    for (const e of sorted) {
      e.sha.copy(out, at)
      at += 20
    }
    for (const e of sorted) {
      out.writeUInt32BE(e.crc >>> 0, at)
      at += 4
    }
    let li = 0
    const largeAt = at + n * 4
    for (const e of sorted) {
      if (e.offset >= 0x80_00_00_00) {
        out.writeUInt32BE((0x80_00_00_00 | li) >>> 0, at)
        out.writeBigUInt64BE(BigInt(e.offset), largeAt + li * 8)
        li++
      } else out.writeUInt32BE(e.offset, at)
      at += 4
    }
    at = largeAt + large * 8
    packSha.copy(out, at)
    ;(hash('sha1', out.subarray(0, at + 20), 'buffer') as unknown as Buffer).copy(out, at + 20)
    return out
  }
}

/** Removes what a writer killed before its checkpoint left: temporary packs and indexes, never a finished pack. */
export function removeStaleTemps(packDir: string): string[] {
  const removed: string[] = []
  let names: string[] = []
  try {
    names = readdirSync(packDir)
  } catch {
    return removed
  }
  for (const name of names) {
    if (!name.startsWith(TEMP_PREFIX)) continue
    rmSync(join(packDir, name), {force: true})
    removed.push(name)
  }
  return removed
}
