/** One scheduled expiry: document `id` of `branch` expires at `at` (epoch ms). */
export interface ExpiryItem {
  at: number
  branch: string
  id: string
}

/**
 * The expiries the engine has to sweep, earliest first (a binary heap). Entries are never
 * removed when an expiry changes: the sweeper checks each popped item against the document's
 * current expiry and drops the stale ones, so setting a TTL stays O(log n).
 */
export class ExpiryQueue {
  private heap: ExpiryItem[] = []

  get size(): number {
    return this.heap.length
  }

  peek(): ExpiryItem | undefined {
    return this.heap[0]
  }

  pop(): ExpiryItem | undefined {
    const h = this.heap
    const top = h[0]
    const last = h.pop()
    if (h.length > 0 && last) {
      h[0] = last
      let i = 0
      for (;;) {
        const l = 2 * i + 1
        const r = l + 1
        let m = i
        if (l < h.length && h[l].at < h[m].at) m = l
        if (r < h.length && h[r].at < h[m].at) m = r
        if (m === i) break
        ;[h[i], h[m]] = [h[m], h[i]]
        i = m
      }
    }
    return top
  }

  push(item: ExpiryItem): void {
    const h = this.heap
    h.push(item)
    let i = h.length - 1
    while (i > 0) {
      const p = (i - 1) >> 1
      if (h[p].at <= h[i].at) break
      ;[h[i], h[p]] = [h[p], h[i]]
      i = p
    }
  }
}
