/**
 * Git pack index (`.idx`, version 2) reading for the roll-up: how many objects a pack holds, and
 * the object names it holds as `git pack-objects` reads them (one hex name a line). Version 2 is
 * what every git since 1.5.2 writes: magic `\377tOc`, version 2, a 256-entry fan-out table of
 * big-endian counts (the last is the object count), then the names sorted, 20 bytes each.
 */
import {open} from 'node:fs/promises'
import type {Writable} from 'node:stream'

const MAGIC = 0xff_74_4f_63
const HEADER = 8 + 256 * 4
/** Names converted per read: 1.3 MB of index, 2.7 MB of text, a few ms of the loop each. */
const NAMES_PER_CHUNK = 65_536

/** The object count of a version-2 pack index; throws on any other format. */
export async function idxObjectCount(path: string): Promise<number> {
  const fh = await open(path, 'r')
  try {
    const head = Buffer.alloc(HEADER)
    const {bytesRead} = await fh.read(head, 0, HEADER, 0)
    return countFromHeader(head, bytesRead, path)
  } finally {
    await fh.close()
  }
}

function countFromHeader(head: Buffer, length: number, path: string): number {
  if (length < HEADER || head.readUInt32BE(0) !== MAGIC || head.readUInt32BE(4) !== 2) throw new Error(`${path} is not a version 2 pack index`)
  return head.readUInt32BE(HEADER - 4)
}

const HEX = Buffer.from('0123456789abcdef', 'latin1')

/** `count` 20-byte names from `src` as hex lines. */
export function namesToLines(src: Buffer, count: number): Buffer {
  const out = Buffer.allocUnsafe(count * 41)
  let o = 0
  for (let i = 0, s = 0; i < count; i++) {
    for (let end = s + 20; s < end; s++) {
      const b = src[s]
      out[o++] = HEX[b >> 4]
      out[o++] = HEX[b & 15]
    }
    out[o++] = 10
  }
  return out
}

/**
 * Writes every object name of the given pack indexes to `out` (a pack-objects stdin), then `tail`,
 * then ends it; waits for `drain` between chunks so memory stays at one chunk and the loop turns.
 * The git helper process (git-spawner.ts) runs the same steps from its own copy of this code.
 */
export async function writeIdxNames(out: Writable, paths: string[], tail: string): Promise<void> {
  for (const path of paths) {
    const fh = await open(path, 'r')
    try {
      const head = Buffer.alloc(HEADER)
      const {bytesRead} = await fh.read(head, 0, HEADER, 0)
      const count = countFromHeader(head, bytesRead, path)
      const raw = Buffer.allocUnsafe(Math.min(count, NAMES_PER_CHUNK) * 20)
      for (let done = 0; done < count; ) {
        const n = Math.min(count - done, NAMES_PER_CHUNK)
        const r = await fh.read(raw, 0, n * 20, HEADER + done * 20)
        if (r.bytesRead !== n * 20) throw new Error(`${path} is truncated`)
        if (!out.write(namesToLines(raw, n))) await drained(out)
        done += n
      }
    } finally {
      await fh.close()
    }
  }
  out.end(tail)
}

function drained(out: Writable): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (error?: Error): void => {
      out.off('drain', done)
      out.off('error', done)
      out.off('close', closed)
      if (error) reject(error)
      else resolve()
    }
    const closed = (): void => done(new Error('pack-objects closed its input'))
    out.once('drain', done)
    out.once('error', done)
    out.once('close', closed)
  })
}
