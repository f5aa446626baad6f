import {availableParallelism} from 'node:os'
import {Transform, type TransformCallback} from 'node:stream'
import {promisify} from 'node:util'
import {constants, crc32, deflateRaw} from 'node:zlib'

const deflate = promisify(deflateRaw) as (buf: Buffer, options: object) => Promise<Buffer>

/** Deflate's window: each block is primed with this much of the input before it. */
const WINDOW = 32 << 10

export interface ParallelGzipOptions {
  /** Uncompressed bytes per block compressed on its own thread (default 1 MiB). */
  blockSize?: number
  /** Blocks compressed at once (default: the cores, at most the libuv pool less one thread for file I/O). */
  concurrency?: number
  level?: number
}

/**
 * A gzip stream compressed on several cores, the way pigz does it: the input is cut into blocks
 * that node:zlib deflates on the libuv pool at the same time, each primed with the 32 KiB before
 * it (so the output is about as small as one deflate's) and ended on a byte boundary with a sync
 * flush, and the blocks are written in order as one gzip member whose CRC-32 is computed here
 * over the input; blocks that do not compress are stored. Any gzip reader (`gunzip`, `tar xzf`, node:zlib) reads it as ordinary gzip.
 */
export function parallelGzip(options: ParallelGzipOptions = {}): Transform {
  const blockSize = options.blockSize ?? 1 << 20
  const level = options.level ?? constants.Z_DEFAULT_COMPRESSION
  const pool = Number(process.env.UV_THREADPOOL_SIZE) || 4
  const concurrency = options.concurrency ?? Math.max(1, Math.min(availableParallelism(), pool - 1))
  let block = Buffer.allocUnsafe(blockSize)
  let filled = 0
  let previous: Buffer | undefined
  let crc = 0
  let size = 0
  const pending: Array<{out: Promise<Buffer>; size: number; stored: boolean}> = []
  let headerSent = false

  // Input that deflate cannot shrink (a pack index is mostly SHA-1s: 2% smaller for a quarter
  // of the CPU) is stored instead: after a block that came out above 97% of its size, blocks are
  // stored, and every eighth is compressed again to see whether the data changed. The decision
  // reads the last block sent, which depends on how many blocks are in flight (the cores): the
  // output is the same for a given input on one machine, and valid gzip on any.
  let storing = false
  let sinceProbe = 0
  const start = (input: Buffer, last: boolean): void => {
    const store = storing && ++sinceProbe % 8 !== 0
    const settings = {
      level: store ? constants.Z_NO_COMPRESSION : level,
      ...(previous ? {dictionary: previous.subarray(Math.max(0, previous.length - WINDOW))} : {}),
      ...(last ? {} : {finishFlush: constants.Z_SYNC_FLUSH}),
    }
    const out = deflate(input, settings)
    // Read in order by drain; a rejection is handled there, not as an unhandled one.
    out.catch(() => {})
    pending.push({out, size: input.length, stored: store})
    previous = input
  }

  /** Sends compressed blocks in order while more than `keep` are under way. */
  const drain = async (stream: Transform, keep: number): Promise<void> => {
    if (!headerSent) {
      // Magic, deflate, no flags, no time, no extra flags, OS unknown.
      stream.push(Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]))
      headerSent = true
    }
    while (pending.length > keep) {
      const block = pending.shift()!
      const out = await block.out
      if (!block.stored && block.size >= WINDOW) {
        storing = out.length > block.size * 0.97
        sinceProbe = 0
      }
      stream.push(out)
    }
  }

  return new Transform({
    flush(cb: TransformCallback) {
      start(block.subarray(0, filled), true)
      drain(this, 0).then(() => {
        const trailer = Buffer.alloc(8)
        trailer.writeUInt32LE(crc >>> 0, 0)
        trailer.writeUInt32LE(size % 2 ** 32, 4)
        cb(null, trailer)
      }, cb)
    },
    transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback) {
      crc = crc32(chunk, crc)
      size += chunk.length
      let offset = 0
      while (offset < chunk.length) {
        const n = Math.min(chunk.length - offset, blockSize - filled)
        chunk.copy(block, filled, offset, offset + n)
        filled += n
        offset += n
        if (filled === blockSize) {
          start(block, false)
          block = Buffer.allocUnsafe(blockSize)
          filled = 0
        }
      }
      if (pending.length < concurrency) {
        cb()
        return
      }
      drain(this, concurrency - 1).then(() => cb(), cb)
    },
  })
}
