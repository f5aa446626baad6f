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
 */
const OVERHEAD = 64

export class BlobCache {
  bytes = 0
  private insertedThisGen = 0
  private old = new Map<string, Buffer>()
  private young = new Map<string, Buffer>()

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
      const from = this.old.size > 0 ? this.old : this.young
      const first = from.entries().next().value
      if (!first) break
      from.delete(first[0])
      this.bytes -= first[1].length + OVERHEAD
    }
  }

  /** This generation's entries become the youngest of `old`, in the order they were used. */
  private nextGeneration(): void {
    this.insertedThisGen = 0
    if (this.old.size === 0) {
      this.old = this.young
    } else {
      for (const [sha, value] of this.young) this.old.set(sha, value)
    }
    this.young = new Map()
  }
}
