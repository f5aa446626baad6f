/**
 * Byte-bounded, approximately LRU cache of blob contents keyed by object id; blobs are immutable,
 * so entries never go stale. Two maps hold the buffers themselves: `young`, what was inserted or
 * read in the current generation (a quarter of the capacity inserted), and `old`, the rest in the
 * order last used. A hit in `young` is one map lookup and nothing else (a hot entry read thousands
 * of times a second); a hit in `old` moves the entry to `young`, once per generation. Eviction
 * takes `old`'s oldest first, so its order is exact to within a generation.
 *
 * The buffers are the map values, with no slot object around them: a read of a cached document
 * in a large cache was one more cache miss for the slot (issue 26, docs/benchmarks.md).
 *
 * Eviction walks each map with one iterator kept from one eviction to the next, never a fresh
 * `entries().next()`: V8 leaves a deleted Map entry as a hole until the table is next rebuilt,
 * and a new iterator steps over every hole before the first live entry. Taking the oldest entry
 * that way cost O(entries evicted since the last rebuild) per eviction, up to ~240 us per write
 * once a 64 MB cache was full of 200-byte documents (issue 26, docs/benchmarks.md "the engine
 * process's CPU per write at one million documents"). A kept iterator passes each hole once.
 * It takes the same entries in the same order: insertion appends at the end, and every entry it
 * has passed was deleted, so its next entry is always the map's first.
 */
const OVERHEAD = 64

export class BlobCache {
  bytes = 0
  private insertedThisGen = 0
  private old = new Map<string, Buffer>()
  private young = new Map<string, Buffer>()
  /** The iterator eviction takes entries from, and the map it walks. */
  private cursor: {it: Iterator<[string, Buffer]>; map: Map<string, Buffer>} | undefined

  constructor(private readonly maxBytes: number) {}

  get(sha: string): Buffer | undefined {
    const hit = this.young.get(sha)
    if (hit !== undefined) return hit
    const aged = this.old.get(sha)
    if (aged === undefined) return undefined
    this.old.delete(sha)
    this.young.set(sha, aged)
    return aged
  }

  set(sha: string, value: Buffer): void {
    if (value.length > this.maxBytes / 8 || this.young.has(sha) || this.old.has(sha)) return
    this.young.set(sha, value)
    const cost = value.length + OVERHEAD
    this.bytes += cost
    this.insertedThisGen += cost
    if (this.insertedThisGen > this.maxBytes / 4) this.nextGeneration()
    while (this.bytes > this.maxBytes) {
      const first = this.oldest(this.old.size > 0 ? this.old : this.young)
      if (!first) break
      this.bytes -= first[1].length + OVERHEAD
    }
  }

  /** Deletes and returns the first entry of `from` (see the top of the file for why through `cursor`). */
  private oldest(from: Map<string, Buffer>): [string, Buffer] | undefined {
    if (this.cursor?.map !== from) this.cursor = {it: from.entries(), map: from}
    let r = this.cursor.it.next()
    // A finished iterator never sees entries added after it finished: start again.
    if (r.done) {
      this.cursor.it = from.entries()
      r = this.cursor.it.next()
    }
    if (r.done) return undefined
    from.delete(r.value[0])
    return r.value
  }

  /** This generation's entries become the youngest of `old`, in the order they were used. */
  private nextGeneration(): void {
    this.insertedThisGen = 0
    if (this.old.size === 0) {
      // The emptied map is dropped: so is an iterator over it (it would keep its table alive).
      if (this.cursor?.map === this.old) this.cursor = undefined
      this.old = this.young
    } else {
      for (const [sha, value] of this.young) this.old.set(sha, value)
    }
    this.young = new Map()
  }
}
