import Database from 'better-sqlite3'
import {expect} from 'chai'

import {noteForeground} from '../src/engine/background-gate.js'
import {FullTextIndex} from '../src/engine/fulltext.js'
import {matchExpression} from '../src/engine/fts/match.js'
import type {Bm25Scorer} from '../src/engine/fts/score.js'
import {type IndexStore, SEARCH_WINDOW} from '../src/engine/fts/store.js'
import {seeded32} from './helpers/seeded.js'
import {cleanupTempDirs, memoryLogger, tempDir} from './helpers/tmp.js'

type Docs = Map<string, {body: Buffer; sha: string}>

/**
 * 2,000 notes of a few words each: about one word in six is `kalo`, `kaloba` or `kalobi` (a common
 * prefix), one in 200 `rare`, so that `rare kalo` is a search bm25 ranks by counting the prefix's
 * every document.
 */
function kaloNotes(seed: number): Docs {
  const next = seeded32(seed)
  const words = ['kalo', 'kaloba', 'kalobi']
  const token = (): string => (next(6) === 0 ? words[next(words.length)] : next(200) === 0 ? 'rare' : `f${next(40)}`)
  const docs: Docs = new Map()
  for (let i = 0; i < 2000; i++) {
    const text = Array.from({length: 2 + next(20)}, token).join(' ')
    docs.set(`notes:${i}`, {body: Buffer.from(JSON.stringify({text})), sha: i.toString(16).padStart(40, '0')})
  }
  return docs
}

/** A full-text index over `docs` on branch main, as the engine makes one. */
function indexOf(docs: Docs, batchSize: number): FullTextIndex {
  return new FullTextIndex({
    batchSize,
    checkIntervalMs: 3_600_000,
    currentCount: () => docs.size,
    currentIds: () => docs.keys(),
    currentSha: (_branch, id) => docs.get(id)?.sha,
    dir: tempDir(),
    logger: memoryLogger().logger,
    readBody: async (_branch, id) => docs.get(id),
  })
}

/** Opens `index` and waits for it to be caught up; its store and scorer, to see what was built (nothing else reaches them). */
async function openReady(index: FullTextIndex): Promise<{scorer: Bm25Scorer; store: IndexStore}> {
  await index.open(['main'])
  const until = Date.now() + 60_000
  while (index.status('main').state !== 'ready' && Date.now() < until) await new Promise((r) => setTimeout(r, 10))
  expect(index.status('main').state).to.equal('ready')
  const store = (index as unknown as {branches: Map<string, {store: IndexStore}>}).branches.get('main')!.store
  return {scorer: (store as unknown as {scorer: Bm25Scorer}).scorer, store}
}

/**
 * A search of a rare word with a common prefix is ranked by bm25, which counts the prefix's every
 * document on each search; the engine then builds that phrase's per-row counts in the background
 * (fts/count-worker.ts, a worker thread), and the same search answers the same from them.
 */
describe('svc full-text index: per-row counts built in the background after a search', () => {
  after(cleanupTempDirs)

  it('builds the counts a search asked for without being asked again, and answers the same after', async () => {
    const docs = kaloNotes(9)
    const index = indexOf(docs, 500)
    try {
      const {scorer, store} = await openReady(index)
      const before = index.search('main', 'rare kalo', {limit: 100, offset: 0})
      expect(before.total).to.be.greaterThan(3)
      expect(scorer.counted('"kalo"*')).to.equal(false)
      const built = Date.now() + 10_000
      while ((store.countsPending || !scorer.counted('"kalo"*')) && Date.now() < built) await new Promise((r) => setTimeout(r, 5))
      expect(scorer.counted('"kalo"*')).to.equal(true)
      // Another page size: not the answer kept from the first search.
      const after = index.search('main', 'rare kalo', {limit: 99, offset: 0})
      expect(after).to.deep.equal(before)
    } finally {
      await index.close()
    }
  })
  it('frees the count slot when a count job cannot start yet, so later counts start and the event loop keeps turning', async () => {
    const docs = kaloNotes(11)
    const index = indexOf(docs, 500)
    try {
      const {scorer, store} = await openReady(index)
      const branch = (index as unknown as {branches: Map<string, {counting?: Promise<void>}>}).branches.get('main')!
      // A search whose count job cannot start (countJob gives none while a bulk build writes the
      // file without a journal: a search during a first start's build at 1M).
      const bulk = store as unknown as {bulk: boolean}
      bulk.bulk = true
      index.search('main', 'rare kalo', {limit: 100, offset: 0})
      bulk.bulk = false
      expect(store.countsPending, 'the counts still wait').to.equal(true)
      await new Promise((r) => setImmediate(r))
      // A settled promise left in the slot kept every later count from starting and made the
      // warm-up's wait for the slot spin the event loop for good (the server answered nothing).
      expect(branch.counting, 'the count slot freed').to.equal(undefined)
      const before = index.search('main', 'rare kalo', {limit: 100, offset: 0})
      const built = Date.now() + 10_000
      while ((store.countsPending || !scorer.counted('"kalo"*')) && Date.now() < built) await new Promise((r) => setTimeout(r, 5))
      expect(scorer.counted('"kalo"*'), 'counted by the next search').to.equal(true)
      expect(index.search('main', 'rare kalo', {limit: 99, offset: 0}).ids).to.deep.equal(before.ids.slice(0, 99))
    } finally {
      await index.close()
    }
  })

  it('counts the commonest phrases only once requests pause, and searches find every match after', async () => {
    // More documents than the search window hold "kalo": the warm-up's kind of phrase.
    const docs: Docs = new Map()
    for (let i = 0; i < SEARCH_WINDOW + 500; i++) {
      const text = `kalo f${i % 97} ${i % 50 === 0 ? 'rare' : ''}`
      docs.set(`notes:${i}`, {body: Buffer.from(JSON.stringify({text})), sha: i.toString(16).padStart(40, '0')})
    }
    const index = indexOf(docs, 4000)
    // Requests keep arriving (what the engine's entry points note) from before the index is ready.
    const requests = setInterval(noteForeground, 10)
    try {
      const {scorer} = await openReady(index)
      await new Promise((r) => setTimeout(r, 1500))
      expect(scorer.counted('"kalo"*'), 'counted while requests kept arriving').to.equal(false)
      clearInterval(requests)
      const built = Date.now() + 20_000
      while (!scorer.counted('"kalo"*') && Date.now() < built) await new Promise((r) => setTimeout(r, 10))
      expect(scorer.counted('"kalo"*'), 'counted once they paused').to.equal(true)
      // Scored from the counts now (fts-store.test.ts compares such answers with bm25's): every match found.
      const page = index.search('main', 'rare kalo', {limit: 7, offset: 3})
      expect(page.total).to.equal((SEARCH_WINDOW + 500) / 50)
      expect(page.ids).to.have.length(7)
    } finally {
      clearInterval(requests)
      await index.close()
    }
  })

  it('keeps the counts across writes through the engine\'s write path, the answers those of bm25 after each', async () => {
    const next = seeded32(13)
    const words = ['kalo', 'kaloba', 'kalobi']
    const token = (): string => (next(6) === 0 ? words[next(words.length)] : next(200) === 0 ? 'rare' : `f${next(40)}`)
    const text = (): string => Array.from({length: 2 + next(20)}, token).join(' ')
    const docs: Docs = new Map()
    for (let i = 0; i < 2000; i++) docs.set(`notes:${i}`, {body: Buffer.from(JSON.stringify({text: text()})), sha: i.toString(16).padStart(40, '0')})
    const index = indexOf(docs, 500)
    // The general path: bm25 over the whole search on a connection of its own.
    const bm25 = (file: string, q: string): Array<{id: string; score: number}> => {
      const raw = new Database(file, {readonly: true})
      try {
        return raw
          .prepare<[string], {id: string; score: number}>(
            `SELECT d.id AS id, -x.s AS score FROM (SELECT rowid, bm25(text, 0.0, 1.0) AS s FROM text WHERE text MATCH ? ORDER BY s, rowid LIMIT 100) x
             JOIN docs d ON d.rowid = x.rowid ORDER BY x.s, d.id`,
          )
          .all(matchExpression(q)!)
      } finally {
        raw.close()
      }
    }
    try {
      const {scorer, store} = await openReady(index)
      index.search('main', 'rare kalo', {limit: 100, offset: 0})
      const built = Date.now() + 10_000
      while ((store.countsPending || !scorer.counted('"kalo"*')) && Date.now() < built) await new Promise((r) => setTimeout(r, 5))
      expect(scorer.counted('"kalo"*')).to.equal(true)
      for (let round = 0; round < 6; round++) {
        // Rewrites (some gaining "rare" and "kalo"), a new document, a removal: acknowledged writes as the engine passes them.
        for (let k = 0; k < 3; k++) {
          const i = next(2000)
          const body = Buffer.from(JSON.stringify({text: k === 0 ? `rare kalo kaloba ${text()}` : text()}))
          index.onWrite('main', `notes:${i}`, body, `${round}${k}`.padStart(40, 'a'))
        }
        index.onWrite('main', `notes:new${round}`, Buffer.from(JSON.stringify({text: `rare ${text()}`})), 'b'.repeat(40))
        index.onWrite('main', `notes:${next(2000)}`, undefined, undefined)
        const got = index.search('main', 'rare kalo', {limit: 100, offset: 0})
        expect(got.ids, `round ${round}`).to.deep.equal(bm25(store.file, 'rare kalo'))
        expect(scorer.counted('"kalo"*'), 'kept across the writes').to.equal(true)
      }
    } finally {
      await index.close()
    }
  })
})
