import {expect} from 'chai'

import {normalize, parseSql} from '../../src/query/parse.js'

describe('svc SQL: literal lifting and the parse cache', () => {
  it('lifts numbers and strings into parameters after the query\'s own', () => {
    expect(normalize("SELECT a FROM t WHERE id = 42 AND name = 'O''Brien' AND x = $1")).to.deep.equal({
      text: 'SELECT a FROM t WHERE id = $2 AND name = $3 AND x = $1',
      values: [42, "O'Brien"],
    })
  })

  it('keeps ORDER BY / GROUP BY positions, type modifiers, typed literals and identifiers literal', () => {
    const n = normalize("SELECT a1, count(*) FROM t2 WHERE d > date '2020-01-01' AND v = 'x'::varchar(10) GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 5")
    expect(n?.text).to.equal("SELECT a1, count(*) FROM t2 WHERE d > date '2020-01-01' AND v = $1::varchar(10) GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT $2")
    expect(n?.values).to.deep.equal(['x', 5])
  })

  it('leaves statements it does not model alone', () => {
    expect(normalize('CREATE TABLE t (id int)')).to.equal(undefined)
    expect(normalize("SELECT E'a\\nb'")).to.equal(undefined)
    expect(normalize('SELECT $$x$$')).to.equal(undefined)
    expect(normalize('SELECT a FROM t')).to.equal(undefined)
  })

  it('parses two queries of one shape once and gives each its own values', async () => {
    const a = await parseSql('SELECT abalance FROM accounts WHERE id = 1')
    const b = await parseSql('SELECT abalance FROM accounts WHERE id = 2')
    expect(a.statements).to.equal(b.statements)
    expect(a.lifted).to.deep.equal([1])
    expect(b.lifted).to.deep.equal([2])
  })

  it('reports a syntax error with SQLSTATE 42601 and the offending token', async () => {
    try {
      await parseSql('SELEC 1')
      expect.fail('expected a syntax error')
    } catch (error) {
      expect((error as {code: string}).code).to.equal('42601')
      expect((error as Error).message).to.match(/^syntax error/)
    }
  })
})
