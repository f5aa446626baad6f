/**
 * Reads of a hot document (its parsed form kept on its document-map entry, engine/hot-docs.ts)
 * over the real protocols, with writes through every other protocol between them: Redis GET
 * (the fast path) against GET inside MULTI (read through the transaction's store, the bytes
 * parsed again), a prepared PostgreSQL point select against the general SELECT path, and REST's
 * stored bytes. Each must show the last acknowledged write, read after read.
 */
import {expect} from 'chai'
import {Redis} from 'ioredis'
import type pg from 'pg'

import {nullLogger} from '../../src/engine/index.js'
import type {RunningServer} from '../../src/engine/types.js'
import {Health} from '../../src/servers/health.js'
import {createMetrics} from '../../src/servers/metrics.js'
import {startRestServer} from '../../src/servers/rest/index.js'
import {answer} from '../pg/answer.js'
import {type Harness, pgClient, startHarness} from './harness.js'

describe('svc hot reads over Redis, PostgreSQL and REST, written through each other', function () {
  this.timeout(60_000)
  let clock = Date.now()
  let h: Harness
  let c: pg.Client
  let r: Redis
  let rest: RunningServer
  let base: string

  before(async () => {
    h = await startHarness({now: () => clock})
    c = await pgClient(h)
    r = new Redis({host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, port: h.redis!.port})
    await r.connect()
    const metrics = createMetrics(h.engine)
    rest = await startRestServer(
      {engine: h.engine, logger: nullLogger, metrics: metrics.connections},
      {health: new Health(h.engine, {startedAt: Date.now(), version: '9.9.9'}), host: '127.0.0.1', metrics, port: 0},
    )
    base = `http://127.0.0.1:${rest.port}/api/v1/documents/`
    await c.query('CREATE TABLE acc (id int PRIMARY KEY, value text, n int)')
  })

  after(async () => {
    r?.disconnect()
    await c?.end().catch(() => undefined)
    await rest?.close()
    await h?.close()
  })

  /** What every reader says of acc:1, each hot read made ten times (one offer in eight is kept); all must agree with REST's bytes. */
  const readAll = async (step: string): Promise<{doc: unknown; get: null | string; row: unknown}> => {
    const res = await fetch(`${base}acc:1`)
    const doc: unknown = res.status === 404 ? undefined : await res.json()
    const tx = await r.multi().get('acc:1').exec()
    const general = tx![0][1] as null | string
    for (let i = 0; i < 10; i++) expect(await r.get('acc:1'), `${step}: Redis GET, read ${i}`).to.equal(general)
    const slow = await answer(c, 'SELECT value, n FROM acc WHERE id = $1 AND true', [1])
    for (let i = 0; i < 10; i++) expect(await answer(c, 'SELECT value, n FROM acc WHERE id = $1', [1], 'hot_point'), `${step}: point select, read ${i}`).to.deep.equal(slow)
    const d = doc as undefined | {n?: number; value?: string}
    expect(slow.rows, `${step}: SQL row against REST's bytes`).to.deep.equal(d === undefined ? [] : [[d.value ?? null, d.n ?? null]])
    return {doc, get: general, row: slow.rows}
  }

  it('shows the last write of any protocol at once', async () => {
    const put = (body: unknown) => fetch(`${base}acc:1`, {body: JSON.stringify(body), headers: {'content-type': 'application/json'}, method: 'PUT'})
    expect((await readAll('nothing yet')).doc).to.equal(undefined)

    await c.query(`INSERT INTO acc (id, value, n) VALUES (1, 'a', 1)`)
    expect((await readAll('SQL INSERT')).row).to.deep.equal([['a', 1]])
    await r.set('acc:1', 'b')
    expect((await readAll('Redis SET')).get).to.equal('b')
    expect((await put({n: 3, value: 'c'})).status).to.be.lessThan(300)
    expect((await readAll('REST PUT')).row).to.deep.equal([['c', 3]])
    await c.query(`UPDATE acc SET value = 'd' WHERE id = 1`)
    expect((await readAll('SQL UPDATE')).row).to.deep.equal([['d', 3]])
    await c.query('BEGIN')
    await c.query(`UPDATE acc SET value = 'e' WHERE id = 1`)
    await c.query('COMMIT')
    expect((await readAll('SQL transaction')).row).to.deep.equal([['e', 3]])
    await c.query('BEGIN')
    await c.query(`UPDATE acc SET value = 'f' WHERE id = 1`)
    await c.query('ROLLBACK')
    expect((await readAll('SQL rollback')).row).to.deep.equal([['e', 3]])
    await r.multi().set('acc:1', 'g').exec()
    expect((await readAll('Redis MULTI SET')).get).to.equal('g')
    await r.pexpire('acc:1', 1000)
    expect((await readAll('Redis PEXPIRE, not yet due')).get).to.equal('g')
    clock += 2000
    expect((await readAll('expired')).doc).to.equal(undefined)
    await r.set('acc:1', 'h')
    expect((await readAll('Redis SET after expiry')).get).to.equal('h')
    await r.del('acc:1')
    expect((await readAll('Redis DEL')).doc).to.equal(undefined)
    expect((await put({n: 9, value: 'i'})).status).to.be.lessThan(300)
    expect((await readAll('REST PUT again')).row).to.deep.equal([['i', 9]])
    expect((await fetch(`${base}acc:1`, {method: 'DELETE'})).status).to.be.lessThan(300)
    expect((await readAll('REST DELETE')).doc).to.equal(undefined)
    await c.query(`INSERT INTO acc (id, value, n) VALUES (1, 'j', 10)`)
    await h.engine.flush()
    expect((await readAll('SQL INSERT, checkpointed')).row).to.deep.equal([['j', 10]])
    await c.query('DELETE FROM acc WHERE id = 1')
    expect((await readAll('SQL DELETE')).doc).to.equal(undefined)
  })
})
