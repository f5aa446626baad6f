import {expect} from 'chai'

import {BlobCache} from '../src/engine/cache.js'

describe('svc blob cache', () => {
  it('stays within its byte bound, evicting the entries read least recently first', () => {
    const cache = new BlobCache(64 * 1024)
    const blob = (n: number) => Buffer.alloc(1000, n % 256)
    for (let i = 0; i < 40; i++) cache.set(`old-${i}`, blob(i))
    // Fill past two generations while one old entry keeps being read.
    for (let i = 0; i < 120; i++) {
      cache.set(`new-${i}`, blob(i))
      expect(cache.get('old-7'), `still cached after ${i} inserts`).to.not.equal(undefined)
      expect(cache.bytes).to.be.at.most(64 * 1024)
    }
    expect(cache.get('old-8'), 'an entry nobody read is gone').to.equal(undefined)
    expect(cache.get('new-119')?.[0]).to.equal(119)
    // Blobs larger than an eighth of the cache are not kept at all.
    cache.set('huge', Buffer.alloc(9 * 1024))
    expect(cache.get('huge')).to.equal(undefined)
  })
})

/** The eviction of earlier builds (a fresh `entries().next()` per eviction): the order the kept iterator must give. */
class FreshIteratorCache {
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
    this.bytes += value.length + 64
    this.insertedThisGen += value.length + 64
    if (this.insertedThisGen > this.maxBytes / 4) {
      this.insertedThisGen = 0
      if (this.old.size === 0) this.old = this.young
      else for (const [k, v] of this.young) this.old.set(k, v)
      this.young = new Map()
    }
    while (this.bytes > this.maxBytes) {
      const from = this.old.size > 0 ? this.old : this.young
      const first = from.entries().next().value
      if (!first) break
      from.delete(first[0])
      this.bytes -= first[1].length + 64
    }
  }
}

describe('svc blob cache eviction order', () => {
  it('keeps exactly the entries the fresh-iterator eviction kept, through generations and hits', () => {
    // Seeded (mulberry32), so a failure repeats.
    let seed = 26
    const rand = (): number => {
      seed = (seed + 0x6d_2b_79_f5) | 0
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
      return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
    }
    for (const maxBytes of [4096, 64 * 1024]) {
      const cache = new BlobCache(maxBytes)
      const reference = new FreshIteratorCache(maxBytes)
      let written = 0
      for (let op = 0; op < 30_000; op++) {
        // Write-heavy stretches, and read-heavy ones whose hits move the whole old generation to the
        // young one (then eviction takes from the young map, and the next generation replaces the old map).
        if (rand() < (Math.floor(op / 500) % 2 === 0 ? 0.6 : 0.05)) {
          // Sizes from a few bytes to past an eighth of the cache (not kept at all).
          const key = `blob-${written++}`
          const value = Buffer.alloc(1 + Math.floor(rand() * (maxBytes / 6)), written % 251)
          cache.set(key, value)
          reference.set(key, value)
        } else {
          // Reads of recent keys (hits that move an entry to the young generation) and of long-evicted ones.
          const key = `blob-${Math.max(0, written - 1 - Math.floor(rand() * (rand() < 0.8 ? 40 : written + 1)))}`
          expect(cache.get(key), `read of ${key} after ${op} operations`).to.equal(reference.get(key))
        }
        expect(cache.bytes).to.equal(reference.bytes)
      }
      // Every key ever written: cached in one exactly when cached in the other, with the same bytes.
      for (let i = 0; i < written; i++) expect(cache.get(`blob-${i}`), `blob-${i}`).to.equal(reference.get(`blob-${i}`))
    }
  })
})
