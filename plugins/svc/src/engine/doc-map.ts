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
 *
 * Why most entries are a number (issue 26, docs/benchmarks.md "A denser document map"): a branch
 * loaded from Git holds a million `{seq: 0, sha}` entries, each an object and a 40-character
 * string: ~100 bytes and two heap objects a document that every full GC marks. Such an entry is
 * kept as a slot in a shared arena of 20-byte object ids instead, a small integer in the Map that
 * the GC does not follow, and `get` hands out an equal `DocEntry` made on the spot. Entries with
 * anything more (a write's, with its body or seq; a kept parsed document; an expiry, a path) stay
 * objects. So an entry got twice from a slot is equal, not the same object: compare with `holds`.
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

/**
 * 20-byte object ids, appended and never changed: maps copied from one another share it, each
 * slot named by one entry of one or more of them.
 */
class ShaArena {
  bytes = Buffer.alloc(20 * 4096)
  length = 0

  /** The slot of `sha` (40 lowercase hex digits, as Git prints them), or -1 when it is not hex of 20 bytes. */
  add(sha: string): number {
    if (sha.length !== 40) return -1
    if ((this.length + 1) * 20 > this.bytes.length) {
      const grown = Buffer.alloc(this.bytes.length * 2)
      this.bytes.copy(grown)
      this.bytes = grown
    }
    const at = this.length * 20
    // Git prints object ids in lowercase, which is what `hex` gives back.
    if (this.bytes.write(sha, at, 20, 'hex') !== 20) return -1
    return this.length++
  }

  hex(slot: number): string {
    return this.bytes.toString('hex', slot * 20, slot * 20 + 20)
  }
}

export class DocMap {
  private arena = new ShaArena()
  private counts = new Uint8Array(MIN_SLOTS)
  private readonly map = new Map<string, DocEntry | number>()
  private mask = MIN_SLOTS - 1

  get size(): number {
    return this.map.size
  }

  /** A copy sharing `from`'s entries (they are never mutated), its arena and its filter. */
  static copyOf(from: DocMap): DocMap {
    const m = new DocMap()
    m.arena = from.arena
    m.counts = from.counts.slice()
    m.mask = from.mask
    for (const [id, e] of from.map) m.map.set(id, e)
    return m
  }

  clear(): void {
    this.map.clear()
    this.arena = new ShaArena()
    this.counts = new Uint8Array(MIN_SLOTS)
    this.mask = MIN_SLOTS - 1
  }

  delete(id: string): boolean {
    if (!this.map.delete(id)) return false
    const slot = hashId(id) & this.mask
    // A saturated slot has lost count of its ids: it stays "maybe" until the next resize.
    if (this.counts[slot] !== SATURATED) this.counts[slot]--
    return true
  }

  get(id: string): DocEntry | undefined {
    return this.entry(this.map.get(id))
  }

  has(id: string): boolean {
    return this.map.has(id)
  }

  /**
   * True when `e` is the current entry of `id`: the same object, or for an entry kept as a slot,
   * one `get` made from that slot (still there: not replaced since).
   */
  holds(id: string, e: DocEntry): boolean {
    const v = this.map.get(id)
    if (typeof v !== 'number') return v === e
    // A slot stands for a blob in Git with no expiry or path: the same blob is the same document
    // (an entry settled into its slot after its checkpoint still holds, body and seq aside).
    return e.expiresAt === undefined && e.path === undefined && e.legacy === undefined && e.sha === this.arena.hex(v)
  }

  keys(): IterableIterator<string> {
    return this.map.keys()
  }

  /** The entry of `id`, looking in the Map only when the filter cannot rule it out. */
  lookup(id: string): DocEntry | undefined {
    return this.counts[hashId(id) & this.mask] === 0 ? undefined : this.entry(this.map.get(id))
  }

  /**
   * True when the filter proves that no stored id is the string these bytes spell (ASCII bytes
   * only); false means "maybe": make the string and `lookup` it. Never true for a stored id.
   */
  absentBytes(b: Uint8Array, start: number, end: number): boolean {
    const h = hashAsciiBytes(b, start, end)
    return h !== -1 && this.counts[h & this.mask] === 0
  }

  /**
   * Keeps `e`, an entry `get` made from a slot, as the object itself from now on (a field is
   * about to be put on it: HotDocs' parsed document). No-op when `id` holds something else.
   */
  pin(id: string, e: DocEntry): void {
    if (typeof this.map.get(id) === 'number' && this.holds(id, e)) this.map.set(id, e)
  }

  set(id: string, e: DocEntry): this {
    this.put(id, e)
    return this
  }

  /**
   * `e`, the current entry of `id` whose commit a checkpoint put in Git (its body moved to the
   * blob cache), kept as a slot from now on when a slot says all it says: after a million writes
   * the map would otherwise hold a million written entries as objects again (issue 26).
   */
  settle(id: string, e: DocEntry): void {
    if (this.map.get(id) !== e || e.body !== undefined || e.doc !== undefined || e.expiresAt !== undefined || e.path !== undefined || e.legacy !== undefined) return
    const slot = this.arena.add(e.sha)
    if (slot !== -1) this.map.set(id, slot)
  }

  /**
   * The entry of a document as a commit's tree has it, `{seq: 0, sha}`, kept as a slot of the
   * arena (as an object only if `sha` is not an object id in lowercase hex).
   */
  setLoaded(id: string, sha: string): void {
    const slot = this.arena.add(sha)
    this.put(id, slot === -1 ? {seq: 0, sha} : slot)
  }

  private count(id: string): void {
    const slot = hashId(id) & this.mask
    if (this.counts[slot] !== SATURATED) this.counts[slot]++
  }

  private entry(v: DocEntry | number | undefined): DocEntry | undefined {
    return typeof v === 'number' ? {seq: 0, sha: this.arena.hex(v)} : v
  }

  private put(id: string, v: DocEntry | number): void {
    const before = this.map.size
    this.map.set(id, v)
    if (this.map.size === before) return
    if (this.map.size * 4 > this.counts.length) this.resize()
    else this.count(id)
  }

  /** Rebuilt at twice the slots (from every id, the new one included): 4 to 8 slots per id. */
  private resize(): void {
    const slots = this.counts.length * 2
    this.counts = new Uint8Array(slots)
    this.mask = slots - 1
    for (const id of this.map.keys()) this.count(id)
  }
}
