/** Issue 24 on REST, through the built `bin/run.js` and curl: svc stores exactly what it acknowledged. */
import {expect} from 'chai'
import {execFile} from 'node:child_process'

import {startServer, type Started} from './helpers/cli.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'

interface Answer {
  body: string
  json: unknown
  status: number
}

/** One request through curl; the body is sent as given, byte for byte. */
function curl(method: string, url: string, body?: string): Promise<Answer> {
  const args = ['-sS', '-X', method, '-H', 'content-type: application/json', '-w', '\n%{http_code}', url]
  if (body !== undefined) args.push('--data-binary', '@-')
  return new Promise((resolve, reject) => {
    const child = execFile('curl', args, {maxBuffer: 16 * 1024 * 1024}, (error, stdout) => {
      if (error) {
        reject(error)
        return
      }
      const nl = stdout.lastIndexOf('\n')
      const text = stdout.slice(0, nl)
      let json: unknown
      try {
        json = JSON.parse(text)
      } catch {
        json = undefined
      }
      resolve({body: text, json, status: Number(stdout.slice(nl + 1))})
    })
    child.stdin?.end(body ?? '')
  })
}

const errorOf = (a: Answer): {code: string; message: string} => (a.json as {error: {code: string; message: string}}).error

describe('svc REST through the built CLI: data exactly as written (issue 24)', function () {
  this.timeout(60_000)
  let server: Started
  let base: string

  before(async () => {
    server = await startServer(['--data-dir', tempDir(), '--http-port', '0', '--disable-redis', '--disable-sql'])
    base = `http://127.0.0.1:${server.ready.rest}/api/v1`
  })
  after(async () => {
    server.child.kill('SIGTERM')
    await server.exited
    cleanupTempDirs()
  })

  it('refuses numbers a 64-bit float cannot hold as written, naming the field, and stores nothing', async () => {
    const cases: Array<[string, RegExp]> = [
      ['{"n":12345678901234567890,"m":9007199254740993,"f":1e400}', /field n holds 12345678901234567890, which would read back as 12345678901234567000/],
      ['{"ok":1,"m":9007199254740993}', /field m holds 9007199254740993, which would read back as 9007199254740992/],
      ['{"deep":{"list":[1,2,1e400]}}', /field deep\.list\[2\] holds 1e400, which is beyond the range of a 64-bit float/],
      ['{"tiny":1e-400}', /field tiny .*too small/],
      ['{"a b":0.30000000000000001}', /field \["a b"\] holds 0\.30000000000000001, which would read back as 0\.3/],
    ]
    for (const [body, message] of cases) {
      const r = await curl('PUT', `${base}/documents/t:num`, body)
      expect(r.status, body).to.equal(400)
      expect(errorOf(r).code).to.equal('inexact_number')
      expect(errorOf(r).message).to.match(message).and.include('send it as a string')
    }
    expect((await curl('GET', `${base}/documents/t:num`)).status).to.equal(404)
  })

  it('gives back exactly the numbers it accepted through GET, search and history', async () => {
    const body = '{"max":9007199254740992,"min":-9007199254740992,"big":12345678901234567000,"x":0.1,"e":1.5e-7,"neg":-0.25,"id64":"12345678901234567890","word":"numbers"}'
    expect((await curl('PUT', `${base}/documents/t:exact`, body)).status).to.equal(200)
    const expected = JSON.parse(body) as Record<string, unknown>
    const got = await curl('GET', `${base}/documents/t:exact`)
    // The literals as sent (JSON.stringify writes each double's shortest form, which is the literal here).
    for (const literal of ['9007199254740992', '-9007199254740992', '12345678901234567000', '0.1', '1.5e-7', '-0.25', '"12345678901234567890"']) {
      expect(got.body).to.include(literal)
    }
    expect(got.json).to.deep.equal({id: 't:exact', ...expected})
    const search = (await curl('GET', `${base}/search?q=numbers`)).json as {hits: Array<{doc: unknown}>}
    expect(search.hits.map((h) => h.doc)).to.deep.equal([{id: 't:exact', ...expected}])
    const history = (await curl('GET', `${base}/documents/t:exact/history`)).json as {versions: Array<{doc: unknown}>}
    expect(history.versions.map((v) => v.doc)).to.deep.equal([{id: 't:exact', ...expected}])
  })

  it('answers deep nesting with 400 and the limit, not 500, and keeps serving', async () => {
    const deep = `{"a":${'['.repeat(5000)}${']'.repeat(5000)}}`
    expect(deep.length).to.be.greaterThan(10_000)
    const r = await curl('PUT', `${base}/documents/t:deep`, deep)
    expect(r.status).to.equal(400)
    expect(errorOf(r).code).to.equal('too_deep')
    expect(errorOf(r).message).to.include('at most 128 levels')
    expect((await curl('GET', `${base}/documents/t:deep`)).status).to.equal(404)
    const ok = `{"a":${'['.repeat(100)}1${']'.repeat(100)}}`
    expect((await curl('PUT', `${base}/documents/t:deep`, ok)).status).to.equal(200)
    expect((await curl('GET', `${base}/documents/t:deep`)).json).to.deep.equal({id: 't:deep', ...(JSON.parse(ok) as object)})
  })

  it("refuses writes to svc's own tables and branch names Git would refuse, with 400", async () => {
    const r = await curl('PUT', `${base}/documents/_pg_schema:people`, '{"columns":"garbage"}')
    expect(r.status).to.equal(400)
    expect(errorOf(r)).to.deep.equal({code: 'reserved', message: `table "_pg_schema" is reserved for svc's own data`})
    expect((await curl('DELETE', `${base}/documents/_pg_schema:people`)).status).to.equal(400)
    for (const name of ['x.', 'x.lock', 'HEAD', 'a..b', '-x', 'a b', 'a~1']) {
      const b = await curl('POST', `${base}/branches`, JSON.stringify({name}))
      expect(b.status, name).to.equal(400)
      expect(errorOf(b).code, name).to.equal('invalid_argument')
      expect(errorOf(b).message, name).to.include(JSON.stringify(name))
    }
    // Writes keep working on every branch.
    expect((await curl('PUT', `${base}/documents/t:after`, '{"ok":true}')).status).to.equal(200)
    expect((await curl('POST', `${base}/branches`, '{"name":"feature-1"}')).status).to.equal(201)
    expect((await curl('PUT', `${base}/documents/t:after?branch=feature-1`, '{"ok":1}')).status).to.equal(200)
  })

  it('POST /api/v1/query runs SQL with parameters and answers {columns, rows}; errors carry their SQLSTATE', async () => {
    const q = (body: unknown): Promise<Answer> => curl('POST', `${base}/query`, JSON.stringify(body))
    let r = await q({params: [1, 'Ann', 36], sql: 'INSERT INTO people (id, name, age) VALUES ($1, $2, $3)'})
    expect(r.status, r.body).to.equal(200)
    expect(r.json).to.deep.include({command: 'INSERT 0 1', rows: []})
    r = await q({params: [30], sql: 'SELECT name, age FROM people WHERE age > $1'})
    expect(r.json).to.deep.equal({columns: ['name', 'age'], command: 'SELECT 1', rows: [['Ann', 36]]})
    // The same row through the document API.
    expect((await curl('GET', `${base}/documents/people:1`)).json).to.deep.equal({age: 36, id: 'people:1', name: 'Ann'})

    const errors: Array<[unknown, number, string]> = [
      [{sql: 'SELEC 1'}, 400, '42601'],
      [{sql: 'SELECT * FROM no_such_table'}, 404, '42P01'],
      [{sql: 'SELECT 1/0'}, 400, '22012'],
      [{sql: `INSERT INTO _pg_schema (id, columns) VALUES ('x', 'garbage')`}, 400, '42501'],
    ]
    for (const [body, status, sqlstate] of errors) {
      const e = await q(body)
      expect(e.status, e.body).to.equal(status)
      expect(errorOf(e)).to.include({code: 'sql_error', sqlstate})
      expect(errorOf(e).message).to.be.a('string').and.not.empty
    }
    // Several statements are one transaction: a failure keeps none of them.
    const multi = await q({sql: `INSERT INTO people (id, name) VALUES (2, 'Bob'); SELECT 1/0`})
    expect(multi.status).to.equal(400)
    expect((await curl('GET', `${base}/documents/people:2`)).status).to.equal(404)
    for (const bad of [{}, {sql: ''}, {params: 'x', sql: 'SELECT 1'}, {branch: 7, sql: 'SELECT 1'}]) {
      const e = await q(bad)
      expect(e.status, JSON.stringify(bad)).to.equal(400)
      expect(errorOf(e).code).to.equal('invalid_argument')
    }
    // A branch is the schema the statement runs in.
    expect((await curl('POST', `${base}/branches`, '{"name":"sql-branch"}')).status).to.equal(201)
    expect((await q({branch: 'sql-branch', params: [3, 'Cy'], sql: 'INSERT INTO people (id, name) VALUES ($1, $2)'})).status).to.equal(200)
    expect((await q({branch: 'sql-branch', sql: 'SELECT count(*) AS n FROM people'})).json).to.deep.include({rows: [[2]]})
    expect((await q({sql: 'SELECT count(*) AS n FROM people'})).json).to.deep.include({columns: ['n'], rows: [[1]]})
  })
})
