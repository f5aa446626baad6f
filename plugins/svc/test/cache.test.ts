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
