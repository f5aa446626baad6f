/**
 * Zlib streams for pack objects. Every object in a pack is its own zlib stream, and a native
 * `zlib.deflateSync` per object costs ~13-25 us, most of it setting up and tearing down the
 * stream: more than the whole rest of a commit. So: small objects that do not compress (trees,
 * deltas) go in stored blocks written here in JavaScript (valid zlib, which git inflates like any
 * other), and the ones that do (document bodies, commit messages) through one native deflate
 * stream that is reset after each object instead of recreated (~5 us for a 300-byte body).
 */
import zlib from 'node:zlib'

const MAX_STORED = 65_535

export function adler32(b: Uint8Array): number {
  let a = 1
  let s = 0
  let i = 0
  while (i < b.length) {
    // 3,800 bytes keep `s` below 2^53 before the modulo (zlib's NMAX is 5,552 for 32-bit sums).
    const end = Math.min(b.length, i + 3800)
    for (; i < end; i++) {
      a += b[i]
      s += a
    }
    a %= 65_521
    s %= 65_521
  }
  return ((s << 16) | a) >>> 0
}

/** `data` as a zlib stream of stored (uncompressed) blocks: 0x78 0x01, blocks of at most 64 KiB, adler32. */
export function storedZlib(data: Uint8Array): Buffer {
  const blocks = Math.max(1, Math.ceil(data.length / MAX_STORED))
  const out = Buffer.allocUnsafe(2 + blocks * 5 + data.length + 4)
  out[0] = 0x78
  out[1] = 0x01
  let at = 2
  for (let i = 0; i < blocks; i++) {
    const from = i * MAX_STORED
    const len = Math.min(MAX_STORED, data.length - from)
    out[at] = i === blocks - 1 ? 1 : 0
    out.writeUInt16LE(len, at + 1)
    out.writeUInt16LE(~len & 0xff_ff, at + 3)
    out.set(data.subarray(from, from + len), at + 5)
    at += 5 + len
  }
  out.writeUInt32BE(adler32(data), at)
  return out
}

/** The parts of Node's zlib object this module drives directly (internal, stable since Node 10). */
interface NativeDeflate {
  _handle?: {
    reset(): void
    writeSync(flush: number, input: Uint8Array, inOff: number, inLen: number, out: Uint8Array, outOff: number, outLen: number): void
  }
  _writeState?: Uint32Array
}

/**
 * One native deflate stream reused for every object. Falls back to `deflateSync` per object when
 * the internal handle is not there (another Node), so the output stays valid either way.
 */
export class Deflater {
  private readonly native: NativeDeflate
  private out = Buffer.allocUnsafe(64 * 1024)

  constructor(private readonly level = 6) {
    this.native = zlib.createDeflate({level}) as unknown as NativeDeflate
  }

  deflate(data: Uint8Array): Buffer {
    const h = this.native._handle
    const state = this.native._writeState
    // Room for deflate's worst case (stored blocks plus header and trailer) in one call.
    const room = data.length + Math.ceil(data.length / 16_000) * 5 + 64
    if (!h || !state || data.length > 1024 * 1024) return zlib.deflateSync(data, {level: this.level})
    if (this.out.length < room) this.out = Buffer.allocUnsafe(room)
    h.writeSync(zlib.constants.Z_FINISH, data, 0, data.length, this.out, 0, room)
    const produced = room - state[0]
    const leftIn = state[1]
    h.reset()
    // Output space left over means the stream reached its end; none left means it may not have.
    if (leftIn !== 0 || state[0] === 0) return zlib.deflateSync(data, {level: this.level})
    return Buffer.from(this.out.subarray(0, produced))
  }

  close(): void {
    ;(this.native as unknown as zlib.Deflate).close()
  }
}
