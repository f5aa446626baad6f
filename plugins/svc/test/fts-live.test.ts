import Database from 'better-sqlite3'
import {expect} from 'chai'
import {join} from 'node:path'

import {PhraseCounter, warmCommonCounts} from '../src/engine/fts/count-worker.js'
import {matchExpression} from '../src/engine/fts/match.js'
import {Bm25Scorer} from '../src/engine/fts/score.js'
import {IndexStore} from '../src/engine/fts/store.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'
import {bm25Page} from './helpers/bm25.js'
import {seededDoubles} from './helpers/seeded.js'

/** The rows a search matches, counted by FTS5 on a connection of its own. */
function matches(file: string, q: string, table: string | undefined): number {
  const raw = new Database(file, {readonly: true})
  try {
    return raw.prepare<[string], number>('SELECT count(*) FROM text WHERE text MATCH ?').pluck().get(matchExpression(q, table)!)!
  } finally {
    raw.close()
  }
}

describe('svc full-text search while the index is written (issue 26)', () => {
  after(cleanupTempDirs)

  it('gives every page exactly as bm25 after each update, insert and removal, from the counts and lists kept across this connection\'s writes', async () => {
    const file = join(tempDir(), 'fts.sqlite')
    const ix = new IndexStore(file)
    const counter = new PhraseCounter()
    const scorer = (ix as unknown as {scorer: Bm25Scorer}).scorer
    ix.countsQuietMs = 0
    const next = seededDoubles(29)
    // "kalo" and its longer words each in about a quarter of the rows (the prefix in more than
    // half), "bisu" in a quarter, "rare"/"lone" in a few; words repeated in a row, two tables.
    // No word is in half the rows: the store would leave it out of the scoring (its 1e-6 weight).
    const common = ['kalo', 'kaloba', 'kalobi', 'bisu']
    const token = (): string => (next(10) === 0 ? common[next(common.length)] : next(200) === 0 ? (next(2) ? 'rare' : 'lone') : `f${next(40)}`)
    const text = (): string => Array.from({length: 2 + next(20)}, token).join(' ')
    const id = (i: number): string => `${i % 3 ? 'a' : 'b'}:${i}`
    // A window under the common words' documents: their lists are too long to read whole, and
    // single words are estimated searches ranked from the kept lists.
    const window = 150
    const queries = ['rare kalo', 'lone kalo', 'rare bisu', 'lone kaloba', 'rare kal', 'kalobi', 'bisu', 'kalo', 'lone bis', 'f3 kalob', 'rare lone', 'rare', 'lon']
    // Whole lists read from the index, by phrase: writes here must not make a search read a list
    // again (it is brought up to date instead).
    const reads: string[] = []
    const readInstances = (Bm25Scorer.prototype as unknown as {readInstances: (phrase: string) => Int32Array}).readInstances
    ;(Bm25Scorer.prototype as unknown as {readInstances: (phrase: string) => Int32Array}).readInstances = function (phrase: string) {
      reads.push(phrase)
      return readInstances.call(this, phrase)
    }
    let compared = 0
    const check = (): void => {
      for (const q of queries) {
        for (const table of [undefined, 'a']) {
          for (const at of [{limit: 10, offset: 0}, {limit: 7, offset: 12}]) {
            const got = ix.search(q, {...at, table}, window)
            const ranked = got.estimated ? Math.max(Math.floor(window / 5), 4 * (at.offset + at.limit)) : undefined
            expect(got.hits, `${q} ${table} ${at.offset}`).to.deep.equal(bm25Page(file, q, table, at, ranked))
            if (ranked === undefined) expect(got.total, `${q} ${table} total`).to.equal(matches(file, q, table))
            compared++
          }
        }
      }
    }
    const drain = async (): Promise<void> => {
      for (let job = ix.countJob(); job !== undefined; job = ix.countJob()) {
        const answer = await counter.count(file, job.phrase, job.any)
        expect(answer).to.not.have.property('error')
        ix.countsDone(job, 'none' in answer ? null : (answer as {docs: number; f: Uint8Array; gen: string}))
      }
    }
    try {
      let rows = 2000
      ix.transaction(() => {
        for (let i = 0; i < rows; i++) ix.put(id(i), `v${i}`, text())
      })
      await warmCommonCounts(counter, ix, window, () => true)
      check()
      await drain()
      check()
      expect(scorer.counted('"kalo"*')).to.equal(true)
      // Writes between searches, one transaction each, as the engine indexes a batch: rewrites
      // (rows gaining, losing or changing how often they hold a kept phrase), new rows past the
      // counted ones, removals; every page compared after each.
      const holders = (word: string): string[] => {
        const raw = new Database(file, {readonly: true})
        try {
          return raw.prepare<[string], string>('SELECT d.id FROM text JOIN docs d ON d.rowid = text.rowid WHERE text MATCH ? ORDER BY text.rowid').pluck().all(`body : ${word}`)
        } finally {
          raw.close()
        }
      }
      for (let round = 0; round < 12; round++) {
        // Rows that hold a rare word kept whole: one loses it, one holds it more often, one is removed.
        const [lose, more, gone] = [holders('rare'), holders('lone'), holders('rare')].map((ids) => ids[next(ids.length)])
        ix.transaction(() => {
          ix.put(lose, `x${round}`, 'f1 kalo f2')
          ix.put(more, `m${round}`, `lone lone ${text()}`)
          ix.remove(gone)
        })
        check()
        ix.transaction(() => {
          for (let k = 0; k < 4; k++) {
            const kind = next(5)
            if (kind === 0) ix.put(id(rows), `n${rows}`, text()), rows++
            else if (kind === 1) ix.remove(id(next(rows)))
            else if (kind === 2) ix.put(id(next(rows)), `g${round}`, `rare lone kalo kalo kaloba bisu ${text()}`)
            else if (kind === 3) ix.put(id(next(rows)), `l${round}`, 'f1 f2 f3')
            else ix.put(id(next(rows)), `r${round}`, text())
          }
        })
        check()
        // A row written alone, outside a transaction.
        ix.put(id(next(rows)), `s${round}`, `kalobi ${text()}`)
        check()
      }
      expect(compared).to.equal(38 * queries.length * 4)
      // The lists and counts kept were brought up to date, not read again.
      expect(reads.length).to.be.greaterThan(0)
      expect(reads).to.deep.equal([...new Set(reads)])
      expect(scorer.counted('"kalo"*')).to.equal(true)
    } finally {
      ;(Bm25Scorer.prototype as unknown as {readInstances: (phrase: string) => Int32Array}).readInstances = readInstances
      await counter.close()
      ix.close()
    }
  })

  it('drops what it keeps when a transaction of writes fails (rolled back, those writes are not in the index)', () => {
    const file = join(tempDir(), 'fts.sqlite')
    const ix = new IndexStore(file)
    const scorer = (ix as unknown as {scorer: Bm25Scorer}).scorer
    try {
      ix.transaction(() => {
        for (let i = 0; i < 1800; i++) ix.put(`a:${i}`, `v${i}`, `${i % 3 ? 'rare' : 'lone'} f${i % 17} f${i % 5}`)
      })
      // The word's lists read whole and kept (a search of one word under the window).
      ix.search('lone', {limit: 10, offset: 0})
      expect(scorer.keeps('"lone"')).to.equal(true)
      expect(() =>
        ix.transaction(() => {
          for (let i = 0; i < 50; i++) ix.put(`a:${i}`, `w${i}`, 'lone lone lone')
          throw new Error('failed midway')
        }),
      ).to.throw('failed midway')
      expect(scorer.keeps('"lone"')).to.equal(false)
      for (const q of ['lone', 'rare', 'lone f3']) {
        const got = ix.search(q, {limit: 10, offset: 0})
        expect(got.hits, q).to.deep.equal(bm25Page(file, q, undefined, {limit: 10, offset: 0}))
        expect(got.total, q).to.equal(matches(file, q, undefined))
      }
    } finally {
      ix.close()
    }
  })
})
