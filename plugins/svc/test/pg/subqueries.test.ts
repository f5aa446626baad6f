/**
 * Subqueries over schemaless tables (documents written through the engine, no CREATE TABLE):
 * the differential suite covers declared tables against PostgreSQL; here the binding of a name
 * to the inner or the enclosing query has to come from the documents themselves.
 */
import {expect} from 'chai'
import pg from 'pg'

import {type Harness, sqlError, pgClient, startHarness} from '../redis/harness.js'

describe('svc SQL subqueries', function () {
  this.timeout(30_000)
  let h: Harness
  let c: pg.Client

  before(async () => {
    h = await startHarness({redis: false})
    c = await pgClient(h)
    await h.engine.put({city: 'Paris', id: 'authors:1', name: 'Ann'})
    await h.engine.put({city: 'Rome', id: 'authors:2', name: 'Bob'})
    await h.engine.put({city: 'Oslo', id: 'authors:3', name: 'Cid'})
    await h.engine.put({author: '1', id: 'books:10', pages: 100})
    await h.engine.put({author: '1', id: 'books:11', pages: 300})
    await h.engine.put({author: '2', id: 'books:12', pages: 50})
  })

  after(async () => {
    await c?.end().catch(() => undefined)
    await h?.close()
  })

  const rows = async (sql: string) => (await c.query({rowMode: 'array', text: sql})).rows

  it('binds a name no document of the inner table holds to the enclosing query (correlated)', async () => {
    // `name` exists only in authors: inside the subquery over books it is the outer row's; `id` is the book's own.
    expect(await rows("SELECT name, (SELECT count(*) FROM books WHERE pages > 60 AND name <> 'Bob') AS n FROM authors ORDER BY name")).to.deep.equal([
      ['Ann', '2'],
      ['Bob', '0'],
      ['Cid', '2'],
    ])
    expect(await rows('SELECT name, (SELECT count(*) FROM books WHERE author = id) AS n FROM authors ORDER BY name')).to.deep.equal([
      ['Ann', '0'],
      ['Bob', '0'],
      ['Cid', '0'],
    ])
    expect(await rows('SELECT a.name FROM authors a WHERE EXISTS (SELECT 1 FROM books b WHERE b.author = a.id AND b.pages > 200)')).to.deep.equal([['Ann']])
    expect(await rows("SELECT (SELECT max(pages) FROM books WHERE author = authors.id AND name = 'Ann') FROM authors ORDER BY id")).to.deep.equal([[300], [null], [null]])
  })

  it('runs an uncorrelated subquery once, in IN, in FROM and as a value', async () => {
    const before = h.calls.list ?? 0
    expect(await rows('SELECT name FROM authors WHERE id IN (SELECT author FROM books) ORDER BY name')).to.deep.equal([['Ann'], ['Bob']])
    // Two listings: the books once for the subquery, the authors once (not once per author).
    expect((h.calls.list ?? 0) - before).to.be.at.most(2)
    expect(await rows('SELECT t.author, t.total FROM (SELECT author, sum(pages) AS total FROM books GROUP BY author) t ORDER BY t.author')).to.deep.equal([
      ['1', '400'],
      ['2', '50'],
    ])
    expect(await rows('SELECT (SELECT min(pages) FROM books) + 1 AS x')).to.deep.equal([[51]])
  })

  it('answers a subquery that returns several rows where one value is expected with 21000, and the connection stays usable', async () => {
    const err = await sqlError(c.query('SELECT (SELECT pages FROM books) AS p'))
    expect(err.code).to.equal('21000')
    expect(err.message).to.equal('more than one row returned by a subquery used as an expression')
    // LATERAL over schemaless tables: `author` exists only in books, `a.id` is the outer row's.
    expect(await rows('SELECT a.name, b.pages FROM authors a, LATERAL (SELECT max(pages) AS pages FROM books WHERE author = a.id) b ORDER BY a.name')).to.deep.equal([
      ['Ann', 300],
      ['Bob', 50],
      ['Cid', null],
    ])
    expect(await rows('SELECT a.name, b.id FROM authors a LEFT JOIN LATERAL (SELECT id FROM books WHERE author = a.id AND pages > 60) b ON true ORDER BY a.name, b.id')).to.deep.equal([
      ['Ann', '10'],
      ['Ann', '11'],
      ['Bob', null],
      ['Cid', null],
    ])
    const correlatedUnion = await sqlError(c.query('SELECT 1 FROM authors a WHERE a.id IN (SELECT a.id UNION SELECT 2)'))
    expect(correlatedUnion.code).to.equal('0A000')
    expect(correlatedUnion.detail).to.equal('a UNION subquery that refers to the enclosing query')
    // A WITH query in FROM or as a UNION arm is refused, never answered as an empty row.
    for (const sql of ['SELECT * FROM (WITH x AS (SELECT 1 AS a) SELECT a FROM x) t', 'SELECT 1 UNION (WITH x AS (SELECT 2 AS a) SELECT a FROM x)']) {
      const e = await sqlError(c.query(sql))
      expect(e.code, sql).to.equal('0A000')
      expect(e.detail, sql).to.equal('WITH in a subquery')
    }
    expect(await rows('SELECT count(*) FROM authors')).to.deep.equal([['3']])
  })
})
