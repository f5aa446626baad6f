import {expect} from 'chai'

import type pg from 'pg'

import {type Harness, pgClient, startHarness} from '../redis/harness.js'

// Issue 24: a result of many rows is encoded in slices of the event loop, each written before the
// next, with text values encoded straight into their DataRow. What a client receives must be
// exactly what one piece would have been: every row, in order, values byte for byte.
describe('svc PostgreSQL: large results arrive whole and exact (node-postgres)', function () {
  this.timeout(60_000)
  let h: Harness
  let c: pg.Client
  let other: pg.Client
  const ROWS = 3000
  const nameOf = (i: number): null | string => (i % 7 === 0 ? null : `név ${i} — 東京 ${'ü'.repeat(i % 50)}`)

  before(async () => {
    h = await startHarness({redis: false})
    c = await pgClient(h)
    other = await pgClient(h)
    await c.query('CREATE TABLE wide (id int PRIMARY KEY, name text, score float8, ok boolean)')
    for (let start = 1; start <= ROWS; start += 500) {
      const values: string[] = []
      for (let i = start; i < start + 500; i++) {
        const name = nameOf(i)
        values.push(`(${i}, ${name === null ? 'NULL' : `'${name}'`}, ${i / 4}, ${i % 2 === 0})`)
      }
      await c.query(`INSERT INTO wide (id, name, score, ok) VALUES ${values.join(', ')}`)
    }
  })

  after(async () => {
    await c?.end().catch(() => undefined)
    await other?.end().catch(() => undefined)
    await h?.close()
  })

  const expected = Array.from({length: ROWS}, (_, k) => ({id: k + 1, name: nameOf(k + 1), ok: (k + 1) % 2 === 0, score: (k + 1) / 4}))

  it('sends a 3,000-row scan in text format with multi-byte text and NULLs exactly, while another connection is answered', async () => {
    const [all, one] = await Promise.all([c.query('SELECT id, name, score, ok FROM wide ORDER BY id'), other.query('SELECT name FROM wide WHERE id = 3')])
    expect(all.rowCount).to.equal(ROWS)
    expect(all.rows).to.deep.equal(expected)
    expect(one.rows).to.deep.equal([{name: nameOf(3)}])
    // The extended protocol (Parse/Bind/Execute) sends its rows through the same slices.
    const bound = await c.query('SELECT id, name, score, ok FROM wide WHERE id > $1 ORDER BY id', [0])
    expect(bound.rows).to.deep.equal(expected)
  })
})
