import Database from 'better-sqlite3'
import {expect} from 'chai'
import {join} from 'node:path'

import {FullTextIndex} from '../src/engine/fulltext.js'
import {FTS_FILE} from '../src/engine/fts/store.js'
import {type Docs, openedIndex} from './helpers/fts-index.js'
import {cleanupTempDirs} from './helpers/tmp.js'


/**
 * Acknowledged writes are indexed together, after a delay or once enough of them wait (fulltext.ts
 * APPLY_DELAY_MS, APPLY_AT_ONCE): what a user sees is that searches find every write at once,
 * and that a fast write stream is indexed in bounded transactions without any read asking for it.
 */
describe('svc full-text index: writes applied in batches', () => {
  after(cleanupTempDirs)

  const opened = openedIndex

  /** Documents in the index file, read by another connection (no search or count of the index, which would apply what waits). */
  function inFile(dir: string): number {
    const db = new Database(join(dir, 'main', FTS_FILE), {readonly: true})
    try {
      return db.prepare('SELECT count(*) FROM docs').pluck().get() as number
    } finally {
      db.close()
    }
  }

  function write(index: FullTextIndex, docs: Docs, i: number): void {
    const doc = {body: Buffer.from(JSON.stringify({text: `common word${i}`})), sha: i.toString(16).padStart(40, '0')}
    docs.set(`notes:${i}`, doc)
    index.onWrite('main', `notes:${i}`, doc.body, doc.sha)
  }

  const turns = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r))
  }

  it('applies a long queue at the next turn without waiting for the delay, and a search still finds every write', async () => {
    const docs: Docs = new Map()
    const {dir, index} = await opened(docs, 600_000)
    try {
      for (let i = 0; i < 511; i++) write(index, docs, i)
      await turns(5)
      // Fewer than APPLY_AT_ONCE: they wait for the delay (ten minutes here).
      expect(inFile(dir)).to.equal(0)
      write(index, docs, 511)
      const until = Date.now() + 10_000
      while (inFile(dir) < 512 && Date.now() < until) await turns(1)
      expect(inFile(dir)).to.equal(512)
      // A write after that waits again, and a search applies it first.
      write(index, docs, 512)
      await turns(5)
      expect(inFile(dir)).to.equal(512)
      expect(index.search('main', 'common', {limit: 10, offset: 0}).total).to.equal(513)
      expect(index.search('main', 'word512', {limit: 10, offset: 0}).ids.map((h) => h.id)).to.deep.equal(['notes:512'])
    } finally {
      await index.close()
    }
  })

  it('applies a short queue after the delay, without a read asking for it', async () => {
    const docs: Docs = new Map()
    const {dir, index} = await opened(docs, 20)
    try {
      for (let i = 0; i < 3; i++) write(index, docs, i)
      const until = Date.now() + 10_000
      while (inFile(dir) < 3 && Date.now() < until) await new Promise((r) => setTimeout(r, 10))
      expect(inFile(dir)).to.equal(3)
    } finally {
      await index.close()
    }
  })
})
