/**
 * Git's delta format for one changed span: copy the common prefix from the base, insert the
 * bytes that differ, copy the common suffix. A tree changed by one commit differs from its last
 * version in one entry (added, replaced or removed), so this is the whole delta git would find,
 * at the cost of a byte comparison instead of a delta search.
 */

let out = Buffer.allocUnsafeSlow(4096)

/**
 * Delta instructions turning `base` into `target` (gitformat-pack: sizes, then copy and insert
 * opcodes). The result is a view of a buffer reused by the next call: copy it or use it at once.
 */
export function spanDelta(base: Uint8Array, target: Uint8Array): Buffer {
  const max = Math.min(base.length, target.length)
  let prefix = 0
  while (prefix < max && base[prefix] === target[prefix]) prefix++
  let suffix = 0
  while (suffix < max - prefix && base[base.length - 1 - suffix] === target[target.length - 1 - suffix]) suffix++
  const insert = target.length - prefix - suffix
  // Worst case: two varints, copy opcodes per 64 KiB, one opcode per 127 inserted bytes.
  const need = 20 + Math.ceil(base.length / 0x1_00_00) * 16 + insert + Math.ceil(insert / 127)
  if (out.length < need) out = Buffer.allocUnsafeSlow(need * 2)
  let at = varint(out, 0, base.length)
  at = varint(out, at, target.length)
  at = copy(out, at, 0, prefix)
  for (let from = prefix; from < prefix + insert; from += 127) {
    const n = Math.min(127, prefix + insert - from)
    out[at++] = n
    out.set(target.subarray(from, from + n), at)
    at += n
  }
  at = copy(out, at, base.length - suffix, suffix)
  return out.subarray(0, at)
}

function varint(out: Buffer, at: number, n: number): number {
  while (n >= 0x80) {
    out[at++] = (n & 0x7f) | 0x80
    n = Math.floor(n / 128)
  }
  out[at++] = n
  return at
}

/** Copy opcodes for `len` bytes at `offset`, in pieces of at most 64 KiB (a size of 0 means 0x10000). */
function copy(out: Buffer, at: number, offset: number, len: number): number {
  while (len > 0) {
    const n = Math.min(len, 0x1_00_00)
    const opAt = at++
    let op = 0x80
    for (let i = 0; i < 4; i++) {
      const b = Math.floor(offset / 2 ** (8 * i)) & 0xff
      if (b !== 0) {
        op |= 1 << i
        out[at++] = b
      }
    }
    if (n !== 0x1_00_00) {
      for (let i = 0; i < 3; i++) {
        const b = (n >> (8 * i)) & 0xff
        if (b !== 0) {
          op |= 1 << (4 + i)
          out[at++] = b
        }
      }
    }
    out[opAt] = op
    offset += n
    len -= n
  }
  return at
}
