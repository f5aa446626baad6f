import {expect} from 'chai'
import {join} from 'node:path'

import {IndexStore} from '../src/engine/fts/store.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'

const page = {limit: 10, offset: 0}

describe('svc full-text index file (SQLite FTS5)', () => {
  after(cleanupTempDirs)

  it('matches every word, ranks by BM25, prefix-matches the last word, and filters by table', () => {
    const ix = new IndexStore(join(tempDir(), 'fts.sqlite'))
    try {
      ix.transaction(() => {
        ix.put('a:1', 's1', 'Git storage engine storage')
        ix.put('a:2', 's2', 'storage of documents')
        ix.put('b:1', 's3', 'Gitlab runners')
      })
      const ids = (q: string, o: {limit: number; offset: number; table?: string} = page): string[] => ix.search(q, o).hits.map((h) => h.id)
      expect(ids('storage')).to.deep.equal(['a:1', 'a:2'])
      expect(ids('git storage')).to.deep.equal(['a:1'])
      // The exact word ranks above a longer word it prefixes, though that document is shorter.
      expect(ids('git')).to.deep.equal(['a:1', 'b:1'])
      expect(ix.search('gitl storage', page).total).to.equal(0)
      expect(ix.search('storage gitl', page).total).to.equal(0)
      expect(ids('runn')).to.deep.equal(['b:1'])
      expect(ids('ru')).to.deep.equal([])
      expect(ids('storage', {limit: 1, offset: 1, table: 'a'})).to.deep.equal(['a:2'])
      expect(ix.search('storage', {limit: 1, offset: 0, table: 'a'}).total).to.equal(2)
      expect(ix.search('storage', {limit: 1, offset: 0, table: 'b'}).total).to.equal(0)
      // Words are quoted: FTS5 operators and column names in a query are plain words.
      expect(ids('storage OR NOT "gitlab" body:')).to.deep.equal([])
      expect(ix.search('...', page).total).to.equal(0)
    } finally {
      ix.close()
    }
  })

  it('replaces and removes in place and keeps everything across a reopen', () => {
    const file = join(tempDir(), 'fts.sqlite')
    let ix = new IndexStore(file)
    ix.transaction(() => {
      for (let i = 0; i < 3000; i++) ix.put(`t:${i}`, `v${i}`, `common word${i} ${i % 2 === 0 ? 'even' : 'odd'}`)
    })
    ix.transaction(() => {
      for (let i = 0; i < 2500; i++) ix.remove(`t:${i}`)
      ix.put('t:2999', 'v2', 'replaced text')
    })
    expect(ix.remove('t:1')).to.equal(false)
    expect(ix.documents).to.equal(500)
    expect(ix.search('common', {limit: 1000, offset: 0}).total).to.equal(499)
    expect(ix.search('common', {limit: 10, offset: 495}).hits).to.have.length(4)
    expect(ix.search('common', {limit: 10, offset: 600})).to.deep.equal({hits: [], total: 499})
    expect(ix.search('word2600', {limit: 5, offset: 0}).hits.map((h) => h.id)).to.deep.equal(['t:2600'])
    expect(ix.search('word2999', page).total).to.equal(0)
    expect(ix.search('word10', page).total).to.equal(0)
    const before = ix.search('even common', {limit: 3, offset: 0})
    ix.close()
    ix = new IndexStore(file)
    try {
      expect(ix.documents).to.equal(500)
      expect(ix.sha('t:2999')).to.equal('v2')
      expect(ix.search('even common', {limit: 3, offset: 0})).to.deep.equal(before)
    } finally {
      ix.close()
    }
  })
})
