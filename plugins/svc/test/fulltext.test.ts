import {expect} from 'chai'
import {existsSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {type Engine, openEngine} from '../src/engine/index.js'
import {cleanupTempDirs, memoryLogger, tempDir} from './helpers/tmp.js'

async function settle(db: Engine): Promise<void> {
  await db.reindex()
}

describe('svc full-text index', () => {
  let db: Engine | undefined
  afterEach(async () => {
    await db?.close().catch(() => {})
    db = undefined
  })
  after(cleanupTempDirs)

  it('finds documents by words in any field, with limit, offset, table and branch', async () => {
    db = await openEngine(tempDir())
    await db.put({id: 'books:1', tags: ['databases', 'git'], title: 'Versioned storage with Git'})
    await db.put({id: 'books:2', nested: {note: 'history of storage engines'}, title: 'Engines'})
    await db.put({id: 'films:1', title: 'Storage wars'})
    await settle(db)
    const all = await db.search('storage')
    expect(all.total).to.equal(3)
    expect((await db.search('storage', {table: 'books'})).hits.map((h) => h.id).sort()).to.deep.equal(['books:1', 'books:2'])
    const page = await db.search('storage', {limit: 1, offset: 1})
    expect(page.hits).to.have.length(1)
    expect(page.total).to.equal(3)
    expect((await db.search('git databases')).hits.map((h) => h.id)).to.deep.equal(['books:1'])
    await db.put({id: 'books:1', title: 'Rewritten'})
    expect((await db.search('databases')).total).to.equal(0)
    await db.delete('films:1')
    expect((await db.search('wars')).total).to.equal(0)
    await db.createBranch('dev')
    await db.put({id: 'films:9', title: 'storage on a branch'}, {branch: 'dev'})
    await settle(db)
    expect((await db.search('branch')).total).to.equal(0)
    expect((await db.search('branch', {branch: 'dev'})).total).to.equal(1)
    expect(db.details().branches.find((b) => b.name === 'dev')?.index.documents).to.equal(3)
  })

  it('a put of the same document again keeps it found, and a later change still replaces its words', async () => {
    db = await openEngine(tempDir())
    const found = async (word: string, branch?: string) => (await db!.search(word, branch ? {branch} : {})).hits.map((h) => h.id)
    await db.put({id: 'k:1', value: 'alpha'})
    await db.put({id: 'k:1', value: 'alpha'})
    await settle(db)
    expect(await found('alpha')).to.deep.equal(['k:1'])
    await db.put({id: 'k:1', value: 'beta'})
    await db.put({id: 'k:1', value: 'beta'})
    expect(await found('alpha')).to.deep.equal([])
    expect(await found('beta')).to.deep.equal(['k:1'])
    await db.put({id: 'k:1', value: 'alpha'})
    expect(await found('beta')).to.deep.equal([])
    expect(await found('alpha')).to.deep.equal(['k:1'])
    // A branch shares the entries it was made from: the same text there is found there too.
    await db.createBranch('dev')
    await db.put({id: 'k:1', value: 'alpha'}, {branch: 'dev'})
    await db.put({id: 'k:2', value: 'gamma'}, {branch: 'dev'})
    await settle(db)
    expect(await found('alpha', 'dev')).to.deep.equal(['k:1'])
    await db.put({id: 'k:1', value: 'gamma'}, {branch: 'dev'})
    expect(await found('alpha', 'dev')).to.deep.equal([])
    expect(await found('alpha')).to.deep.equal(['k:1'])
    expect(db.details().branches.find((b) => b.name === 'main')?.index.documents).to.equal(1)
  })

  it('rebuilds a deleted index directory at start and keeps counts equal to documents', async () => {
    const dir = tempDir()
    db = await openEngine(dir, {fullText: false})
    for (let i = 0; i < 300; i++) await db.batch([{doc: {body: `word${i} common`, id: `t:${i}`}, op: 'put'}])
    await db.close()
    rmSync(join(dir, 'index'), {force: true, recursive: true})
    const {lines, logger} = memoryLogger()
    db = await openEngine(dir, {logger})
    // Writes keep arriving while the background build runs; none may be lost.
    const writes = Array.from({length: 50}, (_, i) => db!.put({body: `late${i} common`, id: `t:late${i}`}))
    await Promise.all(writes)
    await settle(db)
    expect(db.stats().indexDocuments).to.equal(db.stats().documents).and.equal(350)
    expect((await db.search('late49')).total).to.equal(1)
    expect((await db.search('word299')).total).to.equal(1)
    const log = lines.map((l) => JSON.parse(l) as {msg: string; ns: string})
    expect(log.some((l) => l.ns === 'svc.index.fulltext' && l.msg === 'reindex started')).to.equal(true)
    expect(log.some((l) => l.ns === 'svc.index.fulltext' && l.msg === 'reindex finished')).to.equal(true)
  })

  it('detects a corrupt index file, reports it, and rebuilds', async () => {
    const dir = tempDir()
    db = await openEngine(dir)
    await db.put({id: 'c:1', text: 'alpha'})
    await db.put({id: 'c:2', text: 'beta'})
    // The first check's read connection must be gone, or the close may leave pages in the WAL
    // file (a loaded machine makes the check outlast the close's wait) and the damage below misses.
    await settle(db)
    await db.close()
    const file = join(dir, 'index', 'main', 'fts.sqlite')
    const data = readFileSync(file)
    // A damaged last page (a torn write, a bad sector): 64 bytes of its records overwritten.
    for (let i = data.length - 64; i < data.length; i++) data[i] ^= 0x55
    writeFileSync(file, data)
    const {lines, logger} = memoryLogger()
    db = await openEngine(dir, {logger})
    await settle(db)
    const err = lines.map((l) => JSON.parse(l) as {error?: string; level: string; msg: string}).find((l) => l.msg.includes('corrupt full-text index'))
    expect(err?.level).to.equal('error')
    expect(err?.error).to.match(/malformed|integrity|corrupt|vtable/)
    expect(db.indexProgress()?.corruptDetected).to.equal(1)
    expect((await db.search('beta')).hits.map((h) => h.id)).to.deep.equal(['c:2'])
  })

  it('picks up changes made while it was not running (index older than the repository)', async () => {
    const dir = tempDir()
    db = await openEngine(dir)
    await db.put({id: 'd:1', text: 'first'})
    await db.close()
    db = await openEngine(dir, {fullText: false})
    await db.put({id: 'd:2', text: 'second'})
    await db.delete('d:1')
    await db.close()
    db = await openEngine(dir)
    await settle(db)
    expect((await db.search('second')).total).to.equal(1)
    expect((await db.search('first')).total).to.equal(0)
    expect(db.stats().indexDocuments).to.equal(1)
  })

  it('answers search while the index is built, saying how far it is, and is complete once caught up', async () => {
    const dir = tempDir()
    db = await openEngine(dir, {fullText: false})
    for (let i = 0; i < 40; i++) await db.batch(Array.from({length: 100}, (_, j) => ({doc: {body: `shared doc${i * 100 + j}`, id: `p:${i * 100 + j}`}, op: 'put' as const})))
    await db.close()
    db = await openEngine(dir, {indexBatchSize: 100})
    const early = await db.search('shared', {limit: 5})
    expect(early.index?.state).to.equal('building')
    expect(early.index!.pending).to.be.greaterThan(0)
    expect(early.total).to.be.below(4000)
    const health = db.details().branches.find((b) => b.name === 'main')!.index
    expect(health.state).to.equal('building')
    await settle(db)
    const done = await db.search('shared', {limit: 5})
    expect(done.index).to.equal(undefined)
    expect(done.total).to.equal(4000)
    expect(db.details().branches.find((b) => b.name === 'main')!.index).to.deep.equal({documents: 4000, pending: 0, state: 'ready'})
  })

  it('keeps the index on disk across restarts: no rebuild when nothing changed, and remove-branch drops its file', async () => {
    const dir = tempDir()
    db = await openEngine(dir)
    await db.put({id: 'k:1', text: 'kept words'})
    await db.createBranch('tmp')
    await settle(db)
    expect(existsSync(join(dir, 'index', 'tmp', 'fts.sqlite'))).to.equal(true)
    await db.removeBranch('tmp')
    expect(existsSync(join(dir, 'index', 'tmp'))).to.equal(false)
    await db.close()
    const {lines, logger} = memoryLogger()
    db = await openEngine(dir, {logger})
    expect((await db.search('kept')).hits.map((h) => h.id)).to.deep.equal(['k:1'])
    await settle(db)
    expect(lines.some((l) => l.includes('reindex started'))).to.equal(false)
    expect(db.indexProgress()?.documentsIndexed).to.equal(0)
  })

  it('removes a branch whose index check is still starting: the removal succeeds and leaves no index folder', async () => {
    const dir = tempDir()
    db = await openEngine(dir)
    await db.put({id: 'k:1', text: 'kept words'})
    for (let i = 0; i < 8; i++) {
      await db.createBranch('quick')
      // No settle: the page check of the new branch's index opens its file in a worker right now.
      await db.removeBranch('quick')
      expect(existsSync(join(dir, 'index', 'quick'))).to.equal(false)
    }
    expect((await db.branches()).map((b) => b.name)).to.deep.equal(['main'])
  })

  it('rejects an empty query', async () => {
    db = await openEngine(tempDir())
    const err = await db.search('  ').then(() => undefined, (e: Error & {code?: string}) => e)
    expect(err?.code).to.equal('invalid_argument')
  })
})
