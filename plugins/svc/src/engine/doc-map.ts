/**
 * The documents of one branch by id: a Map with a small counting filter of the ids in front of it.
 *
 * Why (issue 26, docs/benchmarks.md "Redis GET -P 16: the document map"): a lookup in a Map of
 * tens of thousands of string keys costs three dependent cache misses (bucket, entry, the stored
 * key's header, which V8 must read to compare) and, in a busy server, about half a microsecond,
 * whether the id is there or not. Reads of ids that do not exist are common (cache-style Redis
 * use; redis-benchmark's `-r` key space is mostly empty). The filter is a byte array of 4 to 8
 * slots per id, small enough to stay in cache: a zero slot proves the id absent without touching
 * the Map. It never answers "absent" for a stored id: every change goes through set/delete/clear.
 */
import type {DocEntry} from './branch-state.js'

const MIN_SLOTS = 1024
const SATURATED = 255

/** FNV-1a over the UTF-16 code units, with a final mix so the low bits (the slot) depend on every unit. */
function hashId(id: string): number {
  let h = 0x81_1c_9d_c5
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01_00_01_93)
  h ^= h >>> 15
  h = Math.imul(h, 0x85_eb_ca_6b)
  return h ^ (h >>> 13)
}

/**
 * `hashId` of the string these bytes spell, for ids whose bytes are all ASCII (then each byte is
 * one UTF-16 code unit and the two hashes agree); -1 for any other byte. Lets a protocol server
 * rule out an absent key before it makes a string of it (`DocMap.absentBytes`).
 */
function hashAsciiBytes(b: Uint8Array, start: number, end: number): number {
  let h = 0x81_1c_9d_c5
  for (let i = start; i < end; i++) {
    const c = b[i]
    if (c >= 0x80) return -1
    h = Math.imul(h ^ c, 0x01_00_01_93)
  }
  h ^= h >>> 15
  h = Math.imul(h, 0x85_eb_ca_6b)
  return h ^ (h >>> 13)
}

export class DocMap extends Map<string, DocEntry> {
  // Initialised here, not in a constructor taking entries: Map's constructor would call the
  // overridden `set` before these fields exist.
  private counts = new Uint8Array(MIN_SLOTS)
  private mask = MIN_SLOTS - 1

  /** A copy sharing `from`'s entries (they are never mutated) and its filter. */
  static copyOf(from: DocMap): DocMap {
    const m = new DocMap()
    m.counts = from.counts.slice()
    m.mask = from.mask
    for (const [id, e] of from) m.setUncounted(id, e)
    return m
  }

  override clear(): void {
    super.clear()
    this.counts = new Uint8Array(MIN_SLOTS)
    this.mask = MIN_SLOTS - 1
  }

  override delete(id: string): boolean {
    if (!super.delete(id)) return false
    const slot = hashId(id) & this.mask
    // A saturated slot has lost count of its ids: it stays "maybe" until the next resize.
    if (this.counts[slot] !== SATURATED) this.counts[slot]--
    return true
  }

  /** The entry of `id`, looking in the Map only when the filter cannot rule it out. */
  lookup(id: string): DocEntry | undefined {
    return this.counts[hashId(id) & this.mask] === 0 ? undefined : super.get(id)
  }

  /**
   * True when the filter proves that no stored id is the string these bytes spell (ASCII bytes
   * only); false means "maybe": make the string and `lookup` it. Never true for a stored id.
   */
  absentBytes(b: Uint8Array, start: number, end: number): boolean {
    const h = hashAsciiBytes(b, start, end)
    return h !== -1 && this.counts[h & this.mask] === 0
  }

  override set(id: string, e: DocEntry): this {
    if (super.has(id)) return super.set(id, e)
    super.set(id, e)
    if (this.size * 4 > this.counts.length) this.resize()
    else this.count(id)
    return this
  }

  private count(id: string): void {
    const slot = hashId(id) & this.mask
    if (this.counts[slot] !== SATURATED) this.counts[slot]++
  }

  /** Rebuilt at twice the slots (from every id, the new one included): 4 to 8 slots per id. */
  private resize(): void {
    const slots = this.counts.length * 2
    this.counts = new Uint8Array(slots)
    this.mask = slots - 1
    for (const id of this.keys()) this.count(id)
  }

  private setUncounted(id: string, e: DocEntry): void {
    super.set(id, e)
  }
}
