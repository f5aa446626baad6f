import {expect} from 'chai'
import {execFile} from 'node:child_process'
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {Redis} from 'ioredis'
import pg from 'pg'

import {nullLogger, openEngine} from '../../src/engine/index.js'
import type {RunningServer} from '../../src/engine/types.js'
import {startPgServer} from '../../src/servers/pg/index.js'
import {Health} from '../../src/servers/health.js'
import {createMetrics} from '../../src/servers/metrics.js'
import {startRestServer} from '../../src/servers/rest/index.js'
import {type Harness, sqlError, pgClient, startHarness} from '../redis/harness.js'
import {killWriter} from '../helpers/writer.js'


function psql(port: number, command: string): Promise<string> {
  return new Promise((resolve) => {
    execFile('psql', ['-h', '127.0.0.1', '-p', String(port), '-U', 'svc', '-d', 'svc', '-X', '-c', command], {env: {...process.env, PGPASSWORD: 'svc-secret'}, timeout: 20_000}, (_err, stdout, stderr) =>
      resolve(stdout + stderr),
    )
  })
}

const QUERIES: Array<[string, unknown[]]> = [
  ["SELECT id, name FROM items WHERE city = 'Oslo' ORDER BY id", []],
  ['SELECT id FROM items WHERE city = $1 ORDER BY id', ['Rome']],
  ["SELECT id FROM items WHERE city IN ('Oslo', 'Rome', 'Nowhere') ORDER BY id", []],
  ["SELECT id FROM items WHERE city = 'Oslo' AND n > 3 ORDER BY id", []],
  ['SELECT id FROM items WHERE n = 4 ORDER BY id', []],
  ['SELECT id FROM items WHERE n IN (1, 2.0) ORDER BY id', []],
  ['SELECT count(*) AS c FROM items WHERE city = NULL', []],
  ["SELECT city, count(*) AS c FROM items WHERE city = 'Oslo' GROUP BY city", []],
]

describe('svc secondary indexes (SQL, engine, Redis and REST)', function () {
  this.timeout(60_000)
  let h: Harness
  let c: pg.Client
  let redis: Redis
  let rest: RunningServer
  let base: string

  const run = async (): Promise<unknown[]> => {
    const out: unknown[] = []
    for (const [q, v] of QUERIES) out.push((await c.query(q, v)).rows)
    return out
  }
  const plan = async (sql: string, values: unknown[] = []) => (await c.query(sql, values)).rows.map((r) => r['QUERY PLAN']).join('\n')
  const cities = async (city: string) => (await c.query('SELECT id FROM items WHERE city = $1 ORDER BY id', [city])).rows.map((r) => r.id)

  before(async () => {
    h = await startHarness({})
    c = await pgClient(h)
    redis = new Redis({host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1, port: h.redis!.port})
    await redis.connect()
    const metrics = createMetrics(h.engine as never)
    rest = await startRestServer(
      {engine: h.engine, logger: nullLogger, metrics: metrics.connections},
      {health: new Health(h.engine as never, {startedAt: Date.now(), version: '0.0.0'}), host: '127.0.0.1', maxBodyBytes: 4096, metrics, port: 0},
    )
    base = `http://127.0.0.1:${rest.port}`
    const rows = Array.from({length: 200}, (_, i) => `(${i}, 'n${i}', '${['Oslo', 'Rome', 'Lima', 'Kyiv'][i % 4]}', ${i % 7})`).join(', ')
    await c.query(`INSERT INTO items (id, name, city, n) VALUES ${rows}`)
    // Values of other types in the same field: a numeric string, a boolean, an object, a missing field.
    await h.engine.batch([
      {doc: {city: 'Oslo', id: 'items:x1', n: '4'}, op: 'put'},
      {doc: {city: 'Oslo', id: 'items:x2', n: true}, op: 'put'},
      {doc: {city: {at: 'Oslo'}, id: 'items:x3', n: '4.0'}, op: 'put'},
      {doc: {id: 'items:x4'}, op: 'put'},
    ])
  })

  after(async () => {
    await c?.end().catch(() => undefined)
    redis?.disconnect()
    await rest?.close()
    await h?.close()
  })

  it('answers exactly as without the index, without listing the table, and EXPLAIN shows the index', async () => {
    const before = await run()
    expect(await plan("EXPLAIN SELECT id FROM items WHERE city = 'Oslo'")).to.include('Table Scan on items')
    await c.query('CREATE INDEX items_city ON items (city)')
    await c.query('CREATE INDEX IF NOT EXISTS ON items (n)')
    expect((await h.engine.indexes({table: 'items'})).map((i) => [i.name, i.field, i.documents])).to.deep.equal([
      ['items_city', 'city', 204 - 1],
      ['items_n_idx', 'n', 204 - 1],
    ])
    const lists = h.calls.list ?? 0
    const finds = h.calls.findIds ?? 0
    const after = await run()
    expect(after).to.deep.equal(before)
    expect((after[0] as unknown[]).length).to.equal(52)
    expect(h.calls.list ?? 0).to.equal(lists)
    expect((h.calls.findIds ?? 0) - finds).to.be.greaterThan(QUERIES.length - 1)
    expect(await plan("EXPLAIN SELECT id FROM items WHERE city = 'Oslo' AND n > 3")).to.include('Index Lookup using items_city on items  (city, 1 value)')
    expect(await plan('EXPLAIN SELECT id FROM items WHERE n IN ($1, $2)', [1, 2])).to.include('Index Lookup using items_n_idx on items  (n, 2 values)')
    expect(await plan('EXPLAIN DELETE FROM items WHERE city = $1', ['Lima'])).to.include('Index Lookup using items_city')
    expect(await plan("EXPLAIN SELECT id FROM items WHERE name = 'n1'")).to.include('Table Scan on items')
    await c.query('DROP INDEX items_n_idx')
    expect(await run()).to.deep.equal(before)
    expect(await plan('EXPLAIN SELECT id FROM items WHERE n = 1')).to.include('Table Scan on items')
  })

  it('follows writes made through SQL, Redis, REST and transactions', async () => {
    await c.query("INSERT INTO items (id, name, city) VALUES (1000, 'sql', 'Quito')")
    expect(await cities('Quito')).to.deep.equal(['1000'])
    await redis.hset('items:r1', 'city', 'Quito', 'name', 'redis')
    expect(await cities('Quito')).to.deep.equal(['1000', 'r1'])
    const put = await fetch(`${base}/api/v1/documents/items:w1`, {body: JSON.stringify({city: 'Quito', name: 'rest'}), headers: {'content-type': 'application/json'}, method: 'PUT'})
    expect(put.status).to.equal(200)
    expect(await cities('Quito')).to.deep.equal(['1000', 'r1', 'w1'])
    await c.query("UPDATE items SET city = 'Bern' WHERE id = '1000'")
    await redis.hset('items:r1', 'city', 'Bern')
    await fetch(`${base}/api/v1/documents/items:w1`, {method: 'DELETE'})
    expect(await cities('Quito')).to.deep.equal([])
    expect(await cities('Bern')).to.deep.equal(['1000', 'r1'])
    await redis.del('items:r1')
    expect(await cities('Bern')).to.deep.equal(['1000'])
    // Inside a transaction its own writes are visible through the index path, others' only after COMMIT.
    const other = await pgClient(h)
    try {
      await c.query('BEGIN')
      await c.query("INSERT INTO items (id, name, city) VALUES (1001, 'tx', 'Bern')")
      await c.query("UPDATE items SET city = 'Oslo' WHERE id = '1000'")
      expect(await cities('Bern')).to.deep.equal(['1001'])
      expect((await other.query('SELECT id FROM items WHERE city = $1 ORDER BY id', ['Bern'])).rows.map((r) => r.id)).to.deep.equal(['1000'])
      await c.query('COMMIT')
      expect((await other.query('SELECT id FROM items WHERE city = $1 ORDER BY id', ['Bern'])).rows.map((r) => r.id)).to.deep.equal(['1001'])
    } finally {
      await other.end()
    }
    // An indexed DELETE removes exactly the matching rows.
    const del = await c.query("DELETE FROM items WHERE city = 'Lima' AND n = 0")
    expect(del.rowCount).to.equal(7)
    expect((await c.query("SELECT count(*) AS c FROM items WHERE city = 'Lima'")).rows[0].c).to.equal('43')
  })

  it('refuses bad CREATE INDEX and DROP INDEX statements with SQLSTATEs; the connection stays usable', async () => {
    expect((await sqlError(c.query('CREATE INDEX ON nothing_here (a)'))).code).to.equal('42P01')
    expect((await sqlError(c.query('CREATE INDEX items_city ON items (name)'))).code).to.equal('42P07')
    await c.query('CREATE INDEX IF NOT EXISTS items_city ON items (name)')
    expect((await sqlError(c.query('CREATE UNIQUE INDEX u ON items (name)'))).code).to.equal('0A000')
    expect((await sqlError(c.query('CREATE INDEX e ON items (lower(name))'))).code).to.equal('0A000')
    expect((await sqlError(c.query('CREATE INDEX e ON items (name, city)'))).code).to.equal('0A000')
    expect((await sqlError(c.query("CREATE INDEX e ON items (name) WHERE city = 'x'"))).code).to.equal('0A000')
    expect((await sqlError(c.query('CREATE INDEX e ON items USING gin (name)'))).code).to.equal('0A000')
    expect((await sqlError(c.query('CREATE INDEX e ON items (id)'))).code).to.equal('42P07')
    expect((await sqlError(c.query('CREATE INDEX "bad name!" ON items (name)'))).code).to.equal('22023')
    expect((await sqlError(c.query('CREATE INDEX e ON nobranch.items (name)'))).code).to.equal('3F000')
    expect((await sqlError(c.query('DROP INDEX missing_idx'))).code).to.equal('42704')
    const ok = await c.query('DROP INDEX IF EXISTS missing_idx')
    expect(ok.command).to.equal('DROP')
    expect((await c.query('SELECT count(*) AS c FROM items')).rows[0].c).to.be.a('string')
  })

  it('joins through an indexed field or the id without listing the joined table', async () => {
    await c.query('CREATE TABLE orders (id int, item text, qty int)')
    await c.query("INSERT INTO orders VALUES (1, '5', 2), (2, '6', 1), (3, '5', 7), (4, 'none', 1)")
    await c.query('CREATE TABLE notes (id int, item text, body text)')
    await c.query("INSERT INTO notes VALUES (1, '5', 'a'), (2, '5', 'b'), (3, '7', 'c')")
    const q = 'SELECT o.id AS o, n.body FROM orders o LEFT JOIN notes n ON n.item = o.item ORDER BY o.id, n.body'
    const withoutIndex = (await c.query(q)).rows
    const byId = 'SELECT o.id AS o, i.name FROM orders o JOIN items i ON i.id = o.item ORDER BY o.id'
    const byIdRows = (await c.query(byId)).rows
    expect(byIdRows).to.deep.equal([{name: 'n5', o: 1}, {name: 'n6', o: 2}, {name: 'n5', o: 3}])
    await c.query('CREATE INDEX notes_item ON notes (item)')
    const lists = h.calls.list ?? 0
    expect((await c.query(q)).rows).to.deep.equal(withoutIndex)
    expect(withoutIndex).to.deep.equal([{body: 'a', o: 1}, {body: 'b', o: 1}, {body: null, o: 2}, {body: 'a', o: 3}, {body: 'b', o: 3}, {body: null, o: 4}])
    expect((await c.query(byId)).rows).to.deep.equal(byIdRows)
    // Only the left table (orders) was listed, once per query.
    expect((h.calls.list ?? 0) - lists).to.equal(2)
    const p = await plan(`EXPLAIN ${q}`)
    expect(p).to.include('LEFT JOIN Index Lookup using notes_item on notes (item)')
    expect(await plan(`EXPLAIN ${byId}`)).to.include('INNER JOIN Id Lookup on items (engine getMany)')
    // psql's \d lists the secondary index next to the primary key.
    const d = await psql(h.pg!.port, '\\d notes')
    expect(d).to.include('"notes_pkey" PRIMARY KEY, btree (id)')
    expect(d).to.include('"notes_item" btree (item)')
  })

  it('drops the indexes of a dropped table', async () => {
    await c.query('CREATE TABLE tmp_t (id int, v text)')
    await c.query("INSERT INTO tmp_t VALUES (1, 'a')")
    await c.query('CREATE INDEX ON tmp_t (v)')
    expect((await sqlError(c.query('CREATE INDEX e ON tmp_t (nope)'))).code).to.equal('42703')
    expect(await h.engine.indexes({table: 'tmp_t'})).to.have.length(1)
    await c.query('DROP TABLE tmp_t')
    expect(await h.engine.indexes({table: 'tmp_t'})).to.deep.equal([])
  })
})

describe('svc secondary indexes in the engine', function () {
  this.timeout(60_000)
  let dir: string

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'svc-fidx-'))
  })
  after(() => rmSync(dir, {force: true, recursive: true}))

  it('follows writes replayed from the write-ahead log at start', async () => {
    const data = join(dir, 'replay')
    let db = await openEngine(data, {checkpointDelayMs: 60_000, checkpointMaxDelayMs: 60_000, fullText: false, logger: nullLogger})
    await db.put({city: 'Oslo', id: 'p:1'})
    await db.createIndex('p', 'city')
    // Acknowledged but never committed to Git: the writer is killed before any checkpoint.
    await db.put({city: 'Rome', id: 'p:1'})
    await db.put({city: 'Rome', id: 'p:2'})
    await killWriter(db)
    await db.close().catch(() => {})
    db = await openEngine(data, {fullText: false, logger: nullLogger})
    try {
      expect(await db.findIds('p', 'city', 'Rome')).to.deep.equal(['p:1', 'p:2'])
      expect(await db.findIds('p', 'city', 'Oslo')).to.deep.equal([])
    } finally {
      await db.close()
    }
  })

  it('compares values as PostgreSQL does, persists definitions, rebuilds at start and copies them to new branches', async () => {
    const data = join(dir, 'data')
    let db = await openEngine(data, {fullText: false, logger: nullLogger})
    await db.batch([
      {doc: {id: 't:1', v: 'a'}, op: 'put'},
      {doc: {id: 't:2', v: 1}, op: 'put'},
      {doc: {id: 't:3', v: '1.0'}, op: 'put'},
      {doc: {id: 't:4', v: true}, op: 'put'},
      {doc: {id: 't:5', v: 'yes'}, op: 'put'},
      {doc: {id: 't:6', v: null}, op: 'put'},
      {doc: {id: 't:7', v: [1, 2]}, op: 'put'},
      {doc: {id: 'u:1', v: 'a'}, op: 'put'},
    ])
    expect(await db.findIds('t', 'v', 'a')).to.equal(undefined)
    const info = await db.createIndex('t', 'v')
    expect(info).to.deep.equal({branch: 'main', documents: 6, field: 'v', name: 't_v_idx', table: 't'})
    expect(await db.findIds('t', 'v', 'a')).to.deep.equal(['t:1'])
    expect(await db.findIds('t', 'v', 1)).to.deep.equal(['t:2', 't:3', 't:4'])
    expect(await db.findIds('t', 'v', '1')).to.deep.equal(['t:2', 't:4'])
    expect(await db.findIds('t', 'v', true)).to.deep.equal(['t:2', 't:4', 't:5'])
    expect(await db.findIds('t', 'v', null)).to.deep.equal([])
    expect(await db.findIds('t', 'v', '[1,2]')).to.deep.equal(['t:7'])
    const dup = await db.createIndex('t', 'w', {name: 't_v_idx'}).catch((error: {code?: string}) => error)
    expect((dup as {code?: string}).code).to.equal('conflict')
    await db.put({id: 't:1', v: 'b'})
    await db.delete('t:2')
    expect(await db.findIds('t', 'v', 'a')).to.deep.equal([])
    expect(await db.findIds('t', 'v', 'b')).to.deep.equal(['t:1'])
    await db.createBranch('dev')
    await db.put({id: 't:8', v: 'b'}, {branch: 'dev'})
    expect(await db.findIds('t', 'v', 'b', {branch: 'dev'})).to.deep.equal(['t:1', 't:8'])
    expect(await db.findIds('t', 'v', 'b')).to.deep.equal(['t:1'])
    await db.close()
    expect(JSON.parse(readFileSync(join(data, 'indexes.json'), 'utf8')).branches.main).to.deep.equal([{field: 'v', name: 't_v_idx', table: 't'}])
    db = await openEngine(data, {fullText: false, logger: nullLogger})
    try {
      expect((await db.indexes()).map((i) => i.name)).to.deep.equal(['t_v_idx'])
      expect(await db.findIds('t', 'v', 'b')).to.deep.equal(['t:1'])
      expect(await db.findIds('t', 'v', 'b', {branch: 'dev'})).to.deep.equal(['t:1', 't:8'])
      // The SQL server over the reopened engine takes the index path at once.
      const server = await startPgServer({engine: db, logger: nullLogger, metrics: {connectionClosed() {}, connectionOpened() {}}}, {host: '127.0.0.1', password: 'p', port: 0, username: 'svc'})
      const c = new pg.Client({database: 'svc', host: '127.0.0.1', password: 'p', port: server.port, user: 'svc'})
      await c.connect()
      try {
        expect((await c.query("SELECT id FROM t WHERE v = 'b'")).rows).to.deep.equal([{id: '1'}])
        const p = (await c.query("EXPLAIN SELECT id FROM t WHERE v = 'b'")).rows.map((r) => r['QUERY PLAN']).join('\n')
        expect(p).to.include('Index Lookup using t_v_idx on t')
      } finally {
        await c.end()
        await server.close()
      }
      expect(await db.dropIndex('t_v_idx')).to.equal(true)
      expect(await db.dropIndex('t_v_idx', {ifExists: true})).to.equal(false)
      expect(await db.findIds('t', 'v', 'b')).to.equal(undefined)
    } finally {
      await db.close()
    }
  })
})
