/**
 * The parsed documents kept on their document-map entries (`DocEntry.doc`), so that a protocol
 * server's read of a hot id is one lookup (the document map) instead of three (the map, the blob
 * cache by sha, the parsed-document WeakMap by buffer): issue 26, docs/benchmarks.md "The protocol
 * servers' read path".
 *
 * Why it cannot go stale: an entry names one blob (its `sha`) and every write replaces the entry
 * with a new object (engine.ts `setEntry`, `delete`), so a document kept on an entry is the
 * content of that entry for as long as the entry lives. A new entry starts without one.
 *
 * Why it is bounded: a ring of at most `slots` entries and `maxBytes` of stored JSON; keeping one
 * more takes the oldest kept one's document off its entry (FIFO; a hot id that falls off is kept
 * again). Large documents are not kept: they cost more than a lookup saves.
 *
 * Why only one offer in `every` is taken: a client reading through more ids than the ring holds
 * (a scan of 100,000 keys) would otherwise pay for keeping each one and find none kept when it
 * came back (10-50% more CPU per GET in bench/svc-hot-rss.mjs). A hot id is offered at each
 * read that finds it not kept, so it is kept after a few reads all the same.
 */
import type {DocEntry} from './branch-state.js'
import type {Doc} from './types.js'

export class HotDocs {
  private bytes = 0
  private next = 0
  private offers = 0
  private readonly ring: Array<DocEntry | undefined>
  private readonly sizes: Uint32Array

  constructor(
    private readonly slots = 32_768,
    private readonly maxBytes = 4 * 1024 * 1024,
    private readonly every = 8,
  ) {
    this.ring = Array.from({length: slots})
    this.sizes = new Uint32Array(slots)
  }

  /** Puts `doc` (parsed from `size` bytes) on `e`, unless it is too large to be worth it: true when it did. */
  keep(e: DocEntry, doc: Doc, size: number): boolean {
    if (size > this.maxBytes / 256 || ++this.offers % this.every !== 0) return false
    for (;;) {
      this.evict(this.next)
      if (this.bytes + size <= this.maxBytes) break
      this.next = (this.next + 1) % this.slots
    }
    e.doc = doc
    this.ring[this.next] = e
    this.sizes[this.next] = size
    this.bytes += size
    this.next = (this.next + 1) % this.slots
    return true
  }

  /** Takes every kept document off its entry (a branch's document map was dropped: removeBranch). */
  clear(): void {
    for (let i = 0; i < this.slots; i++) this.evict(i)
    this.next = 0
  }

  private evict(i: number): void {
    const old = this.ring[i]
    if (old === undefined) return
    old.doc = undefined
    this.ring[i] = undefined
    this.bytes -= this.sizes[i]
  }
}
