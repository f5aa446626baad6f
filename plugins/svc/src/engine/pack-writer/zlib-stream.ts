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

/** Bytes of `storedZlibInto`'s output for `n` bytes of data. */
export function storedZlibSize(n: number): number {
  return 2 + Math.max(1, Math.ceil(n / MAX_STORED)) * 5 + n + 4
}

/** `data` as a zlib stream of stored blocks (0x78 0x01, blocks of at most 64 KiB, adler32) at `at`; returns the end. */
export function storedZlibInto(data: Uint8Array, out: Buffer, at: number): number {
  const blocks = Math.max(1, Math.ceil(data.length / MAX_STORED))
  out[at++] = 0x78
  out[at++] = 0x01
  for (let i = 0; i < blocks; i++) {
    const from = i * MAX_STORED
    const len = Math.min(MAX_STORED, data.length - from)
    out[at] = i === blocks - 1 ? 1 : 0
    out[at + 1] = len & 0xff
    out[at + 2] = len >>> 8
    out[at + 3] = ~len & 0xff
    out[at + 4] = (~len >>> 8) & 0xff
    out.set(data.subarray(from, from + len), at + 5)
    at += 5 + len
  }
  out.writeUInt32BE(adler32(data), at)
  return at + 4
}

export function storedZlib(data: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(storedZlibSize(data.length))
  storedZlibInto(data, out, 0)
  return out
}

/** The parts of Node's zlib object this module drives directly (internal, there since Node 10). */
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

  constructor(private readonly level = 6) {
    this.native = zlib.createDeflate({level}) as unknown as NativeDeflate
  }

  /** Room `deflateInto` may need for `n` bytes (deflate's worst case: stored blocks, header, trailer). */
  bound(n: number): number {
    return n + Math.ceil(n / 16_000) * 5 + 64
  }

  /** Deflates `data` into `out` at `at` (room for `bound(data.length)` there); returns the bytes written. */
  deflateInto(data: Uint8Array, out: Buffer, at: number): number {
    const h = this.native._handle
    const state = this.native._writeState
    const room = this.bound(data.length)
    if (h && state) {
      h.writeSync(zlib.constants.Z_FINISH, data, 0, data.length, out, at, room)
      const availOut = state[0]
      const availIn = state[1]
      h.reset()
      // Output space left over and all input taken: the stream reached its end.
      if (availIn === 0 && availOut > 0) return room - availOut
    }
    const z = zlib.deflateSync(data, {level: this.level})
    z.copy(out, at)
    return z.length
  }

  close(): void {
    ;(this.native as unknown as zlib.Deflate).close()
  }
}

/**
 * One native inflate stream reused for every object read from a pack (a fresh `inflateSync`
 * per object costs its set-up each time, as deflate does). Output is exactly `size` bytes or an
 * error: a stream that errs is replaced and the object inflated again by `inflateSync`, which
 * throws git's damage as an error.
 */
export class Inflater {
  private native = Inflater.create()

  private static create(): zlib.Inflate & NativeDeflate {
    const s = zlib.createInflate() as zlib.Inflate & NativeDeflate
    // Its errors are seen after each call (destroyed); the event would otherwise be unhandled.
    s.on('error', () => {})
    return s
  }

  /**
   * `input` inflated, into `into` when given (at least `size + 1` bytes: a delta read once and
   * dropped, no buffer of its own), else into a new buffer.
   */
  inflate(input: Buffer, size: number, into?: Buffer): Buffer {
    // Not from the pool: a tree read here may stay in the tree cache (tree.ts, serializeInto).
    const out = into ? into.subarray(0, size + 1) : Buffer.allocUnsafeSlow(size + 1)
    const h = this.native._handle
    const state = this.native._writeState
    if (h && state) {
      h.writeSync(zlib.constants.Z_FINISH, input, 0, input.length, out, 0, out.length)
      // One byte of room left: the stream ended after exactly `size` bytes.
      if (!this.native.destroyed && state[0] === 1) {
        h.reset()
        return out.subarray(0, size)
      }
      this.native.close()
      this.native = Inflater.create()
    }
    const z = zlib.inflateSync(input, {finishFlush: zlib.constants.Z_SYNC_FLUSH})
    if (z.length !== size) throw new Error(`object inflated to ${z.length} bytes, its header says ${size}`)
    return z
  }

  close(): void {
    this.native.close()
  }
}
