/**
 * Git's delta format for one changed span: copy the common prefix from the base, insert the
 * bytes that differ, copy the common suffix. A tree changed by one commit differs from its last
 * version in one entry (added, replaced or removed), so this is the whole delta git would find,
 * at the cost of a byte comparison instead of a delta search.
 */

/** Delta instructions turning `base` into `target` (pack-format: sizes, then copy and insert opcodes). */
export function spanDelta(base: Buffer, target: Buffer): Buffer {
  const max = Math.min(base.length, target.length)
  let prefix = 0
  while (prefix < max && base[prefix] === target[prefix]) prefix++
  let suffix = 0
  while (suffix < max - prefix && base[base.length - 1 - suffix] === target[target.length - 1 - suffix]) suffix++
  const insert = target.length - prefix - suffix
  const out: number[] = []
  varint(out, base.length)
  varint(out, target.length)
  copy(out, 0, prefix)
  const bytes: Buffer[] = []
  for (let at = prefix; at < prefix + insert; at += 127) {
    const n = Math.min(127, prefix + insert - at)
    out.push(n)
    bytes.push(Buffer.from(out.splice(0)), target.subarray(at, at + n))
  }
  copy(out, base.length - suffix, suffix)
  if (bytes.length === 0) return Buffer.from(out)
  bytes.push(Buffer.from(out))
  return Buffer.concat(bytes)
}

function varint(out: number[], n: number): void {
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80)
    n = Math.floor(n / 128)
  }
  out.push(n)
}

/** Copy opcodes for `len` bytes at `offset`, in pieces of at most 64 KiB (a size of 0 means 0x10000). */
function copy(out: number[], offset: number, len: number): void {
  while (len > 0) {
    const n = Math.min(len, 0x1_00_00)
    const at = out.length
    let op = 0x80
    out.push(0)
    for (let i = 0; i < 4; i++) {
      const b = Math.floor(offset / 2 ** (8 * i)) & 0xff
      if (b !== 0) {
        op |= 1 << i
        out.push(b)
      }
    }
    if (n !== 0x1_00_00) {
      for (let i = 0; i < 3; i++) {
        const b = (n >> (8 * i)) & 0xff
        if (b !== 0) {
          op |= 1 << (4 + i)
          out.push(b)
        }
      }
    }
    out[at] = op
    offset += n
    len -= n
  }
}
