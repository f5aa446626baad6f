import {expect} from 'chai'
import {join} from 'node:path'

import {EngineError, type Engine, openEngine} from '../src/engine/index.js'
import {startServer, type Started} from './helpers/cli.js'
import {docPath, parseId} from '../src/engine/ids.js'
import {cleanupTempDirs, gitOut, loseObject, tempDir} from './helpers/tmp.js'

/** A clock the test moves by hand, so no assertion depends on how fast the machine is. */
function manualClock(start = Date.UTC(2030, 0, 1)): {advance(ms: number): void; now: () => number} {
  let t = start
  return {advance: (ms) => (t += ms), now: () => t}
}

async function rejects(p: Promise<unknown>): Promise<EngineError> {
  let caught: unknown
  await p.catch((error: unknown) => (caught = error))
  expect(caught, 'expected a rejection').to.be.instanceOf(EngineError)
  return caught as EngineError
}

describe('svc engine: expiry, reserved tables, transactions and damage', () => {
  let db: Engine | undefined
  const running: Started[] = []
  afterEach(async () => {
    await db?.close().catch(() => {})
    db = undefined
    for (const s of running.splice(0)) if (s.child.exitCode === null) s.child.kill('SIGKILL')
  })
  after(cleanupTempDirs)

  it('hides an expired document from every read at once, and sweeps it as one commit with origin expiry', async () => {
    const clock = manualClock()
    const dir = tempDir()
    db = await openEngine(dir, {now: clock.now})
    await db.put({id: 'cache:a', text: 'alpha apples'})
    await db.put({id: 'cache:b', text: 'beta apples'})
    await db.createIndex('cache', 'text')
    expect(await db.expire('cache:a', clock.now() + 1000)).to.equal(true)
    expect(await db.expire('cache:missing', clock.now() + 1000)).to.equal(false)
    expect(await db.expiresAt('cache:a')).to.equal(clock.now() + 1000)
    expect(await db.expiresAt('cache:b')).to.equal(null)
    expect(await db.expiresAt('cache:missing')).to.equal(undefined)
    await db.reindex()
    expect((await db.search('apples')).total).to.equal(2)

    clock.advance(1000)
    expect(await db.get('cache:a')).to.equal(undefined)
    expect(await db.getRaw('cache:a')).to.equal(undefined)
    expect(db.getRawIfCached('cache:a')).to.equal(undefined)
    expect(await db.getMany(['cache:a', 'cache:b'])).to.deep.equal([undefined, {id: 'cache:b', text: 'beta apples'}])
    expect((await db.list({table: 'cache'})).docs.map((d) => d.id)).to.deep.equal(['cache:b'])
    expect(await db.count({table: 'cache'})).to.equal(1)
    expect(await db.count()).to.equal(1)
    expect(db.stats().documents).to.equal(1)
    expect(await db.findIds('cache', 'text', 'alpha apples')).to.deep.equal([])
    const found = await db.search('apples')
    expect(found.hits.map((h) => h.id)).to.deep.equal(['cache:b'])
    expect(found.total).to.equal(1)
    expect(await db.expiresAt('cache:a')).to.equal(undefined)
    expect((await db.delete('cache:a')).existed).to.equal(false)

    await db.expire('cache:b', clock.now() + 1)
    clock.advance(1)
    expect(await db.tables()).to.deep.equal([])
    await db.sweepExpired()
    await db.flush()
    const repo = join(dir, 'repo')
    expect(gitOut(repo, ['ls-tree', '-r', '--name-only', 'main']).trim()).to.equal('')
    const last = gitOut(repo, ['log', '-1', '--format=%B', 'main'])
    expect(last).to.include('Svc-Origin: expiry').and.include('Svc-Id: cache:a').and.include('Svc-Id: cache:b')
  })

  it('keeps expiries across a restart and sweeps what expired while it was down; put clears an expiry unless keepExpiry', async () => {
    const clock = manualClock()
    const dir = tempDir()
    db = await openEngine(dir, {fullText: false, now: clock.now})
    await db.put({id: 's:soon', v: 1})
    await db.put({id: 's:later', v: 2})
    await db.put({id: 's:cleared', v: 3})
    await db.put({id: 's:kept', v: 4})
    await db.expire('s:soon', clock.now() + 60_000)
    await db.expire('s:later', clock.now() + 3_600_000)
    await db.expire('s:cleared', clock.now() + 60_000)
    await db.expire('s:kept', clock.now() + 3_600_000)
    await db.put({id: 's:cleared', v: 30})
    await db.put({id: 's:kept', v: 40}, {keepExpiry: true})
    expect(await db.expiresAt('s:cleared')).to.equal(null)
    expect(await db.expiresAt('s:kept')).to.equal(clock.now() + 3_600_000)
    // The expiry is part of the repository: a marker file beside the document.
    await db.flush()
    expect(gitOut(join(dir, 'repo'), ['ls-tree', '-r', '--name-only', 'main'])).to.match(/later\.json\.expires-\d+/)
    await db.close()

    clock.advance(120_000)
    db = await openEngine(dir, {fullText: false, now: clock.now})
    expect(await db.get('s:soon')).to.equal(undefined)
    expect(await db.get('s:later')).to.deep.equal({id: 's:later', v: 2})
    expect(await db.expiresAt('s:later')).to.equal(clock.now() - 120_000 + 3_600_000)
    expect(await db.expiresAt('s:kept')).to.equal(clock.now() - 120_000 + 3_600_000)
    await db.sweepExpired()
    await db.flush()
    expect(gitOut(join(dir, 'repo'), ['log', '-1', '--format=%s%n%b', 'main'])).to.include('delete s:soon').and.include('Svc-Origin: expiry')
    expect(await db.expire('s:later', null)).to.equal(true)
    await db.close()
    clock.advance(7_200_000)
    db = await openEngine(dir, {fullText: false, now: clock.now})
    expect(await db.get('s:later')).to.deep.equal({id: 's:later', v: 2})
    expect(await db.get('s:kept')).to.equal(undefined)
  })

  it('sweeps on its own timer', async () => {
    const dir = tempDir()
    db = await openEngine(dir, {fullText: false})
    await db.put({id: 't:1', v: 1})
    await db.expire('t:1', Date.now() + 50)
    const repo = join(dir, 'repo')
    for (let i = 0; i < 200; i++) {
      await db.flush()
      if (gitOut(repo, ['log', '-1', '--format=%B', 'main']).includes('Svc-Origin: expiry')) return
      await new Promise((r) => setTimeout(r, 25))
    }
    expect.fail('the expired document was never swept')
  })

  it('refuses user writes to reserved tables with code reserved; system writes and reads are allowed', async () => {
    db = await openEngine(tempDir(), {fullText: false})
    for (const attempt of [
      db.put({columns: 'garbage', id: '_pg_schema:people'}),
      db.delete('_pg_schema:people'),
      db.expire('_pg_schema:people', null),
      db.batch([{doc: {id: 'ok:1'}, op: 'put'}, {doc: {id: '_x:1'}, op: 'put'}]),
    ]) {
      const e = await rejects(attempt)
      expect(e.code).to.equal('reserved')
      expect(e.exitCode).to.equal(2)
      expect(e.message).to.match(/table "_(pg_schema|x)" is reserved for svc's own data/)
    }
    expect(await db.get('ok:1')).to.equal(undefined)
    await db.put({columns: [], id: '_pg_schema:people'}, {system: true})
    expect(await db.get('_pg_schema:people')).to.deep.equal({columns: [], id: '_pg_schema:people'})
  })

  it('runs a transaction as one commit with read-your-writes; a refused write commits nothing', async () => {
    const dir = tempDir()
    db = await openEngine(dir, {fullText: false})
    await db.put({id: 'acct:a', n: 10})
    await db.put({id: 'acct:c', n: 1})
    const tx = db.begin()
    tx.put({id: 'acct:b', n: 5})
    tx.delete('acct:c')
    tx.expire('acct:a', Date.now() + 3_600_000)
    expect(await tx.get('acct:b')).to.deep.equal({id: 'acct:b', n: 5})
    expect(await tx.get('acct:c')).to.equal(undefined)
    expect((await tx.list({table: 'acct'})).docs.map((d) => d.id)).to.deep.equal(['acct:a', 'acct:b'])
    expect(await db.get('acct:b')).to.equal(undefined)
    const results = await tx.commit()
    expect(results).to.have.length(3)
    await db.flush()
    const repo = join(dir, 'repo')
    expect(gitOut(repo, ['rev-list', '--count', 'main']).trim()).to.equal('3')
    expect(await db.get('acct:c')).to.equal(undefined)
    expect(await db.expiresAt('acct:a')).to.be.a('number')
    expect(() => tx.put({id: 'acct:d'})).to.throw(/committed/)

    const bad = db.begin()
    bad.put({id: 'acct:e', n: 1})
    bad.put({id: '_pg_schema:acct'})
    expect((await rejects(bad.commit())).code).to.equal('reserved')
    expect(await db.get('acct:e')).to.equal(undefined)
    expect(gitOut(repo, ['rev-list', '--count', 'main']).trim()).to.equal('3')
  })

  it('serves expiries through REST after a restart: what expired while the server was down is gone', async () => {
    const dir = tempDir()
    // The engine's clock an hour behind real time: both expiries are in its future when set.
    const hourAgo = Date.now() - 3_600_000
    db = await openEngine(dir, {fullText: false, now: () => hourAgo})
    await db.put({id: 'sess:old', user: 'ann'})
    await db.put({id: 'sess:new', user: 'bob'})
    await db.expire('sess:old', hourAgo + 60_000)
    await db.expire('sess:new', hourAgo + 7_200_000)
    await db.close()
    db = undefined

    const s = await startServer(['--data-dir', dir, '--http-port', '0', '--disable-redis', '--disable-sql'])
    running.push(s)
    const base = `http://127.0.0.1:${s.ready.rest}/api/v1`
    expect((await fetch(`${base}/documents/sess:old`)).status).to.equal(404)
    expect((await fetch(`${base}/documents/sess:new`)).status).to.equal(200)
    const list = (await (await fetch(`${base}/documents?table=sess`)).json()) as {documents?: Array<{id: string}>; docs?: Array<{id: string}>}
    expect(JSON.stringify(list)).to.include('sess:new').and.not.include('sess:old')
    s.child.kill('SIGTERM')
    expect((await s.exited).code).to.equal(0)
    expect(gitOut(join(dir, 'repo'), ['log', '--format=%B', 'main'])).to.include('Svc-Origin: expiry')
  })

  it('lists, counts and searches past a document whose git object is missing, and says which one was skipped', async () => {
    const dir = tempDir()
    db = await openEngine(dir)
    await db.put({id: 'd:1', text: 'plum'})
    await db.put({id: 'd:2', text: 'plum jam'})
    await db.close()
    const repo = join(dir, 'repo')
    const blob = gitOut(repo, ['rev-parse', `main:${docPath(parseId('d:1'))}`]).trim()
    loseObject(repo, blob)
    db = await openEngine(dir)
    const e = await rejects(db.get('d:1'))
    expect(e.code).to.equal('damaged')
    expect(e.message).to.include(blob)
    const list = await db.list({table: 'd'})
    expect(list.docs.map((d) => d.id)).to.deep.equal(['d:2'])
    expect(list.skipped).to.deep.equal([{id: 'd:1', object: blob}])
    expect(await db.count({table: 'd'})).to.equal(2)
    expect(db.damage()).to.deep.equal([{branch: 'main', id: 'd:1', object: blob, reason: 'is missing from the repository'}])
    await db.delete('d:1')
    expect(db.damage()).to.deep.equal([])
  })
})
