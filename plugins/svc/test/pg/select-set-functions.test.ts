/**
 * Set-returning functions in the select list and array columns, where the differential suite
 * cannot go: the row bound (PostgreSQL has none), schemaless tables, and what other protocols
 * see of an array column.
 */
import {expect} from 'chai'
import pg from 'pg'

import {type Harness, sqlError, pgClient, startHarness} from '../redis/harness.js'

describe('svc SQL set-returning functions in the select list, array columns', function () {
  this.timeout(60_000)
  let h: Harness
  let c: pg.Client

  before(async () => {
    h = await startHarness({redis: false})
    c = await pgClient(h)
    await h.engine.put({id: 'docs:1', tags: ['a', 'b']})
    await h.engine.put({id: 'docs:2', tags: ['c']})
    await h.engine.put({id: 'docs:3', tags: []})
  })

  after(async () => {
    await c?.end().catch(() => undefined)
    await h?.close()
  })

  const rows = async (sql: string, params: unknown[] = []) => (await c.query({rowMode: 'array', text: sql, values: params})).rows

  it('refuses more than 1,000,000 rows from select-list calls with 54000, and the connection goes on', async () => {
    const error = await sqlError(c.query('SELECT generate_series(1, 600000) FROM docs'))
    expect(error.code).to.equal('54000')
    expect(await rows('SELECT generate_series(1, 2)')).to.deep.equal([[1], [2]])
  })

  it('unnests a schemaless array field per row; a row with an empty array gives no row', async () => {
    expect(await rows('SELECT id, unnest(tags) FROM docs ORDER BY id, 2')).to.deep.equal([
      ['1', 'a'],
      ['1', 'b'],
      ['2', 'c'],
    ])
  })

  it('stores a declared array column as a JSON array that the engine (REST, Redis) reads as one', async () => {
    await c.query('CREATE TABLE arr (id int PRIMARY KEY, tags text[], n int[])')
    await c.query('INSERT INTO arr (id, tags, n) VALUES ($1, $2, $3)', [1, ['x y', null], [3, 4]])
    const doc = await h.engine.get('arr:1')
    expect((doc as Record<string, unknown>).tags).to.deep.equal(['x y', null])
    expect((doc as Record<string, unknown>).n).to.deep.equal([3, 4])
    // node-postgres parses int4[] and text[] results into JS arrays through their type OIDs.
    expect((await c.query('SELECT tags, n FROM arr')).rows).to.deep.equal([{n: [3, 4], tags: ['x y', null]}])
    const bad = await sqlError(c.query("UPDATE arr SET n = '{1,x}' WHERE id = 1"))
    expect(bad.code).to.equal('22P02')
    expect((await c.query('SELECT n FROM arr')).rows).to.deep.equal([{n: [3, 4]}])
  })
})
