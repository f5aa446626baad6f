import {expect} from 'chai'
import {execFile} from 'node:child_process'
import {connect} from 'node:net'

import pg from 'pg'

import {type Harness, sqlError, startHarness} from '../redis/harness.js'

const PASSWORD = 'svc-secret'


function psql(port: number, args: string[], password = PASSWORD, env: Record<string, string> = {}): Promise<{code: number; stderr: string; stdout: string}> {
  return new Promise((resolve) => {
    execFile(
      'psql',
      ['-h', '127.0.0.1', '-p', String(port), '-U', 'svc', '-d', 'svc', '-X', '-v', 'ON_ERROR_STOP=0', ...args],
      {env: {...process.env, PGCONNECT_TIMEOUT: '5', PGPASSWORD: password, PGSSLMODE: 'prefer', ...env}, timeout: 20_000},
      (err, stdout, stderr) => resolve({code: err ? ((err as {code?: number}).code ?? 1) : 0, stderr, stdout}),
    )
  })
}

describe('svc PostgreSQL protocol', function () {
  this.timeout(30_000)
  let h: Harness
  let c: pg.Client
  let port: number

  const client = async (password = PASSWORD) => {
    const cl = new pg.Client({database: 'svc', host: '127.0.0.1', password, port, user: 'svc'})
    await cl.connect()
    return cl
  }

  before(async () => {
    h = await startHarness({redis: false})
    port = h.pg!.port
    c = await client()
  })

  after(async () => {
    await c?.end().catch(() => undefined)
    await h?.close()
  })

  it('authenticates with SCRAM-SHA-256 and refuses a wrong password; the server stays up', async () => {
    const bad = await sqlError(client('wrong'))
    expect(bad.code).to.equal('28P01')
    expect(bad.message).to.equal('password authentication failed for user "svc"')
    const wrongUser = new pg.Client({host: '127.0.0.1', password: PASSWORD, port, user: 'someone'})
    expect((await sqlError(wrongUser.connect())).code).to.equal('28P01')
    expect((await c.query('SELECT 1 AS one')).rows).to.deep.equal([{one: 1}])
  })

  it('creates a table, inserts with parameters and RETURNING, reads typed values back', async () => {
    await c.query('CREATE TABLE people (id int PRIMARY KEY, name text NOT NULL, age int, score float8, active boolean, tags jsonb)')
    const ins = await c.query('INSERT INTO people (id, name, age, score, active, tags) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id, name, age', [
      1,
      'Ann',
      30,
      1.5,
      true,
      JSON.stringify({team: 'blue'}),
    ])
    expect(ins.command).to.equal('INSERT')
    expect(ins.rowCount).to.equal(1)
    expect(ins.rows).to.deep.equal([{age: 30, id: 1, name: 'Ann'}])
    await c.query("INSERT INTO people (id, name, age, score, active) VALUES (2, 'Bob', 25, 2.25, false), (3, 'Cid', 41, null, true)")
    const one = await c.query('SELECT * FROM people WHERE id = $1', [1])
    expect(one.rows).to.deep.equal([{active: true, age: 30, id: 1, name: 'Ann', score: 1.5, tags: {team: 'blue'}}])
    expect(one.fields.map((f) => [f.name, f.dataTypeID])).to.deep.equal([
      ['id', 23],
      ['name', 25],
      ['age', 23],
      ['score', 701],
      ['active', 16],
      ['tags', 3802],
    ])
    // The row is one document in the engine, one commit in Git.
    expect(await h.engine.get('people:1')).to.deep.equal({active: true, age: 30, id: 'people:1', name: 'Ann', score: 1.5, tags: {team: 'blue'}})
  })

  it('looks rows up by id through the engine without listing the table', async () => {
    const before = {get: h.calls.get ?? 0, getMany: h.calls.getMany ?? 0, getRaw: h.calls.getRaw ?? 0, list: h.calls.list ?? 0}
    const r = await c.query('SELECT name FROM people WHERE id = $1', [2])
    expect(r.rows).to.deep.equal([{name: 'Bob'}])
    const r2 = await c.query('SELECT name FROM people WHERE id IN (1, 3) ORDER BY name')
    expect(r2.rows.map((x) => x.name)).to.deep.equal(['Ann', 'Cid'])
    const r3 = await c.query("SELECT name FROM people WHERE id = 99 AND name = 'x'")
    expect(r3.rowCount).to.equal(0)
    expect(h.calls.list ?? 0).to.equal(before.list)
    expect((h.calls.get ?? 0) + (h.calls.getMany ?? 0) + (h.calls.getRaw ?? 0)).to.be.greaterThan(before.get + before.getMany + before.getRaw)
    const plan = async (sql: string, values: unknown[] = []) => (await c.query(sql, values)).rows.map((r) => r['QUERY PLAN']).join('\n')
    expect(await plan('EXPLAIN SELECT name FROM people WHERE id = $1', [2])).to.include('Id Lookup on people  (engine get, 1 key)')
    expect(await plan("EXPLAIN SELECT name FROM people WHERE name = 'Ann'")).to.include('Table Scan on people')
    expect(await plan("EXPLAIN SELECT name FROM people WHERE name = 'Ann' LIMIT 1")).to.include('(stops at the LIMIT)')
  })

  it('a filtered LIMIT query without ORDER BY stops reading the table early', async () => {
    await c.query('CREATE TABLE many (id int, n int)')
    const values = Array.from({length: 600}, (_, i) => `(${i}, ${i % 10})`).join(', ')
    await c.query(`INSERT INTO many (id, n) VALUES ${values}`)
    const before = h.calls.list ?? 0
    const r = await c.query('SELECT id FROM many WHERE n = 3 LIMIT 5')
    expect(r.rowCount).to.equal(5)
    expect((h.calls.list ?? 0) - before).to.equal(1)
    const all = await c.query('SELECT count(*) AS n FROM many WHERE n = 3')
    expect(all.rows[0].n).to.equal('60')
    // id LIKE 'prefix%' lists only the ids with that prefix.
    const plan = (await c.query("EXPLAIN SELECT count(*) FROM many WHERE id LIKE '5%'")).rows.map((r) => r['QUERY PLAN']).join('\n')
    expect(plan).to.include('Id Prefix Scan on many')
    const pref = await c.query("SELECT count(*) AS n FROM many WHERE id LIKE '5%'")
    expect(pref.rows[0].n).to.equal('111')
  })

  it('prepared statements run many times with different parameter types', async () => {
    const q = {name: 'by-age', text: 'SELECT name FROM people WHERE age >= $1 AND active = $2 ORDER BY age'}
    expect((await c.query({...q, values: [26, true]})).rows.map((r) => r.name)).to.deep.equal(['Ann', 'Cid'])
    expect((await c.query({...q, values: [0, false]})).rows.map((r) => r.name)).to.deep.equal(['Bob'])
    expect((await c.query({...q, values: [100, true]})).rows).to.deep.equal([])
    const nulls = await c.query('SELECT name FROM people WHERE score IS NULL')
    expect(nulls.rows).to.deep.equal([{name: 'Cid'}])
    const like = await c.query('SELECT name FROM people WHERE name LIKE $1', ['A%'])
    expect(like.rows).to.deep.equal([{name: 'Ann'}])
  })

  it('ORDER BY, LIMIT/OFFSET, GROUP BY with aggregates, HAVING, DISTINCT', async () => {
    const page = await c.query('SELECT id FROM people ORDER BY age DESC LIMIT 2 OFFSET 1')
    expect(page.rows.map((r) => r.id)).to.deep.equal([1, 2])
    await c.query('CREATE TABLE orders (id text, person int, amount float8, item text)')
    await c.query(
      "INSERT INTO orders (id, person, amount, item) VALUES ('o1', 1, 10, 'pen'), ('o2', 1, 5.5, 'ink'), ('o3', 2, 7, 'pen'), ('o4', 9, 1, 'cap')",
    )
    const g = await c.query('SELECT person, count(*) AS n, sum(amount) AS total FROM orders GROUP BY person ORDER BY person')
    expect(g.rows).to.deep.equal([
      {n: '2', person: 1, total: 15.5},
      {n: '1', person: 2, total: 7},
      {n: '1', person: 9, total: 1},
    ])
    const hv = await c.query('SELECT item, count(*) AS n FROM orders GROUP BY item HAVING count(*) > 1')
    expect(hv.rows).to.deep.equal([{item: 'pen', n: '2'}])
    const all = await c.query('SELECT count(*) AS n, max(amount) AS top, avg(amount) AS mean FROM orders')
    expect(all.rows).to.deep.equal([{mean: 5.875, n: '4', top: 10}])
    const d = await c.query('SELECT DISTINCT item FROM orders ORDER BY item')
    expect(d.rows.map((r) => r.item)).to.deep.equal(['cap', 'ink', 'pen'])
  })

  it('INNER JOIN and LEFT JOIN', async () => {
    const inner = await c.query('SELECT o.id, p.name FROM orders o INNER JOIN people p ON p.id = o.person ORDER BY o.id')
    expect(inner.rows).to.deep.equal([
      {id: 'o1', name: 'Ann'},
      {id: 'o2', name: 'Ann'},
      {id: 'o3', name: 'Bob'},
    ])
    const left = await c.query('SELECT p.name, o.item FROM people p LEFT JOIN orders o ON o.person = p.id ORDER BY p.name, o.item')
    expect(left.rows).to.deep.equal([
      {item: 'ink', name: 'Ann'},
      {item: 'pen', name: 'Ann'},
      {item: 'pen', name: 'Bob'},
      {item: null, name: 'Cid'},
    ])
  })

  it('UPDATE and DELETE report counts and RETURNING rows', async () => {
    const u = await c.query('UPDATE people SET age = age + 1 WHERE active = true RETURNING id, age')
    expect(u.command).to.equal('UPDATE')
    expect(u.rowCount).to.equal(2)
    expect(u.rows.sort((a, b) => a.id - b.id)).to.deep.equal([
      {age: 31, id: 1},
      {age: 42, id: 3},
    ])
    const d = await c.query("DELETE FROM orders WHERE item = 'cap'")
    expect(d.command).to.equal('DELETE')
    expect(d.rowCount).to.equal(1)
    expect(await h.engine.get('orders:o4')).to.equal(undefined)
  })

  it('BEGIN ... COMMIT is one commit; ROLLBACK discards; an error aborts the transaction', async () => {
    await c.query('BEGIN')
    await c.query("INSERT INTO orders (id, person, amount, item) VALUES ('t1', 1, 1, 'a')")
    await c.query("INSERT INTO orders (id, person, amount, item) VALUES ('t2', 2, 2, 'b')")
    // Read-your-writes inside the transaction, invisible to others until COMMIT.
    expect((await c.query("SELECT count(*) AS n FROM orders WHERE id IN ('t1', 't2')")).rows[0].n).to.equal('2')
    const other = await client()
    try {
      expect((await other.query("SELECT id FROM orders WHERE id = 't1'")).rowCount).to.equal(0)
      await c.query('COMMIT')
      expect((await other.query("SELECT id FROM orders WHERE id = 't1'")).rowCount).to.equal(1)
    } finally {
      await other.end()
    }
    await h.engine.flush()
    const h1 = await h.engine.history('orders:t1')
    const h2 = await h.engine.history('orders:t2')
    expect(h1.versions[0].commit).to.equal(h2.versions[0].commit)

    await c.query('BEGIN')
    await c.query("INSERT INTO orders (id, person, amount, item) VALUES ('t3', 1, 1, 'a')")
    await c.query('ROLLBACK')
    expect((await c.query("SELECT id FROM orders WHERE id = 't3'")).rowCount).to.equal(0)

    await c.query('BEGIN')
    expect((await sqlError(c.query('SELECT * FROM nope'))).code).to.equal('42P01')
    expect((await sqlError(c.query('SELECT 1'))).code).to.equal('25P02')
    const end = await c.query('COMMIT')
    expect(end.command).to.equal('ROLLBACK')
    expect((await c.query('SELECT 1 AS ok')).rows).to.deep.equal([{ok: 1}])
  })

  it('answers bad SQL with SQLSTATE codes and keeps the connection usable', async () => {
    expect((await sqlError(c.query('SELEC * FROM people'))).code).to.equal('42601')
    expect((await sqlError(c.query('SELECT * FROM missing_table'))).message).to.equal('relation "missing_table" does not exist')
    expect((await sqlError(c.query("INSERT INTO people (id, name, age) VALUES (7, 'x', 'not a number')"))).code).to.equal('22P02')
    expect((await sqlError(c.query('SELECT * FROM people WHERE age > $1', ['abc']))).code).to.equal('22P02')
    expect((await sqlError(c.query("INSERT INTO people (id, name) VALUES (1, 'dup')"))).code).to.equal('23505')
    expect((await sqlError(c.query('INSERT INTO people (id, age) VALUES (8, 1)'))).code).to.equal('23502')
    expect((await sqlError(c.query('SELECT nope FROM people'))).code).to.equal('42703')
    expect((await sqlError(c.query('SELECT 1/0'))).code).to.equal('22012')
    for (const sql of [
      'WITH x AS (SELECT 1) SELECT * FROM x',
      'SELECT * FROM people p, LATERAL (SELECT p.id UNION SELECT 2) x',
      'CREATE TABLE clock (id int PRIMARY KEY, t time)',
      "SELECT '10:00'::timetz",
      "SELECT to_char(1.5, '9.9EEEE')",
      'SELECT name, row_number() OVER () FROM people',
      'SELECT * FROM people p RIGHT JOIN orders o ON o.person = p.id',
      'CREATE UNIQUE INDEX ON people (name)',
      'ALTER TABLE people ADD COLUMN x int',
      'COPY people FROM STDIN',
      'GRANT SELECT ON people TO someone',
      'VACUUM people',
      'CREATE FUNCTION f() RETURNS int AS $$ SELECT 1 $$ LANGUAGE sql',
    ]) {
      const e = await sqlError(c.query(sql))
      expect(e.code, sql).to.equal('0A000')
      expect(e.message, sql).to.equal('Unsupported SQL statement')
    }
    expect((await sqlError(c.query('CREATE TABLE broken (id int,,)'))).code).to.equal('42601')
    expect((await c.query('SELECT count(*) AS n FROM people')).rows).to.deep.equal([{n: '3'}])
    // What connection poolers send between clients.
    await c.query('SET application_name = pooled')
    expect((await c.query('DISCARD ALL')).command).to.equal('DISCARD')
    expect((await c.query('SHOW application_name')).rows[0].application_name).to.equal('')
  })

  it('full-text match, document history and a document as of a commit', async () => {
    await c.query('CREATE TABLE notes (id text, body text)')
    await c.query("INSERT INTO notes (id, body) VALUES ('n1', 'the quick brown fox'), ('n2', 'lazy dog'), ('n3', 'quick thinking')")
    let rows: Array<{id: string}> = []
    for (let i = 0; i < 200; i++) {
      rows = (await c.query("SELECT id FROM notes WHERE body @@ to_tsquery('quick') ORDER BY id")).rows
      if (rows.length === 2) break
      await new Promise((r) => setTimeout(r, 50))
    }
    expect(rows.map((r) => r.id)).to.deep.equal(['n1', 'n3'])
    await c.query("UPDATE notes SET body = 'edited' WHERE id = 'n2'")
    const hist = await c.query("SELECT commit, op, doc FROM history('notes:n2')")
    expect(hist.rows.map((r) => r.doc.body)).to.deep.equal(['edited', 'lazy dog'])
    const first = hist.rows[1].commit
    const asOf = await c.query('SELECT body FROM as_of($1, $2)', ['notes:n2', first])
    expect(asOf.rows).to.deep.equal([{body: 'lazy dog'}])
  })

  it('schemas are branches: CREATE SCHEMA branches off, qualified names and search_path choose it', async () => {
    await c.query('CREATE SCHEMA feature')
    await c.query("INSERT INTO feature.notes (id, body) VALUES ('f1', 'only on the branch')")
    expect((await c.query("SELECT id FROM notes WHERE id = 'f1'")).rowCount).to.equal(0)
    expect((await c.query("SELECT body FROM feature.notes WHERE id = 'f1'")).rows).to.deep.equal([{body: 'only on the branch'}])
    await c.query('SET search_path TO feature')
    expect((await c.query('SHOW search_path')).rows[0].search_path).to.equal('feature')
    expect((await c.query('SELECT current_schema() AS s')).rows[0].s).to.equal('feature')
    expect((await c.query("SELECT id FROM notes WHERE id = 'f1'")).rowCount).to.equal(1)
    await c.query('SET search_path TO public')
    const viaOptions = await psql(port, ['-A', '-t', '-c', "SELECT body FROM notes WHERE id = 'f1'"], PASSWORD, {PGOPTIONS: '-c search_path=feature'})
    expect(viaOptions.stdout.trim()).to.equal('only on the branch')
    expect((await sqlError(c.query('SET search_path TO nowhere'))).code).to.equal('3F000')
    expect((await sqlError(c.query('SELECT * FROM nowhere.notes'))).code).to.equal('3F000')
  })

  it('honours a cancel request for a running statement', async () => {
    const cl = (await client()) as pg.Client & {processID: number; secretKey: number}
    try {
      let settled = false
      const running = sqlError(cl.query('SELECT pg_sleep(10)')).finally(() => (settled = true))
      const started = Date.now()
      const cancel = () =>
        new Promise<void>((resolve, reject) => {
          const s = connect(port, '127.0.0.1', () => {
            const b = Buffer.alloc(16)
            b.writeInt32BE(16, 0)
            b.writeInt32BE(80_877_102, 4)
            b.writeInt32BE(cl.processID, 8)
            b.writeInt32BE(cl.secretKey, 12)
            s.end(b)
          })
          s.on('close', () => resolve())
          s.on('error', reject)
        })
      // A cancel that arrives before the statement started is ignored (as in PostgreSQL): retry.
      for (let i = 0; i < 40 && !settled; i++) {
        await new Promise((r) => setTimeout(r, 100))
        if (!settled) await cancel()
      }
      const e = await running
      expect(e.code).to.equal('57014')
      expect(Date.now() - started).to.be.lessThan(8000)
      expect((await cl.query('SELECT 2 AS two')).rows).to.deep.equal([{two: 2}])
    } finally {
      await cl.end()
    }
  })

  it('answers SSLRequest with N, so psql with sslmode=prefer falls back to plain text', async () => {
    const answer = await new Promise<string>((resolve, reject) => {
      const s = connect(port, '127.0.0.1', () => {
        const b = Buffer.alloc(8)
        b.writeInt32BE(8, 0)
        b.writeInt32BE(80_877_103, 4)
        s.write(b)
      })
      s.once('data', (d) => {
        s.destroy()
        resolve(d.toString())
      })
      s.on('error', reject)
    })
    expect(answer).to.equal('N')
    const r = await psql(port, ['-A', '-t', '-c', 'SELECT 40 + 2'])
    expect(r.stdout.trim()).to.equal('42')
  })

  it('psql: \\dt lists tables, \\d describes one, errors print with SQLSTATE', async () => {
    const dt = await psql(port, ['-c', '\\dt'])
    expect(dt.stdout).to.match(/public \| people +\| table \| svc/)
    expect(dt.stdout).to.match(/public \| orders +\| table \| svc/)
    const d = await psql(port, ['-c', '\\d people'])
    expect(d.stdout).to.include('Table "public.people"')
    expect(d.stdout).to.match(/ id +\| integer +\| +\| not null \|/)
    expect(d.stdout).to.match(/ name +\| text +\|/)
    expect(d.stdout).to.include('"people_pkey" PRIMARY KEY, btree (id)')
    const dl = await psql(port, ['-c', '\\l'])
    expect(dl.stdout).to.match(/ svc +\| svc +\| UTF8/)
    const missing = await psql(port, ['-c', '\\d nosuch'])
    expect(missing.stderr).to.include('Did not find any relation named "nosuch"')
    const bad = await psql(port, ['-v', 'VERBOSITY=verbose', '-c', 'WITH x AS (SELECT 1) SELECT * FROM x', '-c', 'SELECT name FROM people WHERE id = 2'])
    expect(bad.stderr).to.include('ERROR:  0A000: Unsupported SQL statement')
    expect(bad.stdout).to.include('Bob')
    const wrong = await psql(port, ['-c', 'SELECT 1'], 'bad-password')
    expect(wrong.code).to.not.equal(0)
    expect(wrong.stderr).to.include('password authentication failed for user "svc"')
  })

  it('takes a large parameter value (512 KB) through the extended protocol', async () => {
    const big = 'x'.repeat(512 * 1024)
    await c.query('INSERT INTO notes (id, body) VALUES ($1, $2)', ['big', big])
    const r = await c.query('SELECT length(body) AS n FROM notes WHERE id = $1', ['big'])
    expect(r.rows).to.deep.equal([{n: big.length}])
  })

  it('a write through SQL is visible to the engine (and so to REST and Redis) at once', async () => {
    await c.query("INSERT INTO notes (id, body) VALUES ('x1', 'cross protocol')")
    expect(await h.engine.get('notes:x1')).to.deep.equal({body: 'cross protocol', id: 'notes:x1'})
    await h.engine.put({body: 'from rest', id: 'notes:x2'})
    expect((await c.query("SELECT body FROM notes WHERE id = 'x2'")).rows).to.deep.equal([{body: 'from rest'}])
  })

  it('upserts with ON CONFLICT, inserts from a SELECT, and answers information_schema queries', async () => {
    await c.query("INSERT INTO people (id, name, age) VALUES (2, 'Bobby', 1) ON CONFLICT (id) DO UPDATE SET name = excluded.name")
    expect((await c.query('SELECT name, age FROM people WHERE id = 2')).rows).to.deep.equal([{age: 25, name: 'Bobby'}])
    const nothing = await c.query("INSERT INTO people (id, name) VALUES (2, 'ignored') ON CONFLICT DO NOTHING")
    expect(nothing.rowCount).to.equal(0)
    await c.query('CREATE TABLE names (id int, name text)')
    const copied = await c.query('INSERT INTO names (id, name) SELECT id, name FROM people WHERE age > 30')
    expect(copied.rowCount).to.equal(2)
    const tables = await c.query("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name")
    expect(tables.rows.map((r) => r.table_name)).to.include.members(['names', 'notes', 'people'])
    const cols = await c.query("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'names' ORDER BY ordinal_position")
    expect(cols.rows).to.deep.equal([
      {column_name: 'id', data_type: 'integer'},
      {column_name: 'name', data_type: 'text'},
    ])
  })

  it('TRUNCATE empties a table in one commit and keeps its definition', async () => {
    await c.query('CREATE TABLE scratch (id int, v text)')
    await c.query("INSERT INTO scratch (id, v) VALUES (1, 'a'), (2, 'b')")
    expect((await c.query('TRUNCATE scratch')).command).to.equal('TRUNCATE')
    expect((await c.query('SELECT count(*) AS n FROM scratch')).rows).to.deep.equal([{n: '0'}])
    await c.query("INSERT INTO scratch (id, v) VALUES (3, 'c')")
    expect((await c.query('SELECT id FROM scratch')).rows).to.deep.equal([{id: 3}])
  })

  it('a damaged _pg_schema entry answers XX001 naming it, never a TypeError; other tables keep working', async () => {
    await c.query('CREATE TABLE damaged (id int PRIMARY KEY, name text NOT NULL)')
    await c.query('CREATE TABLE intact (id int PRIMARY KEY, v text)')
    await c.query("INSERT INTO intact (id, v) VALUES (1, 'ok')")
    // What a raw write through another protocol did before reserved tables (issue 24).
    await h.engine.put({columns: 'garbage', id: '_pg_schema:damaged'}, {system: true})
    const e = await sqlError(c.query('SELECT * FROM damaged'))
    expect(e.code).to.equal('XX001')
    expect(e.message).to.include('_pg_schema:damaged').and.not.include('toLowerCase')
    expect((await sqlError(c.query("INSERT INTO damaged (id, name) VALUES (1, 'x')"))).code).to.equal('XX001')
    await h.engine.put({columns: [{name: 7, type: 'text'}], id: '_pg_schema:damaged'}, {system: true})
    expect((await sqlError(c.query('SELECT * FROM damaged'))).message).to.include('_pg_schema:damaged').and.include('column 1 has no name')
    expect((await c.query('SELECT v FROM intact WHERE id = 1')).rows).to.deep.equal([{v: 'ok'}])
    await h.engine.put({columns: [{name: 'id', notNull: true, type: 'int'}, {name: 'name', notNull: true, type: 'text'}], id: '_pg_schema:damaged'}, {system: true})
    expect((await c.query('SELECT * FROM damaged')).rows).to.deep.equal([])
  })

  it('integer arithmetic past 2^53 stays exact and past the 64-bit range is 22003, as PostgreSQL\'s bigint', async () => {
    expect((await c.query('SELECT 9007199254740993 + 1 AS n')).rows).to.deep.equal([{n: '9007199254740994'}])
    expect((await c.query('SELECT -9223372036854775807 - 1 AS n')).rows).to.deep.equal([{n: '-9223372036854775808'}])
    const over = await sqlError(c.query('SELECT 9223372036854775807 + 1'))
    expect(over.code).to.equal('22003')
    expect(over.message).to.equal('bigint out of range')
    expect((await sqlError(c.query('SELECT 4611686018427387904 * 2'))).code).to.equal('22003')
    expect((await c.query('SELECT 2 + 3 * 4 AS n')).rows).to.deep.equal([{n: 14}])
  })

  it('DROP TABLE removes the rows and the definition', async () => {
    await c.query('DROP TABLE orders')
    expect((await sqlError(c.query('SELECT * FROM orders'))).code).to.equal('42P01')
    await c.query('DROP TABLE IF EXISTS orders')
    expect((await sqlError(c.query('DROP TABLE orders'))).code).to.equal('42P01')
  })

  it('closes only the offending connection on a malformed message', async () => {
    const text = await new Promise<string>((resolve, reject) => {
      const s = connect(port, '127.0.0.1', () => {
        const b = Buffer.alloc(8)
        b.writeInt32BE(8, 0)
        b.writeInt32BE(12_345, 4)
        s.write(b)
      })
      let got = ''
      s.on('data', (d) => (got += d.toString('latin1')))
      s.on('close', () => resolve(got))
      s.on('error', reject)
    })
    expect(text).to.include('08P01')
    expect((await c.query('SELECT 3 AS three')).rows).to.deep.equal([{three: 3}])
  })
})

describe('svc PostgreSQL protocol shutdown', function () {
  this.timeout(30_000)

  it('close() lets a running statement finish and answers it, then ends the connection with 57P01', async () => {
    const h = await startHarness({redis: false})
    const cl = new pg.Client({host: '127.0.0.1', password: PASSWORD, port: h.pg!.port, user: 'svc'})
    cl.on('error', () => undefined)
    await cl.connect()
    const slow = cl.query('SELECT pg_sleep(1)')
    await new Promise((r) => setTimeout(r, 300))
    const closing = h.pg!.close()
    expect((await slow).rowCount).to.equal(1)
    await closing
    h.pg = undefined
    await h.close()
  })
})

describe('svc PostgreSQL protocol with md5 authentication', function () {
  this.timeout(30_000)
  let h: Harness

  before(async () => {
    h = await startHarness({auth: 'md5', redis: false})
  })

  after(async () => {
    await h?.close()
  })

  it('accepts the right password and refuses a wrong one', async () => {
    const ok = new pg.Client({host: '127.0.0.1', password: PASSWORD, port: h.pg!.port, user: 'svc'})
    await ok.connect()
    expect((await ok.query('SELECT 1 AS one')).rows).to.deep.equal([{one: 1}])
    await ok.end()
    const bad = new pg.Client({host: '127.0.0.1', password: 'nope', port: h.pg!.port, user: 'svc'})
    expect((await sqlError(bad.connect())).code).to.equal('28P01')
  })
})
