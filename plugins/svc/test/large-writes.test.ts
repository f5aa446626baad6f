import {expect} from 'chai'

import {type Engine, openEngine} from '../src/engine/index.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'

// Issue 24: a large document's write-ahead-log record and its full-text indexing take turns of the
// event loop of their own (the text made in a worker thread). What a user sees must not change:
// writes land in the order they were made, and search finds exactly the current versions.
const big = (word: string): string => `${word} ${'filler '.repeat(50_000)}`

const turns = async (n: number): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((r) => setTimeout(r, 10))
}

describe('svc large documents (issue 24)', () => {
  let db: Engine | undefined
  afterEach(async () => {
    await db?.close().catch(() => {})
    db = undefined
  })
  after(cleanupTempDirs)

  it('keeps the order of writes made together: a small put after a large one of the same document wins, in Git too', async () => {
    db = await openEngine(tempDir())
    const large = db.put({body: big('first'), id: 'docs:1'})
    const small = db.put({body: 'second', id: 'docs:1'})
    const [a, b] = await Promise.all([large, small])
    expect(b.seq).to.be.greaterThan(a.seq)
    expect((await db.get('docs:1'))?.body).to.equal('second')
    await db.flush()
    const versions = (await db.history('docs:1')).versions.map((v) => String(v.doc?.body).split(' ')[0])
    expect(versions).to.deep.equal(['second', 'first'])
  })

  it('indexes large documents off the request path and finds only their current versions', async () => {
    db = await openEngine(tempDir())
    await db.put({body: big('alpha'), id: 'docs:1'})
    // Rewritten and deleted while the first versions' text may still be in the worker.
    await db.put({body: big('beta'), id: 'docs:1'})
    await db.put({body: big('gamma'), id: 'docs:2'})
    await db.delete('docs:2')
    await db.put({body: big('delta'), id: 'docs:3'})
    await db.put({body: 'small epsilon', id: 'docs:4'})
    await turns(30)
    expect((await db.search('alpha')).total).to.equal(0)
    expect((await db.search('beta')).hits.map((h) => h.id)).to.deep.equal(['docs:1'])
    expect((await db.search('gamma')).total).to.equal(0)
    expect((await db.search('delta')).hits.map((h) => h.id)).to.deep.equal(['docs:3'])
    expect((await db.search('epsilon')).hits.map((h) => h.id)).to.deep.equal(['docs:4'])
    expect(db.stats().indexDocuments).to.equal(3)
  })

  it('finds a large document searched for right after its write is acknowledged', async () => {
    db = await openEngine(tempDir())
    await db.put({body: big('zeta'), id: 'docs:1'})
    expect((await db.search('zeta')).hits.map((h) => h.id)).to.deep.equal(['docs:1'])
  })
})
