/**
 * One pack file being written: objects appended under a temporary name in `objects/pack/`, then
 * at `finish()` the object count in the header, the trailing SHA-1, a v2 `.idx`, fsync of both,
 * and a rename to `pack-<sha>.pack` / `.idx` (pack first, index last, as git itself does: a
 * reader finds packs through their index). Until then git sees nothing of it; a process killed
 * before leaves only the temporary file, which the next writer removes (`removeStaleTemps`).
 *
 * Objects are encoded in place into one staging buffer (entry header, then the zlib stream) and
 * written out a megabyte at a time: a Buffer per object part cost more in allocation and garbage
 * collection than the encoding itself.
 */
import {createHash, hash} from 'node:crypto'
import {closeSync, fstatSync, fsyncSync, openSync, readdirSync, readSync, renameSync, rmSync, writeSync} from 'node:fs'
import {join} from 'node:path'
import zlib from 'node:zlib'

import {type Deflater, storedZlibInto, storedZlibSize} from './zlib-stream.js'

export const OBJ_COMMIT = 1
export const OBJ_TREE = 2
export const OBJ_BLOB = 3
export const OBJ_OFS_DELTA = 6

const TYPE_NAMES = ['', 'commit', 'tree', 'blob']
export const TEMP_PREFIX = 'tmp_svcpack_'
const STAGE_BYTES = 1024 * 1024

/** An object id as the 20 bytes in a latin1 ('binary') string: a Map key and a tree entry's id without a Buffer each. */
export type ObjectKey = string

let scratch = Buffer.allocUnsafeSlow(64 * 1024)

/**
 * A buffer holding `"<type> <size>\0"` followed by room for `size` bytes: fill it from the
 * returned `at`, then `idOfScratch`. One native hash call per object, no allocation.
 */
export function objectScratch(type: number, size: number): {at: number; buf: Buffer} {
  const head = `${TYPE_NAMES[type]} ${size}\0`
  if (scratch.length < head.length + size) scratch = Buffer.allocUnsafeSlow(head.length + size + 64 * 1024)
  const at = scratch.write(head, 0, 'latin1')
  return {at, buf: scratch}
}

export function idOfScratch(end: number): ObjectKey {
  return hash('sha1', scratch.subarray(0, end), 'binary')
}

/** The object id git gives `data` of `type`. */
export function objectKey(type: number, data: Uint8Array): ObjectKey {
  if (data.length > 256 * 1024) {
    const h = createHash('sha1')
    h.update(`${TYPE_NAMES[type]} ${data.length}\0`)
    return h.update(data).digest('binary')
  }
  const {at, buf} = objectScratch(type, data.length)
  buf.set(data, at)
  return idOfScratch(at + data.length)
}

export const keyHex = (k: ObjectKey): string => Buffer.from(k, 'latin1').toString('hex')

interface Entry {
  crc: number
  key: ObjectKey
  offset: number
}

export class PackFile {
  private readonly fd: number
  private readonly tempPath: string
  private readonly entries: Entry[] = []
  /** Object id -> offset, so no object goes in twice. */
  private readonly byKey = new Map<ObjectKey, number>()
  private stage = Buffer.allocUnsafeSlow(STAGE_BYTES)
  private staged = 0
  /** Bytes already written to the file. */
  private flushed = 0
  private finished = false

  constructor(private readonly packDir: string) {
    this.tempPath = join(packDir, `${TEMP_PREFIX}${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}.pack`)
    // Read back at finish() for the trailer; read-only once renamed, as git leaves its packs.
    this.fd = openSync(this.tempPath, 'wx+', 0o444)
    // The count is written at finish(); until then the header says 0.
    this.stage.write('PACK', 0, 'latin1')
    this.stage.writeUInt32BE(2, 4)
    this.stage.writeUInt32BE(0, 8)
    this.staged = 12
  }

  get count(): number {
    return this.entries.length
  }

  /** Bytes written so far (header included). */
  get bytes(): number {
    return this.flushed + this.staged
  }

  /** Offset of the object in this pack, or -1. */
  offsetOf(key: ObjectKey): number {
    return this.byKey.get(key) ?? -1
  }

  /** Appends a whole object as stored zlib blocks; returns its offset. */
  addStored(type: number, key: ObjectKey, data: Uint8Array): number {
    const at = this.begin(16 + storedZlibSize(data.length))
    let end = entryHeader(this.stage, at, type, data.length)
    end = storedZlibInto(data, this.stage, end)
    return this.end(key, at, end)
  }

  /** Appends a whole object through the native deflate stream. */
  addDeflated(type: number, key: ObjectKey, data: Uint8Array, deflater: Deflater): number {
    const at = this.begin(16 + deflater.bound(data.length))
    const end = entryHeader(this.stage, at, type, data.length)
    return this.end(key, at, end + deflater.deflateInto(data, this.stage, end))
  }

  /** Appends an OFS_DELTA (stored zlib) against the object at `baseOffset` of this pack. */
  addDelta(key: ObjectKey, baseOffset: number, delta: Uint8Array): number {
    const at = this.begin(32 + storedZlibSize(delta.length))
    let end = entryHeader(this.stage, at, OBJ_OFS_DELTA, delta.length)
    end = ofsBytes(this.stage, end, this.flushed + at - baseOffset)
    end = storedZlibInto(delta, this.stage, end)
    return this.end(key, at, end)
  }

  /** Room for `n` bytes in the staging buffer; returns where the object starts in it. */
  private begin(n: number): number {
    if (this.staged + n > this.stage.length) {
      this.flush()
      if (n > this.stage.length) this.stage = Buffer.allocUnsafeSlow(n)
    }
    return this.staged
  }

  private end(key: ObjectKey, at: number, end: number): number {
    const offset = this.flushed + at
    this.entries.push({crc: zlib.crc32(this.stage.subarray(at, end)), key, offset})
    this.byKey.set(key, offset)
    this.staged = end
    return offset
  }

  private flush(): void {
    let done = 0
    while (done < this.staged) done += writeSync(this.fd, this.stage, done, this.staged - done, this.flushed + done)
    this.flushed += this.staged
    this.staged = 0
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
    const size = this.flushed
    const count = Buffer.alloc(4)
    count.writeUInt32BE(this.entries.length)
    writeSync(this.fd, count, 0, 4, 8)
    // The trailer hashes the header too, whose count was only known now: read the file back (it is in the page cache).
    const h = createHash('sha1')
    const buf = this.stage
    for (let at = 0; at < size; ) {
      const n = readSync(this.fd, buf, 0, Math.min(buf.length, size - at), at)
      if (n <= 0) throw new Error(`short read of ${this.tempPath} at ${at}`)
      h.update(buf.subarray(0, n))
      at += n
    }
    const trailer = h.digest()
    writeSync(this.fd, trailer, 0, 20, size)
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
    const sorted = sortByKey(this.entries)
    const n = sorted.length
    let large = 0
    for (const e of sorted) if (e.offset >= 0x80_00_00_00) large++
    const out = Buffer.alloc(8 + 1024 + n * 28 + large * 8 + 40)
    out.writeUInt32BE(0xff_74_4f_63, 0)
    out.writeUInt32BE(2, 4)
    const fan = new Uint32Array(256)
    for (const e of sorted) fan[e.key.charCodeAt(0)]++
    let acc = 0
    for (let i = 0; i < 256; i++) {
      acc += fan[i]
      out.writeUInt32BE(acc, 8 + i * 4)
    }
    let at = 8 + 1024
    // One native write for all the ids, not one per object.
    at += out.write(sorted.map((e) => e.key).join(''), at, 'latin1')
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
    out.write(hash('sha1', out.subarray(0, at + 20), 'binary'), at + 20, 'latin1')
    return out
  }
}

/** Room below 2^53 for an index beside a 32-bit id prefix in one float. */
const ORDER_BITS = 2 ** 21

/**
 * `entries` in their ids' byte order. Sorted as numbers (each id's first four bytes with its
 * index below them) by the typed array's native sort, then runs sharing those four bytes by
 * the whole id: a comparator called from JavaScript for every pair cost 4-6 ms a checkpoint.
 */
export function sortByKey<T extends {key: ObjectKey}>(entries: T[]): T[] {
  const n = entries.length
  // latin1 strings compare as their bytes do: a sort without a Buffer.compare call per pair.
  if (n >= ORDER_BITS) return [...entries].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
  const order = new Float64Array(n)
  for (let i = 0; i < n; i++) {
    const k = entries[i].key
    const prefix = ((k.charCodeAt(0) << 24) | (k.charCodeAt(1) << 16) | (k.charCodeAt(2) << 8) | k.charCodeAt(3)) >>> 0
    order[i] = prefix * ORDER_BITS + i
  }
  order.sort()
  const out = new Array<T>(n)
  for (let i = 0; i < n; ) {
    const prefix = Math.floor(order[i] / ORDER_BITS)
    let j = i + 1
    while (j < n && Math.floor(order[j] / ORDER_BITS) === prefix) j++
    if (j - i === 1) out[i] = entries[order[i] % ORDER_BITS]
    else {
      const run = []
      for (let k = i; k < j; k++) run.push(entries[order[k] % ORDER_BITS])
      run.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
      for (let k = i; k < j; k++) out[k] = run[k - i]
    }
    i = j
  }
  return out
}

/** The pack entry header at `at`: type and inflated size, 7 bits a byte after the first 4. Returns the end. */
function entryHeader(out: Buffer, at: number, type: number, size: number): number {
  let c = (type << 4) | (size & 15)
  size = Math.floor(size / 16)
  while (size > 0) {
    out[at++] = c | 0x80
    c = size & 0x7f
    size = Math.floor(size / 128)
  }
  out[at++] = c
  return at
}

/** OFS_DELTA's base distance: big-endian 7-bit groups, each but the last minus one (gitformat-pack). */
function ofsBytes(out: Buffer, at: number, ofs: number): number {
  const tail = [ofs & 0x7f]
  ofs = Math.floor(ofs / 128)
  while (ofs > 0) {
    ofs -= 1
    tail.unshift(0x80 | (ofs & 0x7f))
    ofs = Math.floor(ofs / 128)
  }
  for (const b of tail) out[at++] = b
  return at
}

/**
 * Removes what a writer killed before its checkpoint ended left: temporary packs and indexes, and
 * a pack renamed into place whose index was not (killed between finish()'s two renames; its
 * temporary index names it). A finished pack with its index is never touched, nor a `pack-*` no
 * temporary index of this writer names (git's own, perhaps being written). Nothing removed here
 * was referenced: the refs move only after both renames.
 */
export function removeStaleTemps(packDir: string): string[] {
  const removed: string[] = []
  let names: string[] = []
  try {
    names = readdirSync(packDir)
  } catch {
    return removed
  }
  const present = new Set(names)
  for (const name of names) {
    if (!name.startsWith(TEMP_PREFIX)) continue
    if (name.endsWith('.idx')) {
      const pack = packNamedBy(join(packDir, name))
      if (pack && present.has(`${pack}.pack`) && !present.has(`${pack}.idx`)) {
        rmSync(join(packDir, `${pack}.pack`), {force: true})
        removed.push(`${pack}.pack`)
      }
    }
    rmSync(join(packDir, name), {force: true})
    removed.push(name)
  }
  return removed
}

/** `pack-<sha>` of the pack a complete v2 index describes (its trailer's first id), or undefined. */
function packNamedBy(idxPath: string): string | undefined {
  let fd: number
  try {
    fd = openSync(idxPath, 'r')
  } catch {
    return undefined
  }
  try {
    const size = fstatSync(fd).size
    if (size < 8 + 1024 + 40) return undefined
    const tail = Buffer.alloc(40)
    if (readSync(fd, tail, 0, 40, size - 40) !== 40) return undefined
    return `pack-${tail.toString('hex', 0, 20)}`
  } finally {
    closeSync(fd)
  }
}
