/**
 * `SELECT ... WHERE col = x` on a column with a secondary index, answered by the point select's
 * path (query/point-select.ts byIndex), against the general SELECT path over the real protocol:
 * `... AND true` only the general path answers, and both must give the same rows (in the same
 * order), column types and errors, before and after writes, DROP INDEX, DDL and inside a
 * transaction.
 */
import {expect} from 'chai'
import pg from 'pg'

import {type Harness, pgClient, startHarness} from '../redis/harness.js'

import {answer} from './answer.js'

describe('svc SQL equality selects through a secondary index', function () {
  this.timeout(60_000)
  let h: Harness
  let c: pg.Client

  before(async () => {
    h = await startHarness({redis: false})
    c = await pgClient(h)
    await c.query('CREATE TABLE t (id text PRIMARY KEY, code text, n int, flag boolean, price numeric, doc jsonb)')
    await c.query(`INSERT INTO t (id, code, n, flag, price, doc) VALUES
      ('9', 'a', 1, true, 1.50, '{"k": 1}'), ('10', 'a', 2, false, 2, '[1, 2]'), ('1', 'b', 1, NULL, NULL, NULL),
      ('x y', '1', 1, true, 1.0, '"s"'), ('\u00e9', 'b', NULL, false, 3, '{"k": 1}'), ('n', NULL, 5, NULL, 5, NULL)`)
    await c.query('CREATE INDEX t_code ON t (code)')
    await c.query('CREATE INDEX t_n ON t (n)')
    await c.query('CREATE INDEX t_flag ON t (flag)')
    await c.query('CREATE INDEX t_price ON t (price)')
    await c.query('CREATE INDEX t_doc ON t (doc)')
  })

  after(async () => {
    await c?.end().catch(() => undefined)
    await h?.close()
  })

  const same = async (sql: string, values?: unknown[], client = c) => {
    const general = sql.replace(/WHERE (.*)$/, 'WHERE $1 AND true')
    const slow = await answer(client, general, values)
    expect(await answer(client, sql, values), sql).to.deep.equal(slow)
    if (values) {
      const name = `s${Math.random().toString(36).slice(2)}`
      expect(await answer(client, sql, values, name), `${sql} (named)`).to.deep.equal(slow)
      expect(await answer(client, sql, values, name), `${sql} (named, again)`).to.deep.equal(slow)
    }
    return slow
  }

  const VALUES = ['a', 'b', '1', 1, '1.0', 1.5, '1.5', 2, true, 't', false, 'f', null, '', 'zz', 5, '{"k": 1}', '[1, 2]', '"s"', 2 ** 40, Buffer.from('a'), Buffer.from([0xff])]

  it('answers as the general path does: several rows in id order, types, coercions, NULLs and errors', async () => {
    expect((await same('SELECT id, n FROM t WHERE code = $1', ['a'])).rows).to.deep.equal([['10', 2], ['9', 1]])
    for (const col of ['code', 'n', 'flag', 'price', 'doc']) {
      for (const v of VALUES) {
        await same(`SELECT id, n FROM t WHERE ${col} = $1`, [v])
        await same(`SELECT * FROM t WHERE $1 = ${col}`, [v])
      }
    }
    for (const lit of ["'a'", "'b'", '1', "'1'", '1.5', 'true', "'t'", 'NULL', "'zz'", '2147483648']) {
      for (const col of ['code', 'n', 'flag', 'price']) {
        await same(`SELECT id, code, doc FROM t WHERE ${col} = ${lit}`)
        await same(`SELECT t.* FROM t WHERE t.${col} = ${lit}`)
        await same(`SELECT x.code AS c, x.id FROM t x WHERE ${lit} = x.${col}`)
      }
    }
    // A column the table lacks, and one without an index: the general path's errors and scans.
    expect((await same('SELECT id FROM t WHERE nope = $1', ['a'])).code).to.equal('42703')
    expect((await same('SELECT nope FROM t WHERE code = $1', ['a'])).code).to.equal('42703')
    await c.query('CREATE TABLE u (id int PRIMARY KEY, code text)')
    await c.query(`INSERT INTO u (id, code) VALUES (1, 'a'), (2, 'a')`)
    expect((await same('SELECT id FROM u WHERE code = $1', ['a'])).rows).to.deep.equal([[1], [2]])
  })

  it('follows writes, DROP INDEX and DDL, also for a statement prepared before them', async () => {
    const sql = 'SELECT id, code, n FROM t WHERE code = $1'
    const prepared = (v: unknown) => answer(c, sql, [v], 'kept')
    expect((await prepared('b')).rows).to.deep.equal([['1', 'b', 1], ['\u00e9', 'b', null]])
    await c.query(`UPDATE t SET code = 'b' WHERE id = '9'`)
    await c.query(`DELETE FROM t WHERE id = '1'`)
    await c.query(`INSERT INTO t (id, code, n) VALUES ('0', 'b', 7)`)
    expect((await prepared('b')).rows).to.deep.equal([['0', 'b', 7], ['9', 'b', 1], ['\u00e9', 'b', null]])
    expect(await prepared('b')).to.deep.equal(await same(sql, ['b']))
    await c.query('DROP INDEX t_code')
    expect(await prepared('b')).to.deep.equal(await same(sql, ['b']))
    await c.query('CREATE INDEX t_code2 ON t (code)')
    expect(await prepared('b')).to.deep.equal(await same(sql, ['b']))
    // The column's type changes what `=` compares: the statement answers as a fresh one does.
    await c.query('DROP TABLE t')
    expect((await prepared('b')).code).to.equal('42P01')
    await c.query('CREATE TABLE t (id int PRIMARY KEY, code int, n text)')
    await c.query(`INSERT INTO t (id, code, n) VALUES (1, 1, 'one'), (2, 2, 'two'), (3, 1, 'three')`)
    await c.query('CREATE INDEX t_code3 ON t (code)')
    expect((await prepared('1')).rows).to.deep.equal([[1, 1, 'one'], [3, 1, 'three']])
    expect(await prepared('1.0')).to.deep.equal(await same(sql, ['1.0']))
    expect(await prepared('b')).to.deep.equal(await same(sql, ['b']))
  })

  it('sees a transaction\'s own writes, which the index does not hold yet', async () => {
    const d = await pgClient(h)
    try {
      await d.query('BEGIN')
      await d.query('UPDATE t SET code = 7 WHERE id = 2')
      expect((await d.query('SELECT id FROM t WHERE code = $1', [7])).rows).to.deep.equal([{id: 2}])
      expect((await d.query('SELECT id FROM t WHERE code = $1', [2])).rowCount).to.equal(0)
      expect((await c.query('SELECT id FROM t WHERE code = $1', [7])).rowCount).to.equal(0)
      expect((await c.query('SELECT id FROM t WHERE code = $1', [2])).rows).to.deep.equal([{id: 2}])
      await d.query('ROLLBACK')
      expect((await d.query('SELECT id FROM t WHERE code = $1', [2])).rows).to.deep.equal([{id: 2}])
    } finally {
      await d.end()
    }
  })
})
