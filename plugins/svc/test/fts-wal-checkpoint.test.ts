import Database from 'better-sqlite3'
import {expect} from 'chai'
import {existsSync, statSync} from 'node:fs'
import {join} from 'node:path'

import {FullTextIndex} from '../src/engine/fulltext.js'
import {Bm25Scorer} from '../src/engine/fts/score.js'
import {FTS_FILE, IndexStore} from '../src/engine/fts/store.js'
import {WalCheckpointer} from '../src/engine/fts/wal-checkpointer.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'
import {bm25Page} from './helpers/bm25.js'
import {type Docs, openedIndex} from './helpers/fts-index.js'


const PAGE = 4096
const walPages = (file: string): number => (existsSync(`${file}-wal`) ? statSync(`${file}-wal`).size / PAGE : 0)
const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** Transactions of `rows` new documents each, `n` of them, with a pause between (the engine applies every 25 ms under a stream); the WAL's largest size, pages. */
async function stream(ix: IndexStore, n: number, rows: number, from = 0, pauseMs = 5): Promise<number> {
  let most = 0
  for (let t = 0; t < n; t++) {
    ix.transaction(() => {
      for (let i = 0; i < rows; i++) {
        const k = from + t * rows + i
        ix.put(`a:${k}`, `v${k}`, `word${k} w${k % 97} x${k % 13} ${'lorem ipsum dolor '.repeat(4)}${k}`)
      }
    })
    most = Math.max(most, walPages(ix.file))
    await pause(pauseMs)
  }
  return most
}

/**
 * The full-text index's WAL checkpoints run in a worker thread (fts/wal-checkpointer.ts): what a
 * user notices is that the WAL file stays bounded under a stream of writes whether the worker
 * keeps up or fails, that searches answer the same, and that close and branch removal still leave
 * the files as before.
 */
describe('svc full-text index: WAL checkpoints off the event loop', () => {
  after(cleanupTempDirs)

  it('keeps the WAL bounded under a stream of writes while the store itself would not checkpoint', async () => {
    const ix = new IndexStore(join(tempDir(), FTS_FILE))
    // The store's own checkpoint far away: only the worker's bound the WAL.
    const cp = new WalCheckpointer({gapMs: 0, limitPages: 1_000_000})
    try {
      cp.attach(ix)
      ix.afterCommit = () => cp.committed(ix)
      const most = await stream(ix, 150, 100, 0, 20)
      await cp.idle(ix.file)
      expect(cp.failed).to.equal(false)
      // 15,000 documents wrote ~4,000 pages: without the worker's checkpoints the WAL holds them
      // all. A checkpoint copies the frames written before it started, and the WAL starts again
      // from its beginning at a write after one that copied them all.
      expect(most).to.be.below(2000)
      const db = new Database(ix.file, {readonly: true})
      try {
        expect(db.prepare('SELECT count(*) FROM docs').pluck().get()).to.equal(15000)
      } finally {
        db.close()
      }
    } finally {
      await cp.close()
      ix.close()
    }
  })

  it('falls back to the store\'s own checkpoints when the worker fails, so the WAL stays bounded', async () => {
    const ix = new IndexStore(join(tempDir(), FTS_FILE))
    const failures: string[] = []
    const cp = new WalCheckpointer({failed: (e) => failures.push(e), fallbackPages: 100, gapMs: 0, limitPages: 1_000_000, source: () => `throw new Error('no checkpoints here')`})
    try {
      cp.attach(ix)
      ix.afterCommit = () => cp.committed(ix)
      await stream(ix, 2, 100)
      await cp.idle(ix.file)
      expect(cp.failed).to.equal(true)
      expect(failures).to.have.length(1)
      // From here the store checkpoints itself past 100 pages: the WAL starts again from its beginning.
      const before = walPages(ix.file)
      const most = await stream(ix, 60, 100, 200)
      expect(most).to.be.below(Math.max(before, 100) + 200)
    } finally {
      await cp.close()
      ix.close()
    }
  })

  it('keeps the counts and lists a search kept across another connection\'s checkpoint: searches answer the same', async () => {
    const file = join(tempDir(), FTS_FILE)
    const ix = new IndexStore(file)
    const scorer = (ix as unknown as {scorer: Bm25Scorer}).scorer
    const cp = new WalCheckpointer({gapMs: 0})
    try {
      cp.attach(ix)
      ix.afterCommit = () => cp.committed(ix)
      ix.transaction(() => {
        for (let i = 0; i < 1800; i++) ix.put(`a:${i}`, `v${i}`, `${i % 3 ? 'rare' : 'lone'} f${i % 17} f${i % 5}`)
      })
      await cp.idle(file)
      ix.search('lone', {limit: 10, offset: 0})
      expect(scorer.keeps('"lone"')).to.equal(true)
      ix.transaction(() => {
        for (let i = 0; i < 40; i++) ix.put(`a:${i}`, `w${i}`, 'lone lone f3')
      })
      // The commit started a checkpoint that copies the pages into the file.
      expect(cp.busy(file)).to.equal(true)
      await cp.idle(file)
      expect(cp.failed).to.equal(false)
      expect(scorer.keeps('"lone"')).to.equal(true)
      for (const q of ['lone', 'rare', 'lone f3']) {
        expect(ix.search(q, {limit: 10, offset: 0}).hits, q).to.deep.equal(bm25Page(file, q, undefined, {limit: 10, offset: 0}))
      }
      expect(scorer.keeps('"lone"')).to.equal(true)
    } finally {
      await cp.close()
      ix.close()
    }
  })

  describe('the engine\'s full-text index', () => {
    const opened = async (docs: Docs): Promise<{dir: string; index: FullTextIndex}> => openedIndex(docs, 600_000)

    /** Writes documents and applies them (a search), which starts a checkpoint; true when one runs. */
    function writeAndApply(index: FullTextIndex, docs: Docs, from: number, n: number, file: string): boolean {
      for (let i = from; i < from + n; i++) {
        const doc = {body: Buffer.from(JSON.stringify({text: `common word${i} ${'more words here '.repeat(8)}`})), sha: i.toString(16).padStart(40, '0')}
        docs.set(`notes:${i}`, doc)
        index.onWrite('main', `notes:${i}`, doc.body, doc.sha)
      }
      expect(index.search('main', 'common', {limit: 1, offset: 0}).total).to.equal(docs.size)
      return (index as unknown as {checkpoints: WalCheckpointer}).checkpoints.busy(file)
    }

    it('closes while a checkpoint runs: the WAL is folded into the file and every document kept', async () => {
      const docs: Docs = new Map()
      const {dir, index} = await opened(docs)
      const file = join(dir, 'main', FTS_FILE)
      let closed = false
      try {
        expect(writeAndApply(index, docs, 0, 2000, file)).to.equal(true)
        await index.close()
        closed = true
      } finally {
        if (!closed) await index.close()
      }
      // The store's connection closed last, so SQLite folded the WAL in and removed it.
      expect(existsSync(`${file}-wal`)).to.equal(false)
      const db = new Database(file, {readonly: true})
      try {
        expect(db.prepare('SELECT count(*) FROM docs').pluck().get()).to.equal(2000)
      } finally {
        db.close()
      }
    })

    it('removes a branch while a checkpoint runs: its folder is deleted', async () => {
      const docs: Docs = new Map()
      const {dir, index} = await opened(docs)
      const file = join(dir, 'main', FTS_FILE)
      try {
        expect(writeAndApply(index, docs, 0, 2000, file)).to.equal(true)
        await index.dropBranch('main')
        expect(existsSync(join(dir, 'main'))).to.equal(false)
      } finally {
        await index.close()
      }
    })
  })
})
