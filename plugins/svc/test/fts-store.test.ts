import Database from 'better-sqlite3'
import {expect} from 'chai'
import {join} from 'node:path'

import {PhraseCounter, warmCommonCounts} from '../src/engine/fts/count-worker.js'
import {groupsExpression, matchExpression} from '../src/engine/fts/match.js'
import {Bm25Scorer} from '../src/engine/fts/score.js'
import {FTS_MERGE, IndexStore, type StoreHit} from '../src/engine/fts/store.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'
import {bm25Page} from './helpers/bm25.js'
import {seededDoubles} from './helpers/seeded.js'

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

  it('scores without the words in half the documents or more, as full BM25 does up to their 1e-6 weight, as counts cross the half', () => {
    const file = join(tempDir(), 'fts.sqlite')
    const ix = new IndexStore(file)
    // Full BM25 over every phrase of the search, as before scoredPhrases; a connection per look
    // (FTS5 keeps the row count and the average length it read until a connection writes).
    const full = (match: string): StoreHit[] => {
      const raw = new Database(file, {readonly: true})
      try {
        return raw
          .prepare<[string], StoreHit>(
            `SELECT d.id AS id, -x.s AS score FROM (SELECT rowid, bm25(text, 0.0, 1.0) AS s FROM text WHERE text MATCH ? ORDER BY s LIMIT 10) x
             JOIN docs d ON d.rowid = x.rowid ORDER BY x.s, d.id`,
          )
          .all(match)
      } finally {
        raw.close()
      }
    }
    const compare = (q: string, table?: string): {exact: boolean} => {
      const want = full(matchExpression(q, table)!)
      const got = ix.search(q, {limit: 10, offset: 0, table}).hits
      expect(got.map((h) => h.score), q).to.have.length(want.length)
      for (const [i, h] of got.entries()) expect(h.score, `${q} #${i}`).to.be.closeTo(want[i].score, 1e-5)
      return {exact: JSON.stringify(got) === JSON.stringify(want)}
    }
    try {
      // "alpha" in 12 of 20 documents (common), the rest rarer; lengths and counts vary the scores.
      ix.transaction(() => {
        for (let i = 0; i < 20; i++) ix.put(`t:${i}`, `v${i}`, `${i < 12 ? 'alpha '.repeat(1 + (i % 3)) : ''}${i % 3 === 0 ? 'beta '.repeat(1 + (i % 2)) : ''}gamma${i % 4} filler ${'x '.repeat(i % 7)}`)
      })
      // alpha left out of the scoring: its weight moves the scores by less than 1e-5.
      expect(compare('beta alpha').exact).to.equal(false)
      expect(compare('alpha gamma1').exact).to.equal(false)
      // Only common words, or a table's token alone (weight 0): scored as before, to the bit.
      expect(compare('alpha').exact).to.equal(true)
      expect(compare('gamma2', 't').exact).to.equal(true)
      compare('beta alpha', 't')
      // Ten more documents without alpha: 12 of 30, no longer common. The kept count is too old
      // to decide (each write may move it by one) and is counted again: alpha weighs in fully.
      ix.transaction(() => {
        for (let i = 20; i < 30; i++) ix.put(`t:${i}`, `v${i}`, `${i % 3 === 0 ? 'beta ' : ''}gamma${i % 4} other words ${i}`)
      })
      expect(compare('beta alpha').exact).to.equal(true)
      expect(compare('alpha gamma1').exact).to.equal(true)
      // Removing them does not bring it back: bm25's N is FTS5's row total, which a contentless
      // table's deletes leave as it was (12 of 30 still).
      ix.transaction(() => {
        for (let i = 20; i < 30; i++) ix.remove(`t:${i}`)
      })
      expect(compare('beta alpha').exact).to.equal(true)
      // Ten more documents with alpha do: 22 of 40.
      ix.transaction(() => {
        for (let i = 30; i < 40; i++) ix.put(`t:${i}`, `v${i}`, `alpha ${i % 3 === 0 ? 'beta ' : ''}more words ${i}`)
      })
      expect(compare('beta alpha').exact).to.equal(false)
    } finally {
      ix.close()
    }
  })

  it('answers a last word no longer word starts with exactly as its prefix search, also after one is written', () => {
    const file = join(tempDir(), 'fts.sqlite')
    const ix = new IndexStore(file)
    const other = new IndexStore(file)
    // Every match, ranked by full BM25 over the search's own expression (the prefix phrase kept),
    // on a connection of its own as a user's general path would.
    const full = (q: string, table?: string): {hits: StoreHit[]; total: number} => {
      const raw = new Database(file, {readonly: true})
      try {
        const match = matchExpression(q, table)!
        const hits = raw
          .prepare<[string], StoreHit>(
            `SELECT d.id AS id, -x.s AS score FROM (SELECT rowid, bm25(text, 0.0, 1.0) AS s FROM text WHERE text MATCH ? ORDER BY s LIMIT 50) x
             JOIN docs d ON d.rowid = x.rowid ORDER BY x.s, d.id`,
          )
          .all(match)
        return {hits, total: raw.prepare<[string], number>('SELECT count(*) FROM text WHERE text MATCH ?').pluck().get(match)!}
      } finally {
        raw.close()
      }
    }
    const queries = ['lomi', 'kaka', 'suta lomi', 'lomi suta', 'kaka lomi', 'lomi kaka', 'suta kakalo', 'kak', 'lom']
    const same = (): void => {
      for (const q of queries) {
        for (const table of [undefined, 'a']) expect(ix.search(q, {limit: 50, offset: 0, table}), `${q} ${table}`).to.deep.equal(full(q, table))
      }
    }
    try {
      // "lomi" is no prefix of another word (until later), "kaka" is ("kakalo"); counts and lengths
      // vary, and every word is in fewer than half the documents (all are scored: see scoredPhrases).
      ix.transaction(() => {
        for (let i = 0; i < 40; i++) {
          const words = [i % 2 && i < 28 ? 'lomi' : '', ['kakalo', 'kaka', ''][i % 3], i % 5 ? '' : 'lomi lomi', i % 4 ? '' : 'suta', 'filler '.repeat(i % 6)]
          ix.put(`${i % 3 ? 'a' : 'b'}:${i}`, `v${i}`, words.join(' '))
        }
      })
      same()
      // Another connection writes the first word "lomi" starts: the prefix finds it from then on.
      other.put('a:lomisu', 'v', 'lomisu suta kaka')
      same()
      expect(ix.search('lomi', {limit: 50, offset: 0}).hits.map((h) => h.id)).to.include('a:lomisu')
      other.remove('a:lomisu')
      same()
      ix.put('a:lomiri', 'v', 'lomiri lomiri')
      same()
      expect(ix.search('suta lomi', {limit: 50, offset: 0}).total).to.equal(full('suta lomi').total)
    } finally {
      other.close()
      ix.close()
    }
  })

  it('scores the first matches of a search over the window as FTS5 bm25 does, to the bit, before and after writes, also from lists kept', () => {
    const file = join(tempDir(), 'fts.sqlite')
    const ix = new IndexStore(file)
    const next = seededDoubles(7)
    // Words in 5-40% of the documents, some repeated in a document, lengths 3-30 tokens; "mo"
    // and "mora" are prefixes of longer words, "tiva" is not.
    const vocabulary = ['mo', 'mora', 'morano', 'tiva', 'sel', 'selka', 'pu', 'filler', 'other']
    const text = (): string => Array.from({length: 3 + next(28)}, () => vocabulary[next(next(2) ? vocabulary.length : 4)]).join(' ')
    const check = (): void => {
      for (const q of ['mo', 'mora', 'tiva', 'mora tiva', 'tiva mo', 'sel mora', 'selka']) {
        for (const table of [undefined, 'a']) {
          // The last page ranks 420 rows: lists are read on past their first read (fts/score.ts).
          for (const page of [{limit: 5, offset: 0}, {limit: 3, offset: 4}, {limit: 5, offset: 100}]) {
            // A window of 50: 10 ranked unless the page needs 4 times its rows (fts/store.ts).
            const ranked = Math.max(10, 4 * (page.offset + page.limit))
            const got = ix.search(q, {...page, table}, 50)
            if (!got.estimated) continue
            expect(got.hits, `${q} ${table} ${page.offset}`).to.deep.equal(bm25Page(file, q, table, page, ranked))
            estimated++
          }
        }
      }
      // Again, other pages, once a search under a wider window had fts/score.ts read (and keep)
      // each word's whole lists: they give a word's rows (no walk of the index) and each
      // phrase's document count (bm25's weight of it in a search of several words).
      // (A write first: nothing counted in this state of the index before the lists are kept.)
      ix.put(`b:kept${estimated}`, 'v', 'filler other')
      for (const q of ['mo', 'mora', 'tiva', 'sel']) expect(ix.search(q, {limit: 1, offset: 0}, 100_000).estimated).to.equal(undefined)
      for (const q of ['mo', 'mora', 'tiva', 'mora tiva', 'tiva mo', 'sel mora']) {
        for (const page of [{limit: 4, offset: 1}, {limit: 2, offset: 60}]) {
          const ranked = Math.max(10, 4 * (page.offset + page.limit))
          const got = ix.search(q, page, 50)
          if (!got.estimated) continue
          expect(got.hits, `${q} kept ${page.offset}`).to.deep.equal(bm25Page(file, q, undefined, page, ranked))
          estimated++
        }
      }
    }
    let estimated = 0
    // How many searches found their rows in kept lists (fts/score.ts matchesOf).
    let fromKept = 0
    const matchesOf = Bm25Scorer.prototype.matchesOf
    Bm25Scorer.prototype.matchesOf = function (...args) {
      fromKept++
      return matchesOf.apply(this, args)
    }
    try {
      ix.transaction(() => {
        for (let i = 0; i < 8000; i++) ix.put(`${i % 4 ? 'a' : 'b'}:${i}`, `v${i}`, text())
      })
      check()
      // Updates (deleted then written again under the same row) and removals among the rows ranked.
      ix.transaction(() => {
        for (let i = 0; i < 200; i += 3) ix.put(`${i % 4 ? 'a' : 'b'}:${i}`, `w${i}`, text())
        for (let i = 1; i < 200; i += 7) ix.remove(`${i % 4 ? 'a' : 'b'}:${i}`)
      })
      check()
      // A word longer than "tiva" appears: its prefix now reaches it.
      ix.put('a:tivaro', 'v', 'tivaro tiva tivaro')
      check()
      expect(estimated).to.be.greaterThan(40)
      expect(fromKept).to.be.greaterThan(10)
    } finally {
      Bm25Scorer.prototype.matchesOf = matchesOf
      ix.close()
    }
  })

  it('ranks a search under the window from its words\' whole lists exactly as FTS5 bm25 does, also after writes here and by another connection', () => {
    const file = join(tempDir(), 'fts.sqlite')
    const ix = new IndexStore(file)
    const other = new IndexStore(file)
    // bm25 on a connection of its own (the general path): `scored` over the rows of the whole
    // search; among rows of equal score the lower rowid first, then the page by score and id.
    const full = (q: string, scored: string, table: string | undefined, page: {limit: number; offset: number}): StoreHit[] => {
      const raw = new Database(file, {readonly: true})
      try {
        return raw
          .prepare<[string, string, number, number], StoreHit>(
            `SELECT d.id AS id, -x.s AS score FROM (
               SELECT rowid, bm25(text, 0.0, 1.0) AS s FROM text WHERE text MATCH ? AND +rowid IN (SELECT rowid FROM text WHERE text MATCH ?)
               ORDER BY s, rowid LIMIT ? OFFSET ?) x
             JOIN docs d ON d.rowid = x.rowid ORDER BY x.s, d.id`,
          )
          .all(scored, matchExpression(q, table)!, page.limit, page.offset)
      } finally {
        raw.close()
      }
    }
    const next = seededDoubles(11)
    // "common" is in every document (it scores nothing: see scoredPhrases); "tiva", "mora" and
    // "sel" each in about a third, "mora" the prefix of longer words (its prefix in more than
    // half), "tiva" of none; 2-31 tokens, words repeated in a document, so many rows tie and
    // many do not.
    const words = ['tiva', 'mora', 'morano', 'moravi', 'sel']
    const token = (): string => (next(8) === 0 ? words[next(words.length)] : `f${next(30)}`)
    const text = (): string => ['common', ...Array.from({length: 1 + next(30)}, token)].join(' ')
    // [query, the phrases it is scored by]: a word alone, and with a word that scores nothing.
    const searches: Array<[string, string]> = [
      ['tiva', groupsExpression([['"tiva"', '"tiva"*']])],
      ['mora', groupsExpression([['"mora"', '"mora"*']])],
      ['sel', groupsExpression([['"sel"', '"sel"*']])],
      ['tiva common', groupsExpression([['"tiva"']])],
      ['sel common', groupsExpression([['"sel"']])],
      ['common mora', groupsExpression([['"mora"', '"mora"*']])],
      // Several words that all score: over the search's rows, whatever their number.
      ['tiva sel', matchExpression('tiva sel')!],
      ['mora tiva', matchExpression('mora tiva')!],
    ]
    let compared = 0
    // How many searches fts/score.ts ranked (the rest went to bm25): both paths are compared.
    let own = 0
    const scoreWhole = Bm25Scorer.prototype.scoreWhole
    Bm25Scorer.prototype.scoreWhole = function (...args) {
      const scored = scoreWhole.apply(this, args)
      if (scored) own++
      return scored
    }
    const check = (): void => {
      for (const [q, scored] of searches) {
        for (const table of [undefined, 'a']) {
          // The lengths read by rowid ranges (warmLengths, as the engine does once caught up) and
          // those read by the searches themselves give the same answers.
          if (table === 'a') while (ix.warmLengths(256));
          for (const page of [{limit: 10, offset: 0}, {limit: 7, offset: 30}, {limit: 100, offset: 0}]) {
            const got = ix.search(q, {...page, table})
            expect(got.estimated).to.equal(undefined)
            const tableScored = table === undefined ? scored : `tbl : "t61" AND ${scored}`
            // With a table the table's token is one more phrase: its weight 0 adds exactly 0.
            expect(got.hits, `${q} ${table} ${page.offset}`).to.deep.equal(full(q, tableScored, table, page))
            compared++
          }
        }
      }
    }
    try {
      ix.transaction(() => {
        for (let i = 0; i < 3000; i++) ix.put(`${i % 4 ? 'a' : 'b'}:${i}`, `v${i}`, text())
      })
      check()
      // Rewritten rows (other lengths, other counts) and removed ones among those ranked.
      ix.transaction(() => {
        for (let i = 0; i < 600; i += 3) ix.put(`${i % 4 ? 'a' : 'b'}:${i}`, `w${i}`, text())
        for (let i = 1; i < 600; i += 7) ix.remove(`${i % 4 ? 'a' : 'b'}:${i}`)
      })
      check()
      // Another connection (the large-document worker's) rewrites rows this one has read.
      other.transaction(() => {
        for (let i = 2; i < 600; i += 5) other.put(`${i % 4 ? 'a' : 'b'}:${i}`, `x${i}`, `${text()} tiva mora sel ${text()}`)
      })
      check()
      // A word longer than "tiva" appears: its prefix now reaches it.
      ix.put('a:tivaro', 'v', 'common tivaro tiva tivaro')
      check()
      expect(compared).to.equal(4 * searches.length * 2 * 3)
      expect(own).to.be.greaterThan(compared / 2)
    } finally {
      Bm25Scorer.prototype.scoreWhole = scoreWhole
      other.close()
      ix.close()
    }
  })

  it('ranks few rows with common words from per-row counts built in the worker exactly as FTS5 bm25 does, before and after writes here and by another connection, keeps counts this connection\'s writes overtook and drops those another\'s did', async () => {
    const file = join(tempDir(), 'fts.sqlite')
    const ix = new IndexStore(file)
    const other = new IndexStore(file)
    const counter = new PhraseCounter()
    const scorer = (ix as unknown as {scorer: Bm25Scorer}).scorer
    // Asked for right after writes here (the engine waits for a second without one).
    ix.countsQuietMs = 0
    // The general path: bm25 over the whole search on a connection of its own; among rows of
    // equal score the lower rowid first, then the page by score and id.
    const full = (q: string, at: {limit: number; offset: number}): StoreHit[] => {
      const raw = new Database(file, {readonly: true})
      try {
        return raw
          .prepare<[string, number, number], StoreHit>(
            `SELECT d.id AS id, -x.s AS score FROM (SELECT rowid, bm25(text, 0.0, 1.0) AS s FROM text WHERE text MATCH ? ORDER BY s, rowid LIMIT ? OFFSET ?) x
             JOIN docs d ON d.rowid = x.rowid ORDER BY x.s, d.id`,
          )
          .all(matchExpression(q)!, at.limit, at.offset)
      } finally {
        raw.close()
      }
    }
    const next = seededDoubles(5)
    // "kalo" in about a third of the documents, its longer words as often (the prefix in most),
    // "bisu" (no longer word) in a third, "rare"/"lone" in a few; words repeated in a document.
    const common = ['kalo', 'kaloba', 'kalobi', 'bisu']
    const token = (): string => (next(8) === 0 ? common[next(common.length)] : next(300) === 0 ? (next(2) ? 'rare' : 'lone') : `f${next(40)}`)
    const text = (): string => Array.from({length: 2 + next(25)}, token).join(' ')
    const queries = ['rare kalo', 'lone kalo', 'rare bisu', 'lone kaloba', 'rare kal']
    // A window under the common words' documents: they are "too long to read whole" here.
    const window = 150
    let own = 0
    const scoreWhole = Bm25Scorer.prototype.scoreWhole
    Bm25Scorer.prototype.scoreWhole = function (...args) {
      const scored = scoreWhole.apply(this, args)
      if (scored && args[3] && args[0].some((phrase) => this.counted(phrase))) own++
      return scored
    }
    let compared = 0
    // After a drain, other pages than before it: an answer already given is kept until the next write.
    const check = (drained = false): void => {
      for (const q of queries) {
        for (const at of drained ? [{limit: 10, offset: 1}, {limit: 5, offset: 0}, {limit: 50, offset: 3}] : [{limit: 10, offset: 0}, {limit: 7, offset: 9}, {limit: 100, offset: 0}]) {
          const got = ix.search(q, at, window)
          expect(got.estimated, q).to.equal(undefined)
          expect(got.hits, `${q} ${at.offset}`).to.deep.equal(full(q, at))
          compared++
        }
      }
    }
    // Every query once more after the per-row counts are built by the worker, as the engine does.
    const drain = async (): Promise<void> => {
      for (let job = ix.countJob(); job !== undefined; job = ix.countJob()) {
        const answer = await counter.count(file, job.phrase, job.any)
        expect(answer).to.not.have.property('error')
        expect(ix.countsDone(job, 'none' in answer ? null : (answer as {docs: number; f: Uint8Array}))).to.equal(true)
      }
    }
    try {
      ix.transaction(() => {
        for (let i = 0; i < 3000; i++) ix.put(`a:${i}`, `v${i}`, text())
      })
      // The engine's warm-up: the commonest terms' phrases are counted before any search names them.
      await warmCommonCounts(counter, ix, window, () => true)
      expect(['"kalo"*', '"kalo"', '"bisu"*', '"f7"'].map((p) => scorer.counted(p))).to.deep.equal([true, true, true, true])
      expect(own).to.equal(0)
      check()
      expect(own).to.be.greaterThan(0)
      const before = own
      await drain()
      expect(scorer.counted('"kalo"*')).to.equal(true)
      check(true)
      expect(own).to.be.greaterThan(before)
      // Rewritten and removed rows: what was counted is dropped, counted again, the same answers.
      ix.transaction(() => {
        for (let i = 0; i < 900; i += 3) ix.put(`a:${i}`, `w${i}`, text())
        for (let i = 1; i < 900; i += 7) ix.remove(`a:${i}`)
      })
      check()
      await drain()
      check(true)
      // Another connection writes while the worker reads: its counts (of either state) are dropped.
      ix.search('lone kalob', {limit: 10, offset: 0}, window)
      const job = ix.countJob()!
      expect(job.phrase).to.equal('"kalob"*')
      const answer = counter.count(file, job.phrase, job.any)
      other.transaction(() => {
        for (let i = 2; i < 900; i += 5) other.put(`a:${i}`, `x${i}`, `${text()} kalo bisu bisu kaloba ${text()}`)
      })
      const stale = await answer
      expect(ix.countsDone(job, stale as {docs: number; f: Uint8Array})).to.equal(false)
      expect(scorer.counted('"kalob"*')).to.equal(false)
      check()
      await drain()
      check(true)
      // Writes here after the worker read (after one by the other connection, which drops what was
      // counted, so the searches ask again): the counts are kept, and this connection's writes
      // since the worker's snapshot applied to them (rows gaining, losing and changing how often
      // they hold the phrase, a new row past the counted ones, a removed one).
      other.put('a:5', 'y5', `${text()} kalo kaloba`)
      check()
      const job2 = ix.countJob()!
      const answer2 = await counter.count(file, job2.phrase, job2.any)
      expect(answer2).to.have.property("gen")
      ix.transaction(() => {
        ix.put('a:late', 'l', `rare kal kalo kaloba bisu ${text()}`)
        ix.put('a:10', 'l10', 'rare kalo kalo kaloba kalobi')
        ix.put('a:11', 'l11', 'lone f1 f2')
        ix.remove('a:12')
      })
      expect(ix.countsDone(job2, answer2 as {docs: number; f: Uint8Array; gen: string})).to.equal(true)
      ix.put('a:13', 'l13', `lone rare ${'kalo bisu '.repeat(20)}`)
      expect(scorer.counted(job2.phrase), job2.phrase).to.equal(true)
      check()
      await drain()
      ix.remove('a:14')
      check(true)
      // Right after another connection's write, with the engine's quiet time, nothing is asked for.
      ix.countsQuietMs = 60_000
      other.put('a:quiet', 'q', 'rare kalo')
      check()
      expect(ix.countsPending).to.equal(false)
      ix.countsQuietMs = 0
      // A row holding a word 255 times or more: that word is left to bm25.
      ix.put('a:many', 'm', `rare lone ${'kalo '.repeat(300)}`)
      check()
      await drain()
      expect(scorer.counted('"kalo"')).to.equal(false)
      check(true)
      expect(compared).to.equal(12 * queries.length * 3)
      expect(own).to.be.greaterThan(0)
    } finally {
      Bm25Scorer.prototype.scoreWhole = scoreWhole
      await counter.close()
      other.close()
      ix.close()
    }
  })

  it('keeps per-row counts read after transactions of writes here, each row of the written ones counted as last written', async () => {
    const file = join(tempDir(), 'fts.sqlite')
    const ix = new IndexStore(file)
    const counter = new PhraseCounter()
    const scorer = (ix as unknown as {scorer: Bm25Scorer}).scorer
    ix.countsQuietMs = 0
    const text = (i: number): string => `${i % 3 === 0 ? 'kalo kalo' : 'f1'} ${i % 5 === 0 ? 'rare' : 'f2'} f${i % 7}`
    try {
      ix.put('a:first', 'v', 'kalo rare')
      ix.transaction(() => {
        for (let i = 0; i < 300; i++) ix.put(`a:${i}`, `v${i}`, text(i))
      })
      // Asked after a transaction, and read by the worker after another: the worker's snapshot
      // must tell that it holds both, or the counts are dropped as of an unknown state.
      const job = ix.countJob('"kalo"')!
      ix.transaction(() => {
        for (let i = 0; i < 300; i += 2) ix.put(`a:${i}`, `w${i}`, text(i + 1))
        ix.put('a:late', 'l', 'kalo kalo kalo rare')
        ix.remove('a:9')
      })
      const answer = await counter.count(file, job.phrase, job.any)
      expect(answer).to.have.property('gen')
      expect(ix.countsDone(job, answer as {docs: number; f: Uint8Array; gen: string})).to.equal(true)
      expect(scorer.counted('"kalo"')).to.equal(true)
      const raw = new Database(file, {readonly: true})
      try {
        const expected = raw.prepare<[], number>(`SELECT count(*) FROM text WHERE text MATCH 'body : "kalo"'`).pluck().get()
        expect(scorer.countedDocs('"kalo"')).to.equal(expected)
      } finally {
        raw.close()
      }
    } finally {
      await counter.close()
      ix.close()
    }
  })

  it('keeps per-row counts of words and prefixes up to date after each transaction, through more writes here than its log holds, each as a fresh count of the index', async () => {
    const file = join(tempDir(), 'fts.sqlite')
    const ix = new IndexStore(file)
    const counter = new PhraseCounter()
    const scorer = (ix as unknown as {scorer: Bm25Scorer}).scorer
    const keptCounts = (scorer as unknown as {counts: Map<string, {value: {docs: number; f: Uint8Array}}>}).counts
    ix.countsQuietMs = 0
    const next = seededDoubles(11)
    // "kalo" alone and in longer words, "kal" only as a prefix, "bisu" a word no other extends;
    // words repeated in a row, rows that lose every one of them.
    const words = ['kalo', 'kaloba', 'kalobi', 'kal', 'bisu', 'f1', 'f2', 'f3']
    const text = (): string => Array.from({length: 1 + next(12)}, () => words[next(words.length)]).join(' ')
    const phrases = ['"kalo"*', '"kalo"', '"kaloba"*', '"kal"*', '"bisu"', '"kaloba"']
    try {
      ix.transaction(() => {
        for (let i = 0; i < 400; i++) ix.put(`a:${i}`, `v${i}`, text())
      })
      for (const phrase of phrases) {
        const job = ix.countJob(phrase)!
        const answer = await counter.count(file, job.phrase, job.any)
        expect(ix.countsDone(job, answer as {docs: number; f: Uint8Array; gen: string}), phrase).to.equal(true)
      }
      // Past the log's 4,096 rows; the counts follow each transaction, so no write pays for the
      // whole log at once: after each, every count is already at the log's generation.
      const log = (ix as unknown as {rowLog: {gen: number}}).rowLog
      const generations = scorer as unknown as {counts: Map<string, {gen: number}>}
      for (let batch = 0; batch < 12; batch++) {
        ix.transaction(() => {
          for (let i = 0; i < 400; i++) {
            const id = next(3) === 0 ? `a:${next(400)}` : `b:${batch}-${i}`
            if (next(20) === 0) ix.remove(id)
            else ix.put(id, `w${batch}-${i}`, text())
          }
        })
        for (const phrase of phrases) expect(generations.counts.get(phrase)!.gen, phrase).to.equal(log.gen)
      }
      for (const phrase of phrases) {
        expect(scorer.counted(phrase), phrase).to.equal(true)
        const fresh = (await counter.count(file, phrase, true)) as {docs: number; f: Uint8Array}
        const kept = keptCounts.get(phrase)!.value
        expect(kept.docs, phrase).to.equal(fresh.docs)
        expect([...kept.f.subarray(0, fresh.f.length)], phrase).to.deep.equal([...fresh.f])
        expect(kept.f.subarray(fresh.f.length).every((n) => n === 0), phrase).to.equal(true)
      }
    } finally {
      await counter.close()
      ix.close()
    }
  })

  it('reads a word\'s list again after a write that changes only how often rows hold it, here or by another connection', () => {
    const file = join(tempDir(), 'fts.sqlite')
    const ix = new IndexStore(file)
    const other = new IndexStore(file)
    // bm25 on a connection of its own: the general path.
    const bm25 = (q: string): StoreHit[] => {
      const raw = new Database(file, {readonly: true})
      try {
        return raw
          .prepare<[string], StoreHit>(
            `SELECT d.id AS id, -x.s AS score FROM (SELECT rowid, bm25(text, 0.0, 1.0) AS s FROM text WHERE text MATCH ? ORDER BY s, rowid LIMIT 10) x
             JOIN docs d ON d.rowid = x.rowid ORDER BY x.s, d.id`,
          )
          .all(matchExpression(q)!)
      } finally {
        raw.close()
      }
    }
    const firstRanked = (q: string, ranked: number, at: {limit: number; offset: number}): StoreHit[] => bm25Page(file, q, undefined, at, ranked)
    // Searches over a small window once "alpha"'s list is kept: "alpha" alone takes its rows from
    // the kept lists, "w3 alpha" (its first 4 matches ranked, early in the index: fts/score.ts)
    // weighs "alpha" by the documents of its kept list.
    const estimated = (): void => {
      const alone = ix.search('alpha', {limit: 5, offset: 2}, 100)
      expect(alone.estimated).to.equal(true)
      expect(alone.hits).to.deep.equal(firstRanked('alpha', 28, {limit: 5, offset: 2}))
      const two = ix.search('w3 alpha', {limit: 1, offset: 0}, 20)
      expect(two.estimated).to.equal(true)
      expect(two.hits).to.deep.equal(firstRanked('w3 alpha', 4, {limit: 1, offset: 0}))
    }
    // "alpha" in 800 of 2,000 rows (ranked from its whole list, which the store keeps between
    // searches), "beta" in 40 of those; the rewrites below keep every row's words, only the counts move.
    // Every row 8 tokens long, so the row given more "alpha"s ranks first.
    const text = (i: number, alphas = 1): string => {
      const words = [...(i % 5 < 2 ? Array.from({length: alphas}, () => 'alpha') : []), ...(i % 50 === 0 ? ['beta'] : [])]
      return [...words, ...Array.from({length: 8 - words.length}, (_, k) => `w${(i + k) % 97}`)].join(' ')
    }
    try {
      ix.transaction(() => {
        for (let i = 0; i < 2000; i++) ix.put(`a:${i}`, `v${i}`, text(i))
      })
      for (const q of ['alpha', 'beta alpha']) expect(ix.search(q, page).hits, q).to.deep.equal(bm25(q))
      estimated()
      // A row given more "alpha"s, written here and then by the other connection; the searches
      // run in both orders so either may be the one that reads the list again.
      const rewrites = [
        {alphas: 4, by: ix, i: 700, order: ['beta alpha', 'alpha'], version: 'w700'},
        {alphas: 6, by: other, i: 1300, order: ['alpha', 'beta alpha'], version: 'x1300'},
      ]
      for (const r of rewrites) {
        r.by.put(`a:${r.i}`, r.version, text(r.i, r.alphas))
        for (const q of r.order) {
          const got = ix.search(q, page)
          expect(got.hits[0].id, q).to.equal(`a:${r.i}`)
          expect(got.hits, q).to.deep.equal(bm25(q))
        }
        estimated()
      }
    } finally {
      other.close()
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
  it('merges FTS5 segments 8 at a time, also in a file made with FTS5\'s defaults, and finds every document written a transaction each', () => {
    const file = join(tempDir(), 'fts.sqlite')
    new IndexStore(file).close()
    // A file of an earlier version: FTS5's defaults.
    const raw = new Database(file)
    raw.exec(`INSERT INTO text(text, rank) VALUES ('automerge', 4); INSERT INTO text(text, rank) VALUES ('crisismerge', 16)`)
    raw.close()
    const ix = new IndexStore(file)
    try {
      const config = (): Record<string, unknown> => {
        const db = new Database(file, {readonly: true})
        try {
          return Object.fromEntries(db.prepare<[], {k: string; v: unknown}>('SELECT k, v FROM text_config').all().map((r) => [r.k, r.v]))
        } finally {
          db.close()
        }
      }
      expect(config()).to.include(FTS_MERGE)
      for (let i = 0; i < 120; i++) ix.transaction(() => ix.put(`t:${i}`, `v${i}`, `common word${i}`))
      // Merged four at a time (FTS5's defaults) 120 one-row segments leave 12: here 57 (a level
      // is merged eight at a time, and only merged whole at crisismerge's 64).
      const db = new Database(file, {readonly: true})
      try {
        expect(db.prepare('SELECT count(DISTINCT segid) FROM text_idx').pluck().get()).to.be.within(20, 64)
      } finally {
        db.close()
      }
      expect(ix.search('common', {limit: 200, offset: 0}).total).to.equal(120)
      expect(ix.search('word7 common', page).hits.map((h) => h.id)).to.deep.equal(['t:7'])
    } finally {
      ix.close()
    }
  })
})
