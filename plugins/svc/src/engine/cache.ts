/** Byte-bounded LRU of blob contents keyed by object id; blobs are immutable, so entries never go stale. */
export class BlobCache {
  bytes = 0
  private map = new Map<string, Buffer>()

  constructor(private readonly maxBytes: number) {}

  get(sha: string): Buffer | undefined {
    const v = this.map.get(sha)
    if (v !== undefined) {
      this.map.delete(sha)
      this.map.set(sha, v)
    }
    return v
  }

  set(sha: string, value: Buffer): void {
    if (value.length > this.maxBytes / 8 || this.map.has(sha)) return
    this.map.set(sha, value)
    this.bytes += value.length + 64
    while (this.bytes > this.maxBytes) {
      const first = this.map.entries().next().value
      if (!first) break
      this.map.delete(first[0])
      this.bytes -= first[1].length + 64
    }
  }
}
