import {expect} from 'chai'

import {TextIndex} from '../src/engine/text-index.js'

describe('svc text index', () => {
  it('matches every word, ranks by BM25, and prefix-matches the last word', () => {
    const ix = new TextIndex()
    ix.add('a:1', 'Git storage engine storage')
    ix.add('a:2', 'storage of documents')
    ix.add('b:1', 'Gitlab runners')
    expect(ix.search('storage', {limit: 10, offset: 0}).hits.map((h) => h.id)).to.deep.equal(['a:1', 'a:2'])
    expect(ix.search('git storage', {limit: 10, offset: 0}).hits.map((h) => h.id)).to.deep.equal(['a:1'])
    expect(ix.search('git', {limit: 10, offset: 0}).hits.map((h) => h.id)).to.deep.equal(['a:1', 'b:1'])
    expect(ix.search('gitl storage', {limit: 10, offset: 0}).total).to.equal(0)
    expect(ix.search('storage gitl', {limit: 10, offset: 0}).total).to.equal(0)
    expect(ix.search('runn', {limit: 10, offset: 0}).hits.map((h) => h.id)).to.deep.equal(['b:1'])
    expect(ix.search('storage', {accept: (id) => id.startsWith('a:'), limit: 1, offset: 1}).hits.map((h) => h.id)).to.deep.equal(['a:2'])
    expect(ix.search('...', {limit: 10, offset: 0}).total).to.equal(0)
  })

  it('replaces and removes in place, survives compaction and a JSON round trip', () => {
    const ix = new TextIndex()
    for (let i = 0; i < 3000; i++) ix.add(`t:${i}`, `common word${i} ${i % 2 === 0 ? 'even' : 'odd'}`)
    for (let i = 0; i < 2500; i++) ix.remove(`t:${i}`)
    ix.add('t:2999', 'replaced text')
    expect(ix.documentCount).to.equal(500)
    expect(ix.search('common', {limit: 1000, offset: 0}).total).to.equal(499)
    expect(ix.search('word2600', {limit: 5, offset: 0}).hits.map((h) => h.id)).to.deep.equal(['t:2600'])
    expect(ix.search('word2999', {limit: 5, offset: 0}).total).to.equal(0)
    expect(ix.search('word10', {limit: 5, offset: 0}).total).to.equal(0)
    const copy = TextIndex.fromJSON(JSON.parse(JSON.stringify(ix.toJSON())))
    expect(copy.documentCount).to.equal(500)
    expect(copy.search('even common', {limit: 3, offset: 0})).to.deep.equal(ix.search('even common', {limit: 3, offset: 0}))
    const broken = ix.toJSON()
    broken.terms[0][1] = 'AAAA'
    expect(() => TextIndex.fromJSON(broken)).to.throw(/inconsistent/)
  })
})
