import {expect} from 'chai'
import {join} from 'node:path'

import {type Engine, openEngine} from '../src/engine/index.js'
import {cleanupTempDirs, gitOut, tempDir} from './helpers/tmp.js'

describe('svc engine transactions', () => {
  let db: Engine | undefined
  let dir = ''
  beforeEach(async () => {
    dir = tempDir()
    db = await openEngine(dir, {fullText: false})
  })
  afterEach(async () => {
    await db?.close().catch(() => {})
    db = undefined
  })
  after(cleanupTempDirs)

  const commits = async (): Promise<number> => {
    await db!.flush()
    return Number(gitOut(join(dir, 'repo'), ['rev-list', '--count', 'main']).trim())
  }

  it('reads its own writes, hides them from others, and commits them as exactly one Git commit', async () => {
    await db!.put({id: 'users:1', name: 'Ada'})
    await db!.put({id: 'users:3', name: 'Cy'})
    const before = await commits()
    const tx = db!.begin({meta: {origin: 'api'}})
    tx.put({id: 'users:2', name: 'Bob'})
    tx.put({id: 'users:1', name: 'Ada L'})
    tx.delete('users:3')
    tx.put({id: 'orders:9', total: 3})
    expect(await tx.get('users:2')).to.deep.equal({id: 'users:2', name: 'Bob'})
    expect(await tx.get('users:3')).to.equal(undefined)
    expect(await tx.getMany(['users:1', 'users:3', 'users:4'])).to.deep.equal([{id: 'users:1', name: 'Ada L'}, undefined, undefined])
    expect((await tx.list({table: 'users'})).docs.map((d) => d.id)).to.deep.equal(['users:1', 'users:2'])
    expect((await tx.list({prefix: 'users:2'})).docs.map((d) => d.id)).to.deep.equal(['users:2'])
    // Outside the transaction nothing changed yet.
    expect(await db!.get('users:2')).to.equal(undefined)
    expect((await db!.get('users:1'))?.name).to.equal('Ada')
    const results = await tx.commit()
    expect(results).to.have.length(4)
    expect(await commits()).to.equal(before + 1)
    expect(await db!.get('users:3')).to.equal(undefined)
    expect((await db!.get('users:1'))?.name).to.equal('Ada L')
    expect(() => tx.put({id: 'users:5'})).to.throw(/committed/)
  })

  it('pages a merged list with cursors without losing or repeating ids', async () => {
    for (let i = 0; i < 10; i += 2) await db!.put({id: `t:${i}`, n: i})
    const tx = db!.begin()
    for (let i = 1; i < 10; i += 2) tx.put({id: `t:${i}`, n: i})
    tx.delete('t:4')
    const seen: string[] = []
    let cursor: string | undefined
    do {
      const page = await tx.list({cursor, limit: 2, table: 't'})
      seen.push(...page.docs.map((d) => d.id))
      cursor = page.nextCursor
    } while (cursor)
    expect(seen).to.deep.equal(['t:0', 't:1', 't:2', 't:3', 't:5', 't:6', 't:7', 't:8', 't:9'])
    tx.rollback()
    expect(await db!.count({table: 't'})).to.equal(5)
  })

  it('commits nothing when one write is refused, and nothing at all when empty', async () => {
    await db!.put({id: 'first:1'})
    const before = await commits()
    expect(await db!.begin().commit()).to.deep.equal([])
    const tx = db!.begin()
    tx.put({id: 'ok:1', v: 1})
    tx.put({id: 'big:1', v: 'x'.repeat(20 * 1024 * 1024)})
    let failed: unknown
    await tx.commit().catch((error: unknown) => {
      failed = error
    })
    expect(failed).to.be.instanceOf(Error)
    expect(await db!.get('ok:1')).to.equal(undefined)
    expect(await commits()).to.equal(before)
    expect(() => tx.put({id: 'ok:2'})).to.throw(/rolled back/)
  })

  it('refuses an invalid id at the write, before anything is committed', () => {
    const tx = db!.begin()
    expect(() => tx.put({id: 'bad table:1'})).to.throw(/invalid table name/)
    expect(() => tx.delete('')).to.throw(/non-empty/)
  })
})
