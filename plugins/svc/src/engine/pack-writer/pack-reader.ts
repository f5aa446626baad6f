/**
 * The pack writer's reads of objects it has not written itself (trees, branch tips), straight
 * from the repository's files: each pack's `.idx` (fan-out, then, per first id byte on its first
 * use, the next four bytes of every id and its offset kept in memory: 8 bytes an object, where the
 * whole ids would take 24 and a 1M-document repository holds 8M objects; a match is confirmed by
 * one positioned read of the full id), the pack entry read with one positioned read and
 * inflated, OFS_DELTA/REF_DELTA chains applied (a roll-up's `--window=0` packs have none, `compact`'s
 * have many), then loose objects. Why not `git cat-file --batch` (docs/benchmarks.md, "The pack
 * writer as the default"): a pipe round trip per level woke this thread and cat-file for each tree,
 * and a long-lived child of a worker thread is left a zombie when the thread is terminated.
 * Anything found nowhere here (an alternate object store, a pack added and removed while we looked)
 * is asked of a one-shot `git cat-file --batch`, spawned synchronously (reaped before it returns).
 */
import {spawnSync} from 'node:child_process'
import {closeSync, existsSync, fstatSync, openSync, readdirSync, readFileSync, readSync} from 'node:fs'
import {join} from 'node:path'
import zlib from 'node:zlib'

import {lowerBound} from '../sorted.js'
import type {ObjectKey} from './pack-file.js'
import {Inflater} from './zlib-stream.js'

export interface RawObject {
  data: Buffer
  type: 'blob' | 'commit' | 'tag' | 'tree'
}

const TYPES = ['', 'commit', 'tree', 'blob', 'tag'] as const
const OFS_DELTA = 6
const REF_DELTA = 7
/** Ids read per positioned read while a first-byte range is loaded. */
const LOAD_IDS = 8192
/** Bytes read at an entry's offset: its header and, for a tree or a delta, usually all of its zlib stream. */
const ENTRY_READ = 1024
/**
 * Bytes read before it too: git writes a delta chain's bases just before their deltas (OFS_DELTA
 * distances of 47-59 bytes for the 1M fixture's trees), so one read holds a cold tree's chain of ~16.
 */
const WINDOW_BACK = 4096

interface Resolved {
  data: Buffer
  type: number
}

/** One first-byte range of a pack's index, in memory: ids' bytes 1-4 (sorted, as the index is) and offsets. */
interface Range {
  /** The index's 32-bit offsets as they are: MSB set for one of 2 GiB or more, whose low bits point into its 64-bit table. */
  offsets: Uint32Array
  prefixes: Uint32Array
}

interface Pack {
  /** Entries with a first id byte below i: fanout[i] (fanout[256] = count). */
  fanout: Uint32Array
  idxFd: number
  name: string
  packFd: number
  packSize: number
  ranges: Array<Range | undefined>
}

export class PackReader {
  private packs: Pack[] = []
  private readonly packDir: string
  private readonly inflater = new Inflater()
  /**
   * A chain's links (every version below the one asked for), by the parity of their depth: a link
   * is only the base of the link above it, so it is written over two links later. There is no
   * cache of links (issue 26, pw-cpu): the writer's cold reads are distinct trees whose chains
   * are their own history, and an 8 MiB cache of links hit almost never (pw-cold's entries per
   * tree were the same at 8, 32 and 128 MiB) while each link cost a buffer of its own.
   */
  private readonly links: Buffer[] = [Buffer.allocUnsafeSlow(4096), Buffer.allocUnsafeSlow(4096)]
  private readonly head = Buffer.allocUnsafeSlow(ENTRY_READ)
  /** The last bytes read from a pack: a buffer of their own (a frame of a chain may still hold a slice of it when it is replaced). */
  private win: {buf: Buffer; end: number; pack: Pack; start: number} | undefined
  /** Per depth of a delta chain being resolved: an entry's bytes past the window, and the inflated delta (each used once, then overwritten). */
  private readonly entryBufs: Buffer[] = []
  private readonly deltaBufs: Buffer[] = []
  private depth = 0

  constructor(
    private readonly repo: string,
    private readonly env: NodeJS.ProcessEnv,
  ) {
    this.packDir = join(repo, 'objects', 'pack')
    this.refresh()
  }

  /** The object, or undefined when the repository does not have it. */
  read(id: ObjectKey): RawObject | undefined {
    return this.fromPacks(id) ?? this.loose(id) ?? (this.refresh() ? this.fromPacks(id) : undefined) ?? this.fromGit(id)
  }

  /** The commit a branch's ref names (`refs/heads/<branch>^0`), or undefined without one. */
  branchTip(branch: string): string | undefined {
    const r = spawnSync('git', ['-C', this.repo, 'rev-parse', '-q', '--verify', `refs/heads/${branch}^0`], {encoding: 'utf8', env: this.env})
    const out = r.stdout?.trim()
    return r.status === 0 && /^[0-9a-f]{40}$/.test(out) ? out : undefined
  }

  close(): void {
    for (const p of this.packs) closePack(p)
    this.packs = []
    this.win = undefined
    this.inflater.close()
  }

  /** Opens packs that appeared, closes those gone (a roll-up merged them); true when anything changed. */
  refresh(): boolean {
    let names: string[]
    try {
      names = readdirSync(this.packDir)
    } catch {
      names = []
    }
    const present = new Set(names.filter((n) => n.startsWith('pack-') && n.endsWith('.idx')).map((n) => n.slice(0, -4)).filter((n) => names.includes(`${n}.pack`)))
    let changed = false
    const kept: Pack[] = []
    for (const p of this.packs) {
      if (present.has(p.name)) {
        kept.push(p)
        present.delete(p.name)
      } else {
        closePack(p)
        if (this.win?.pack === p) this.win = undefined
        changed = true
      }
    }
    for (const name of present) {
      const p = openPack(this.packDir, name)
      if (p) {
        kept.push(p)
        changed = true
      }
    }
    // The largest first: most objects live there; a pack that answers moves to the front (fromPacks).
    if (changed) kept.sort((a, b) => b.fanout[256] - a.fanout[256])
    this.packs = kept
    return changed
  }

  private fromPacks(id: ObjectKey): RawObject | undefined {
    for (let i = 0; i < this.packs.length; i++) {
      const p = this.packs[i]
      const offset = this.offsetIn(p, id)
      if (offset < 0) continue
      if (i > 0) {
        this.packs.splice(i, 1)
        this.packs.unshift(p)
      }
      const o = this.entryAt(p, offset)
      return {data: o.data, type: TYPES[o.type] as RawObject['type']}
    }
    return undefined
  }

  /** The object's offset in the pack, or -1. */
  private offsetIn(p: Pack, id: ObjectKey): number {
    const first = id.charCodeAt(0)
    const lo = p.fanout[first]
    const hi = p.fanout[first + 1]
    if (lo === hi) return -1
    const r = p.ranges[first] ?? (p.ranges[first] = loadRange(p, first))
    const want = ((id.charCodeAt(1) << 24) | (id.charCodeAt(2) << 16) | (id.charCodeAt(3) << 8) | id.charCodeAt(4)) >>> 0
    const pre = r.prefixes
    let a = lowerBound(pre, want)
    // Five bytes agree (one in ~2^40): the whole id, read from the index, decides.
    for (; a < pre.length && pre[a] === want; a++) {
      readExactly(p.idxFd, this.head, 20, 8 + 1024 + (lo + a) * 20)
      if (sameId(this.head, id)) return this.offsetOf(p, r.offsets[a])
    }
    return -1
  }

  private offsetOf(p: Pack, v: number): number {
    if ((v & 0x80_00_00_00) === 0) return v
    readExactly(p.idxFd, this.head, 8, 8 + 1024 + p.fanout[256] * 28 + (v & 0x7f_ff_ff_ff) * 8)
    return Number(this.head.readBigUInt64BE(0))
  }

  /** The object at `offset` with its deltas applied: its type (1-4) and content. */
  private entryAt(p: Pack, offset: number, asBase = false): Resolved {
    // A delta's base is resolved before the delta's own bytes are inflated, with buffers of the next depth.
    const depth = this.depth
    if (offset < 12 || offset >= p.packSize - 20) throw new Error(`damaged pack index: offset ${offset} outside ${p.name}.pack`)
    let w = this.win
    if (!w || w.pack !== p || offset < w.start || offset + 64 > w.end) {
      const start = Math.max(0, offset - WINDOW_BACK)
      const buf = Buffer.allocUnsafeSlow(Math.min(p.packSize, offset + ENTRY_READ) - start)
      w = this.win = {buf, end: start + readSync(p.packFd, buf, 0, buf.length, start), pack: p, start}
    }
    const got = w.end - offset
    const buf = w.buf.subarray(offset - w.start, w.end - w.start)
    let at = 0
    let c = buf[at++]
    const type = (c >> 4) & 7
    let size = c & 15
    let shift = 4
    while (c & 0x80) {
      c = buf[at++]
      size += (c & 0x7f) * 2 ** shift
      shift += 7
    }
    let back = 0
    let baseId: ObjectKey | undefined
    if (type === OFS_DELTA) {
      c = buf[at++]
      back = c & 0x7f
      while (c & 0x80) {
        c = buf[at++]
        back = (back + 1) * 128 + (c & 0x7f)
      }
    } else if (type === REF_DELTA) {
      baseId = buf.toString('latin1', at, at + 20)
      at += 20
    }
    if (at > got || type === 0 || type === 5) throw new Error(`damaged pack entry at ${offset} in ${p.name}.pack`)
    // Deflate's worst case (stored blocks) bounds the compressed bytes: what the first read lacks, one more read brings.
    const room = Math.min(p.packSize - offset - at, size + Math.ceil(size / 16_000) * 5 + 64)
    let compressed = buf.subarray(at, at + room)
    if (at + room > got) {
      // Past the window: this entry's zlib stream into this depth's buffer (the window stays as it was).
      let own = this.entryBufs[depth]
      if (!own || own.length < room) own = this.entryBufs[depth] = Buffer.allocUnsafeSlow(Math.max(room, ENTRY_READ))
      buf.copy(own, 0, at, got)
      readExactly(p.packFd, own.subarray(got - at), at + room - got, offset + got)
      compressed = own.subarray(0, room)
    }
    let base: Resolved | undefined
    this.depth = depth + 1
    try {
      if (type === OFS_DELTA) base = this.entryAt(p, offset - back, true)
      else if (baseId !== undefined) {
        const o = this.read(baseId)
        if (!o) throw new Error(`delta base ${Buffer.from(baseId, 'latin1').toString('hex')} is missing from the repository`)
        base = {data: o.data, type: TYPES.indexOf(o.type)}
      }
    } finally {
      this.depth = depth
    }
    let out: Resolved
    try {
      if (base) {
        let d = this.deltaBufs[depth]
        if (!d || d.length < size + 1) d = this.deltaBufs[depth] = Buffer.allocUnsafeSlow(Math.max(size + 1, 4096))
        const delta = this.inflater.inflate(compressed, size, d)
        out = {data: asBase ? applyDelta(base.data, delta, (n) => this.link(depth, n)) : applyDelta(base.data, delta), type: base.type}
      } else out = {data: this.inflater.inflate(compressed, size, asBase ? this.link(depth, size + 1) : undefined), type}
    } catch (error) {
      throw new Error(`damaged pack entry at ${offset} in ${p.name}.pack: ${(error as Error).message}`)
    }
    return out
  }

  /** The buffer for a link at `depth` (at least `n` bytes). */
  private link(depth: number, n: number): Buffer {
    const i = depth & 1
    if (this.links[i].length < n) this.links[i] = Buffer.allocUnsafeSlow(Math.max(n, this.links[i].length * 2))
    return this.links[i]
  }

  private loose(id: ObjectKey): RawObject | undefined {
    const hex = Buffer.from(id, 'latin1').toString('hex')
    const file = join(this.repo, 'objects', hex.slice(0, 2), hex.slice(2))
    if (!existsSync(file)) return undefined
    let raw: Buffer
    try {
      raw = zlib.inflateSync(readFileSync(file))
    } catch {
      return undefined
    }
    const sp = raw.indexOf(0x20)
    const nul = raw.indexOf(0, sp)
    const type = raw.toString('latin1', 0, sp) as RawObject['type']
    return {data: raw.subarray(nul + 1), type}
  }

  /** Git's own answer, for an object in none of the places above. */
  private fromGit(id: ObjectKey): RawObject | undefined {
    const hex = Buffer.from(id, 'latin1').toString('hex')
    const r = spawnSync('git', ['-C', this.repo, 'cat-file', '--batch'], {env: this.env, input: `${hex}\n`, maxBuffer: 1024 * 1024 * 1024})
    if (r.status !== 0 || !r.stdout) return undefined
    const out = r.stdout
    const nl = out.indexOf(10)
    const [, type, size] = out.toString('latin1', 0, nl).split(' ')
    if (size === undefined) return undefined
    return {data: Buffer.from(out.subarray(nl + 1, nl + 1 + Number(size))), type: type as RawObject['type']}
  }
}

function openPack(packDir: string, name: string): Pack | undefined {
  let idxFd = -1
  let packFd = -1
  try {
    idxFd = openSync(join(packDir, `${name}.idx`), 'r')
    packFd = openSync(join(packDir, `${name}.pack`), 'r')
    const head = Buffer.alloc(8 + 1024)
    readExactly(idxFd, head, head.length, 0)
    if (head.readUInt32BE(0) !== 0xff_74_4f_63 || head.readUInt32BE(4) !== 2) throw new Error(`${name}.idx is not a version 2 index`)
    const fanout = new Uint32Array(257)
    for (let i = 0; i < 256; i++) fanout[i + 1] = head.readUInt32BE(8 + i * 4)
    return {fanout, idxFd, name, packFd, packSize: fstatSync(packFd).size, ranges: []}
  } catch {
    // Removed between the listing and the open (a roll-up), or not an index this reader knows: git answers for it.
    if (idxFd !== -1) closeSync(idxFd)
    if (packFd !== -1) closeSync(packFd)
    return undefined
  }
}

/** A first-byte range of the index into memory: bytes 1-4 of each id, and its 32-bit offset entry. */
function loadRange(p: Pack, first: number): Range {
  const lo = p.fanout[first]
  const n = p.fanout[first + 1] - lo
  const prefixes = new Uint32Array(n)
  const chunk = Buffer.allocUnsafe(Math.min(n, LOAD_IDS) * 20)
  for (let i = 0; i < n; i += LOAD_IDS) {
    const k = Math.min(LOAD_IDS, n - i)
    readExactly(p.idxFd, chunk, k * 20, 8 + 1024 + (lo + i) * 20)
    for (let j = 0; j < k; j++) prefixes[i + j] = chunk.readUInt32BE(j * 20 + 1)
  }
  const raw = Buffer.allocUnsafe(n * 4)
  readExactly(p.idxFd, raw, n * 4, 8 + 1024 + p.fanout[256] * 24 + lo * 4)
  const offsets = new Uint32Array(n)
  for (let i = 0; i < n; i++) offsets[i] = raw.readUInt32BE(i * 4)
  return {offsets, prefixes}
}

function sameId(b: Buffer, id: ObjectKey): boolean {
  for (let i = 0; i < 20; i++) if (b[i] !== id.charCodeAt(i)) return false
  return true
}

function closePack(p: Pack): void {
  closeSync(p.idxFd)
  closeSync(p.packFd)
}

function readExactly(fd: number, buf: Buffer, n: number, position: number): void {
  let done = 0
  while (done < n) {
    const got = readSync(fd, buf, done, n - done, position + done)
    if (got <= 0) throw new Error(`short read at ${position + done}`)
    done += got
  }
}

/**
 * Git's delta format (gitformat-pack): the base and target sizes, then copy and insert opcodes.
 * The result goes into `room(size)` (a view of its first `size` bytes) or a new buffer.
 */
export function applyDelta(base: Buffer, delta: Buffer, room?: (size: number) => Buffer): Buffer {
  let at = 0
  const varint = (): number => {
    let v = 0
    let shift = 0
    let c
    do {
      c = delta[at++]
      v += (c & 0x7f) * 2 ** shift
      shift += 7
    } while (c & 0x80)
    return v
  }
  if (varint() !== base.length) throw new Error('delta base size mismatch')
  const size = varint()
  const out = room ? room(size).subarray(0, size) : Buffer.allocUnsafeSlow(size)
  let o = 0
  while (at < delta.length) {
    const op = delta[at++]
    if (op & 0x80) {
      let off = 0
      let len = 0
      if (op & 0x01) off |= delta[at++]
      if (op & 0x02) off |= delta[at++] << 8
      if (op & 0x04) off |= delta[at++] << 16
      if (op & 0x08) off = (off | (delta[at++] << 24)) >>> 0
      if (op & 0x10) len |= delta[at++]
      if (op & 0x20) len |= delta[at++] << 8
      if (op & 0x40) len |= delta[at++] << 16
      if (len === 0) len = 0x1_00_00
      if (off + len > base.length || o + len > size) throw new Error('delta copy out of bounds')
      base.copy(out, o, off, off + len)
      o += len
    } else if (op > 0) {
      if (o + op > size || at + op > delta.length) throw new Error('delta insert out of bounds')
      delta.copy(out, o, at, at + op)
      at += op
      o += op
    } else throw new Error('delta opcode 0')
  }
  if (o !== size) throw new Error('delta result size mismatch')
  return out
}
