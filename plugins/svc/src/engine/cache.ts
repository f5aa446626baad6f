interface Slot {
  /** The generation in which the entry was last moved to the young end. */
  gen: number
  value: Buffer
}

/**
 * Byte-bounded, approximately LRU cache of blob contents keyed by object id; blobs are immutable,
 * so entries never go stale. A hit moves an entry to the young end only once per generation (a
 * quarter of the capacity inserted), so a hot entry read thousands of times a second costs a map
 * lookup, not a delete and an insert each time; eviction order is exact to within a generation.
 */
export class BlobCache {
  bytes = 0
  private gen = 0
  private insertedThisGen = 0
  private map = new Map<string, Slot>()

  constructor(private readonly maxBytes: number) {}

  get(sha: string): Buffer | undefined {
    const slot = this.map.get(sha)
    if (slot === undefined) return undefined
    if (slot.gen !== this.gen) {
      this.map.delete(sha)
      this.map.set(sha, slot)
      slot.gen = this.gen
    }
    return slot.value
  }

  set(sha: string, value: Buffer): void {
    if (value.length > this.maxBytes / 8 || this.map.has(sha)) return
    this.map.set(sha, {gen: this.gen, value})
    const cost = value.length + 64
    this.bytes += cost
    this.insertedThisGen += cost
    if (this.insertedThisGen > this.maxBytes / 4) {
      this.gen++
      this.insertedThisGen = 0
    }
    while (this.bytes > this.maxBytes) {
      const first = this.map.entries().next().value
      if (!first) break
      this.map.delete(first[0])
      this.bytes -= first[1].value.length + 64
    }
  }
}
