import {expect} from 'chai'

import type {DocEntry} from '../src/engine/branch-state.js'

import {DocMap} from '../src/engine/doc-map.js'

const entry = (n: number): DocEntry => ({seq: n, sha: n.toString(16).padStart(40, '0')})
const id = (n: number) => `key:${String(n).padStart(12, '0')}`

describe('svc document map', () => {
  it('finds every stored id through its filter, across resizes, replacements and deletes', () => {
    const m = new DocMap()
    for (let i = 0; i < 20_000; i += 2) m.set(id(i), entry(i))
    for (let i = 0; i < 20_000; i += 4) m.set(id(i), entry(i + 1))
    for (let i = 0; i < 20_000; i += 6) m.delete(id(i))
    let misses = 0
    for (let i = 0; i < 20_000; i++) {
      const want = i % 2 === 1 || i % 6 === 0 ? undefined : i % 4 === 0 ? i + 1 : i
      expect(m.lookup(id(i))?.seq, id(i)).to.equal(want)
      if (want === undefined && m.lookup(id(i)) === undefined) misses++
    }
    expect(misses).to.equal(20_000 - m.size)
    m.clear()
    expect(m.lookup(id(2))).to.equal(undefined)
    m.set(id(2), entry(2))
    expect(m.lookup(id(2))?.seq).to.equal(2)
  })

  it('rules out absent ids from their bytes, never a stored one, and only for ASCII', () => {
    const m = new DocMap()
    for (let i = 0; i < 20_000; i += 2) m.set(id(i), entry(i))
    for (let i = 0; i < 20_000; i += 6) m.delete(id(i))
    let ruledOut = 0
    for (let i = 0; i < 20_000; i++) {
      const b = Buffer.from(`  ${id(i)} `)
      const absent = m.absentBytes(b, 2, b.length - 1)
      if (m.has(id(i))) expect(absent, id(i)).to.equal(false)
      // Where the filter rules an id out from its string, it does from its bytes too.
      if (m.lookup(id(i)) === undefined && !m.has(id(i))) ruledOut += absent ? 1 : 0
    }
    expect(ruledOut).to.be.greaterThan(10_000)
    m.set('key:ключ', entry(1))
    const b = Buffer.from('key:ключ2')
    expect(m.absentBytes(b, 0, b.length)).to.equal(false)
  })

  it('copies share entries and filters but change apart', () => {
    const a = new DocMap()
    for (let i = 0; i < 3000; i++) a.set(id(i), entry(i))
    const b = DocMap.copyOf(a)
    b.delete(id(1))
    b.set(id(5000), entry(5000))
    expect(a.lookup(id(1))?.seq).to.equal(1)
    expect(a.lookup(id(5000))).to.equal(undefined)
    expect(b.lookup(id(1))).to.equal(undefined)
    expect(b.lookup(id(5000))?.seq).to.equal(5000)
    expect(b.lookup(id(2))).to.equal(a.lookup(id(2)))
    for (let i = 0; i < 20_000; i++) b.set(id(10_000 + i), entry(i))
    for (let i = 0; i < 20_000; i++) expect(b.lookup(id(10_000 + i))?.seq).to.equal(i)
  })

  it('keeps entries loaded from a tree as slots that read back as equal entries, across copies and pins', () => {
    const a = new DocMap()
    for (let i = 0; i < 5000; i++) a.setLoaded(id(i), entry(i).sha)
    a.setLoaded(id(5000), 'not an object id')
    expect(a.get(id(7))).to.deep.equal({seq: 0, sha: entry(7).sha})
    expect(a.lookup(id(4999))).to.deep.equal({seq: 0, sha: entry(4999).sha})
    expect(a.get(id(5000))).to.deep.equal({seq: 0, sha: 'not an object id'})
    // Two reads of a slot are equal entries, not one object: `holds` says which is current.
    const e = a.get(id(3))!
    expect(a.get(id(3))).not.to.equal(e)
    expect(a.holds(id(3), e)).to.equal(true)
    expect(a.holds(id(4), e)).to.equal(false)
    expect(a.holds(id(3), {...e, expiresAt: 1})).to.equal(false)
    // A pinned entry is the map's own object from then on, so what is put on it stays.
    a.pin(id(3), e)
    e.doc = {id: id(3)}
    expect(a.get(id(3))).to.equal(e)
    expect(a.get(id(3))?.doc).to.deep.equal({id: id(3)})
    // A copy shares the slots; each side's later loads and writes stay its own.
    const b = DocMap.copyOf(a)
    b.setLoaded(id(9000), entry(9000).sha)
    a.setLoaded(id(9001), entry(9001).sha)
    b.set(id(10), entry(77))
    expect(b.get(id(9000))?.sha).to.equal(entry(9000).sha)
    expect(a.get(id(9000))).to.equal(undefined)
    expect(a.get(id(9001))?.sha).to.equal(entry(9001).sha)
    expect(b.get(id(9001))).to.equal(undefined)
    expect(a.get(id(10))).to.deep.equal({seq: 0, sha: entry(10).sha})
    expect(b.get(id(10))).to.deep.equal(entry(77))
    for (let i = 0; i < 5000; i++) if (i !== 10) expect(b.get(id(i))?.sha, id(i)).to.equal(entry(i).sha)
    expect(a.holds(id(3), e) && b.holds(id(3), e)).to.equal(true)
    b.delete(id(3))
    expect(b.lookup(id(3))).to.equal(undefined)
    expect(a.lookup(id(3))).to.equal(e)
  })

  it('settles a written entry into a slot once its body has moved to Git, unless it carries more', () => {
    const m = new DocMap()
    const written = {body: Buffer.from('{}'), seq: 12, sha: entry(12).sha} as DocEntry
    m.set(id(1), written)
    // Still holding its body (not yet in Git): stays the object.
    m.settle(id(1), written)
    expect(m.get(id(1))).to.equal(written)
    written.body = undefined
    m.settle(id(1), written)
    const now = m.get(id(1))!
    expect(now).to.deep.equal({seq: 0, sha: entry(12).sha})
    expect(now).not.to.equal(written)
    // The entry a reader took before the checkpoint is still the current version.
    expect(m.holds(id(1), written)).to.equal(true)
    // An expiry, a path or a kept parsed document cannot be said by a slot.
    for (const extra of [{expiresAt: 5}, {path: 'x/y'}, {doc: {id: id(2)}}]) {
      const e: DocEntry = {seq: 3, sha: entry(3).sha, ...extra}
      m.set(id(2), e)
      m.settle(id(2), e)
      expect(m.get(id(2))).to.equal(e)
    }
    // Only the current entry settles: an older one the id no longer holds changes nothing.
    const old: DocEntry = {seq: 4, sha: entry(4).sha}
    m.set(id(3), {seq: 5, sha: entry(5).sha})
    m.settle(id(3), old)
    expect(m.get(id(3))?.sha).to.equal(entry(5).sha)
    expect(m.get(id(3))?.seq).to.equal(5)
  })
})
