/**
 * The parsed documents kept on document-map entries (engine/hot-docs.ts): a read of a hot id
 * (`getParsedIfCached`, what the Redis and PostgreSQL servers read through) must answer exactly
 * what the stored bytes say after every kind of write, and the kept documents stay bounded.
 */
import {expect} from 'chai'

import type {DocEntry} from '../src/engine/branch-state.js'
import {HotDocs} from '../src/engine/hot-docs.js'
import {type Engine, nullLogger, openEngine} from '../src/engine/index.js'
import type {Doc} from '../src/engine/types.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'

describe('svc hot documents: one lookup per read, never stale', function () {
  this.timeout(60_000)
  after(() => cleanupTempDirs())

  /** The general path: the stored bytes, parsed here. */
  const general = async (db: Engine, id: string, branch?: string): Promise<Doc | undefined> => {
    const raw = await db.getRaw(id, {branch})
    return raw === undefined ? undefined : (JSON.parse(raw.toString('utf8')) as Doc)
  }

  it('answers as the stored bytes after puts, deletes, expiries, batches, transactions and branches', async () => {
    let clock = 1_000_000
    const db = await openEngine(tempDir(), {logger: nullLogger, now: () => clock})
    const ids = ['t:1', 't:2', 't:3', 't:é', 'u:1']
    const branches: Array<string | undefined> = [undefined]
    // Every id on every branch read ten times (one offer in eight is kept, hot-docs.ts) and compared with the bytes.
    const check = async (step: string) => {
      for (const branch of branches) {
        for (const id of ids) {
          const want = await general(db, id, branch)
          for (let i = 0; i < 10; i++) {
            const hit = db.getParsedIfCached(id, {branch})
            expect(hit, `${step}: ${id} on ${branch ?? 'main'}`).to.not.equal(false)
            expect(hit, `${step}: ${id} on ${branch ?? 'main'} (read ${i})`).to.deep.equal(want)
          }
        }
      }
    }
    try {
      await check('empty')
      for (const id of ids) await db.put({id, n: 0})
      await check('first puts')
      await db.put({id: 't:1', n: 1, s: 'one'})
      await check('put over a kept document')
      await db.put({id: 't:1', n: 1, s: 'one'})
      await check('the same bytes again')
      await db.flush()
      await check('after a checkpoint (bodies moved to the blob cache)')
      await db.delete('t:2')
      await check('delete')
      await db.expire('t:3', clock + 1000)
      await check('expiry set')
      clock += 2000
      await check('expired')
      await db.put({id: 't:3', back: true})
      await db.expire('t:3', null)
      await check('rewritten, expiry removed')
      await db.batch([
        {doc: {id: 't:1', n: 2}, op: 'put'},
        {id: 't:é', op: 'delete'},
        {doc: {id: 't:2', n: 2}, op: 'put'},
      ])
      await check('batch')
      const tx = db.begin()
      tx.put({id: 'u:1', tx: 1})
      tx.delete('t:1')
      await tx.commit()
      await check('transaction committed')
      const rolled = db.begin()
      rolled.put({id: 'u:1', tx: 'rolled back'})
      rolled.rollback()
      await check('transaction rolled back')
      await db.createBranch('dev')
      branches.push('dev')
      await check('branch created (entries shared)')
      await db.put({id: 'u:1', on: 'dev'}, {branch: 'dev'})
      await db.delete('t:3', {branch: 'dev'})
      await check('written on the branch only')
      await db.put({id: 'u:1', on: 'main'})
      await check('written on main only')
      await db.removeBranch('dev')
      branches.pop()
      await db.createBranch('dev')
      branches.push('dev')
      await check('branch removed and made again')
    } finally {
      await db.close()
    }
  })

  it('keeps a hot document loaded from Git after a restart, past the blob cache, until it is rewritten', async () => {
    const dir = tempDir()
    let db = await openEngine(dir, {fullText: false, logger: nullLogger})
    for (let i = 0; i < 50; i++) await db.put({id: `t:${i}`, n: i})
    await db.close()
    db = await openEngine(dir, {cacheBytes: 256, fullText: false, logger: nullLogger})
    try {
      // Into the blob cache; then enough reads for one offer in eight to be taken.
      await db.getRaw('t:0')
      for (let i = 0; i < 20; i++) expect(db.getParsedIfCached('t:0')).to.deep.equal({id: 't:0', n: 0})
      // Other reads push its bytes out of the small blob cache: the kept document still answers.
      for (let i = 1; i < 50; i++) await db.getRaw(`t:${i}`)
      expect(db.getParsedIfCached('t:1'), 'a document read once is not kept').to.equal(false)
      expect(db.getParsedIfCached('t:0')).to.deep.equal({id: 't:0', n: 0})
      await db.put({id: 't:0', n: 2})
      expect(db.getParsedIfCached('t:0')).to.deep.equal({id: 't:0', n: 2})
    } finally {
      await db.close()
    }
  })

  it('keeps at most its slots and bytes, and no large document', () => {
    const entry = (): DocEntry => ({seq: 0, sha: 'x'})
    const hot = new HotDocs(4, 1000, 1)
    const kept = Array.from({length: 6}, entry)
    for (const e of kept) hot.keep(e, {id: 't:1'}, 3)
    // FIFO: the two oldest lost theirs to the four newest.
    expect(kept.map((e) => e.doc !== undefined)).to.deep.equal([false, false, true, true, true, true])
    const big = entry()
    hot.keep(big, {id: 't:big'}, 900)
    expect(big.doc, 'over maxBytes / 256').to.equal(undefined)
    // 2,560 bytes: 256 documents of 10 bytes, the newest ones.
    const bytes = new HotDocs(1000, 2560, 1)
    const tens = Array.from({length: 300}, entry)
    for (const e of tens) bytes.keep(e, {id: 't:1'}, 10)
    expect(tens.filter((e) => e.doc !== undefined).length).to.equal(256)
    expect(tens.slice(-256).every((e) => e.doc !== undefined)).to.equal(true)
    // By default one offer in eight is taken: a scan wider than the ring does not churn it.
    const sampled = new HotDocs(100, 100_000)
    const offered = Array.from({length: 80}, entry)
    for (const e of offered) sampled.keep(e, {id: 't:1'}, 10)
    expect(offered.filter((e) => e.doc !== undefined).length).to.equal(10)
    hot.clear()
    expect(kept.every((e) => e.doc === undefined)).to.equal(true)
  })
})
