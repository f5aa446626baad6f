import {expect} from 'chai'
import {join} from 'node:path'

import {openEngine} from '../src/engine/index.js'
import {createBackup} from '../src/ops/api.js'
import {cleanupTempDirs, gitOut, tempDir} from './helpers/tmp.js'

// A backup of a stopped data directory reads Git directly and counts main's documents for its
// manifest by adding what changed since the last count: the figure must stay the true count
// through puts, deletes and rewrites.
describe('svc backup manifest: documents on main', () => {
  after(cleanupTempDirs)

  async function write(dir: string, ops: (db: Awaited<ReturnType<typeof openEngine>>) => Promise<void>): Promise<string> {
    const db = await openEngine(dir, {fullText: false})
    await ops(db)
    await db.close()
    return gitOut(join(dir, 'repo'), ['rev-parse', 'main']).trim()
  }

  it('matches the documents in main after puts, deletes and rewrites, full and incremental', async () => {
    const dir = tempDir()
    const out = tempDir()
    const base = await write(dir, async (db) => {
      for (let i = 0; i < 30; i++) await db.put({id: `items:${i}`, n: i})
      await db.put({id: 'notes:1', text: 'x'})
    })
    const full = await createBackup({dataDir: dir, format: 'bundle', output: join(out, 'full.bundle')})
    expect(full.documents).to.equal(31)

    await write(dir, async (db) => {
      for (let i = 0; i < 10; i++) await db.delete(`items:${i}`)
      for (let i = 20; i < 25; i++) await db.put({id: `items:${i}`, n: -i})
      for (let i = 100; i < 104; i++) await db.put({id: `items:${i}`, n: i})
    })
    const inc = await createBackup({baseCommit: base, dataDir: dir, format: 'bundle', output: join(out, 'inc.bundle')})
    expect(inc).to.include({base_commit: base, documents: 25, type: 'incremental'})

    const again = await createBackup({dataDir: dir, output: join(out, 'again.tar.gz')})
    expect(again.documents).to.equal(25)
  })
})
