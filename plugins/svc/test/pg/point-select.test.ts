/**
 * The point select's own path (query/point-select.ts) against the general SELECT path, over the
 * real protocol: each `... WHERE id = x` is also run as `... WHERE id = x AND true`, which only the
 * general path answers, and both must give the same rows, column types and errors, in the simple
 * protocol (literals) and the extended one (parameters, named and unnamed statements).
 */
import {expect} from 'chai'
import pg from 'pg'

import {type Harness, pgClient, sqlError, startHarness} from '../redis/harness.js'

import {answer} from './answer.js'

describe('svc SQL point selects by id', function () {
  this.timeout(60_000)
  let h: Harness
  let c: pg.Client

  before(async () => {
    h = await startHarness({redis: false})
    c = await pgClient(h)
    await c.query('CREATE TABLE acc (id int PRIMARY KEY, abalance int, big bigint, price numeric, note text, tags jsonb)')
    await c.query(`INSERT INTO acc (id, abalance, big, price, note, tags) VALUES (1, 10, 9007199254740993, 1.50, 'one', '{"a": 1}'), (2, NULL, NULL, NULL, NULL, NULL), (-3, 30, 3, 3, 'neg', '[1]')`)
    await c.query('CREATE TABLE names (id text PRIMARY KEY, n int)')
    await c.query(`INSERT INTO names (id, n) VALUES ('a', 1), ('05', 5), ('x y', 7)`)
    await c.query('CREATE TABLE loose (id int, v int)')
  })

  after(async () => {
    await c?.end().catch(() => undefined)
    await h?.close()
  })

  const same = async (sql: string, values?: unknown[]) => {
    const general = sql.replace(/WHERE (.*)$/, 'WHERE $1 AND true')
    const fast = await answer(c, sql, values)
    const slow = await answer(c, general, values)
    expect(fast, sql).to.deep.equal(slow)
    // A named prepared statement, executed twice, answers the same too.
    if (values) {
      const name = `s${Math.random().toString(36).slice(2)}`
      expect(await answer(c, sql, values, name), `${sql} (named)`).to.deep.equal(slow)
      expect(await answer(c, sql, values, name), `${sql} (named, again)`).to.deep.equal(slow)
    }
    return fast
  }

  it('answers as the general path does: columns, types, NULLs, missing rows, odd keys and errors', async () => {
    expect((await same('SELECT abalance FROM acc WHERE id = $1', [1])).rows).to.deep.equal([[10]])
    for (const v of [1, '1', 2, -3, '-3', 99, null, '05', 1.5, '1.5', 'abc', '', ' 1', 2 ** 40]) {
      await same('SELECT abalance FROM acc WHERE id = $1', [v])
      await same('SELECT * FROM acc WHERE id = $1', [v])
    }
    for (const lit of ['1', '2', '-3', "'1'", '99', "'abc'", 'NULL', '1.5', '2147483648']) {
      await same(`SELECT id, big, price, note, tags FROM acc WHERE id = ${lit}`)
      await same(`SELECT note AS n, a.abalance FROM acc a WHERE a.id = ${lit}`)
      await same(`SELECT acc.* FROM acc WHERE ${lit} = id`)
    }
    for (const v of ['a', '05', '5', 'x y', 'zz', 5, null]) await same('SELECT n, id FROM names WHERE id = $1', [v])
    await same('SELECT v FROM loose WHERE id = $1', [1])
    // Names every object inherits, read from rows that lack them and rows that hold them.
    await c.query('CREATE TABLE odd (id int PRIMARY KEY, "constructor" text, "toString" int)')
    await c.query(`INSERT INTO odd (id, "constructor") VALUES (1, 'c')`)
    await c.query('INSERT INTO odd (id) VALUES (2)')
    for (const v of [1, 2, 3]) {
      await same('SELECT * FROM odd WHERE id = $1', [v])
      await same('SELECT "constructor", "toString" FROM odd WHERE id = $1', [v])
    }
    expect((await same('SELECT nope FROM acc WHERE id = $1', [1])).code).to.equal('42703')
    expect((await same('SELECT abalance FROM missing WHERE id = $1', [1])).code).to.equal('42P01')
    expect((await same('SELECT x.abalance FROM acc WHERE id = 1')).code).to.equal('42P01')
  })

  it('answers prepared statements (Bind/Execute on a named statement) as the general path does, errors included', async () => {
    await c.query(`INSERT INTO names (id, n) VALUES ('\u00e9t\u00e9', 9)`)
    // Statement names in ASCII and not, executed many times, as pgbench -M prepared does.
    const both = async (sql: string, name: string, values: unknown[]) => {
      const general = sql.replace(/WHERE (.*)$/, 'WHERE $1 AND true')
      const fast = await answer(c, sql, values, name)
      expect(fast, `${sql} ${JSON.stringify(values)}`).to.deep.equal(await answer(c, general, values, `${name}_general`))
      return fast
    }
    for (const name of ['P0_0', 'nom_\u00e9', 'n'.repeat(40)]) {
      for (const v of [1, '1', 2, -3, 99, null, 'abc', '', ' 1', '1.5', 2 ** 40, Buffer.from('1'), Buffer.from([0xff])]) {
        await both('SELECT abalance FROM acc WHERE id = $1', name, [v])
        await both('SELECT * FROM acc WHERE id = $1', `${name}s`, [v])
      }
      for (const v of ['a', '\u00e9t\u00e9', 'x y', 'zz', Buffer.from('05')]) await both('SELECT n, id FROM names WHERE id = $1', `${name}n`, [v])
    }
    // The wrong number of parameters for the statement: 08P01 either way, and the connection goes on.
    expect((await both('SELECT abalance FROM acc WHERE id = $1', 'P0_0', [])).code).to.equal('08P01')
    expect((await both('SELECT abalance FROM acc WHERE id = $1', 'P0_0', [1, 2])).code).to.equal('08P01')
    expect((await both('SELECT abalance FROM acc WHERE id = $1', 'P0_0', [1])).rows).to.deep.equal([[10]])
  })

  it('sees a transaction\'s own writes, and the table as DDL leaves it', async () => {
    const d = await pgClient(h)
    try {
      await d.query('BEGIN')
      await d.query('UPDATE acc SET abalance = 11 WHERE id = 1')
      await d.query('INSERT INTO acc (id, abalance) VALUES (4, 40)')
      expect((await d.query('SELECT abalance FROM acc WHERE id = $1', [1])).rows).to.deep.equal([{abalance: 11}])
      expect((await d.query('SELECT abalance FROM acc WHERE id = 4')).rows).to.deep.equal([{abalance: 40}])
      // Not committed: the other session still reads the old row and no row 4.
      expect((await c.query('SELECT abalance FROM acc WHERE id = $1', [1])).rows).to.deep.equal([{abalance: 10}])
      expect((await c.query('SELECT abalance FROM acc WHERE id = 4')).rowCount).to.equal(0)
      expect((await sqlError(d.query('SELECT nope FROM acc WHERE id = 1'))).code).to.equal('42703')
      // An aborted transaction refuses even a point select until ROLLBACK.
      expect((await sqlError(d.query('SELECT abalance FROM acc WHERE id = $1', [1]))).code).to.equal('25P02')
      expect((await sqlError(d.query('SELECT abalance FROM acc WHERE id = 1'))).code).to.equal('25P02')
      await d.query('ROLLBACK')
      expect((await d.query('SELECT abalance FROM acc WHERE id = $1', [1])).rows).to.deep.equal([{abalance: 10}])

      await d.query({name: 'byid', text: 'SELECT * FROM names WHERE id = $1', values: ['a']})
      await c.query('DROP TABLE names')
      expect((await sqlError(d.query({name: 'byid', text: 'SELECT * FROM names WHERE id = $1', values: ['a']}))).code).to.equal('42P01')
      await c.query('CREATE TABLE names (id text PRIMARY KEY, label text)')
      await c.query(`INSERT INTO names (id, label) VALUES ('a', 'A')`)
      const again = await d.query({name: 'byid', text: 'SELECT * FROM names WHERE id = $1', values: ['a']})
      expect(again.rows).to.deep.equal([{id: 'a', label: 'A'}])
      expect(again.fields.map((f) => f.name)).to.deep.equal(['id', 'label'])
    } finally {
      await d.end()
    }
  })

  it('is answered from a schema\'s branch as search_path says', async () => {
    await c.query('CREATE SCHEMA pointy')
    await c.query('SET search_path TO pointy')
    try {
      await c.query('UPDATE acc SET abalance = 12 WHERE id = 1')
      expect((await c.query('SELECT abalance FROM acc WHERE id = $1', [1])).rows).to.deep.equal([{abalance: 12}])
    } finally {
      await c.query('SET search_path TO public')
    }
    expect((await c.query('SELECT abalance FROM acc WHERE id = $1', [1])).rows).to.deep.equal([{abalance: 10}])
  })
})
