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

  it('ranks only the first matches of a word in more documents than the window, and says the total is estimated', () => {
    const ix = new IndexStore(join(tempDir(), 'fts.sqlite'))
    try {
      ix.transaction(() => {
        // Documents 0-399 hold "common"; every tenth of them also "rare". The last one, outside
        // any window, repeats "common" and is short: it is the best match overall.
        for (let i = 0; i < 399; i++) ix.put(`t:${i}`, `v${i}`, `common filler words here ${i % 10 === 0 ? 'rare' : ''} ${i}`)
        ix.put('t:399', 'v399', 'common common common')
      })
      const exact = ix.search('common', {limit: 5, offset: 0}, 1000)
      expect(exact.estimated).to.equal(undefined)
      expect(exact.total).to.equal(400)
      expect(exact.hits[0].id).to.equal('t:399')
      const windowed = ix.search('common', {limit: 5, offset: 0}, 100)
      expect(windowed.estimated).to.equal(true)
      expect(windowed.hits).to.have.length(5)
      // The window counted 100 matches; the first fifth of them were ranked.
      for (const h of windowed.hits) expect(Number(h.id.slice(2))).to.be.below(20)
      expect(windowed.total).to.be.within(390, 410)
      // A query matching fewer rows than the window is still exact, whatever else is common.
      const rare = ix.search('common rare', {limit: 50, offset: 0}, 100)
      expect(rare.estimated).to.equal(undefined)
      expect(rare.total).to.equal(40)
      // A page beyond the window widens it: offset 200 still finds its rows.
      expect(ix.search('common', {limit: 10, offset: 200}, 100).hits).to.have.length(10)
    } finally {
      ix.close()
    }
  })

  it('keeps an answer until the index is written, by this connection or another', () => {
    const file = join(tempDir(), 'fts.sqlite')
    const ix = new IndexStore(file)
    const other = new IndexStore(file)
    try {
      ix.transaction(() => {
        for (let i = 0; i < 20; i++) ix.put(`t:${i}`, `v${i}`, `word ${i}`)
      })
      const first = ix.search('word', page)
      expect(first.total).to.equal(20)
      // A caller changing its answer does not change the kept one.
      first.hits[0].id = 'changed'
      expect(ix.search('word', page).hits[0].id).to.not.equal('changed')
      ix.put('t:20', 'v20', 'word word word')
      expect(ix.search('word', page)).to.include({total: 21})
      expect(ix.search('word', page).hits[0].id).to.equal('t:20')
      ix.remove('t:20')
      expect(ix.search('word', page).total).to.equal(20)
      // A commit of another connection (the large-document worker's) is seen too.
      other.put('t:21', 'v21', 'word word word word')
      expect(ix.search('word', page).total).to.equal(21)
      expect(ix.search('word', page).hits[0].id).to.equal('t:21')
    } finally {
      other.close()
      ix.close()
    }
  })
})
