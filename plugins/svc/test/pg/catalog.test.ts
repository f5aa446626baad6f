/**
 * The system catalog through real clients: psql 15's backslash commands (each sends catalog SQL
 * that svc parses and runs with its ordinary executor over pg_catalog tables), hand-written
 * catalog joins, and information_schema through node-postgres' extended protocol.
 */
import {expect} from 'chai'
import {execFile} from 'node:child_process'

import pg from 'pg'

import {rewriteForParser} from '../../src/query/catalog.js'
import {type Harness, sqlError, startHarness} from '../redis/harness.js'

function psql(port: number, args: string[]): Promise<{code: number; stderr: string; stdout: string}> {
  return new Promise((resolve) => {
    execFile(
      'psql',
      ['-h', '127.0.0.1', '-p', String(port), '-U', 'svc', '-d', 'svc', '-X', '-v', 'ON_ERROR_STOP=1', ...args],
      {env: {...process.env, PGPASSWORD: 'svc-secret'}, timeout: 20_000},
      (err, stdout, stderr) => resolve({code: err ? ((err as {code?: number}).code ?? 1) : 0, stderr, stdout}),
    )
  })
}

describe('svc catalog: psql backslash commands and catalog queries run through the SQL engine', function () {
  this.timeout(60_000)
  let h: Harness
  let c: pg.Client
  let port: number

  before(async () => {
    h = await startHarness({redis: false})
    port = h.pg!.port
    c = new pg.Client({database: 'svc', host: '127.0.0.1', password: 'svc-secret', port, user: 'svc'})
    await c.connect()
    await c.query('CREATE TABLE people (id int PRIMARY KEY, name text NOT NULL, age int)')
    await c.query("INSERT INTO people VALUES (1, 'Ann', 30), (2, 'Bob', 25)")
    await c.query('CREATE INDEX people_age ON people (age)')
    await c.query('CREATE TABLE notes (id text, body text NOT NULL, pinned boolean)')
    await c.query('CREATE SCHEMA feature')
    await c.query('CREATE TABLE feature.drafts (id int, title text NOT NULL)')
  })

  after(async () => {
    await c?.end().catch(() => undefined)
    await h?.close()
  })

  it('\\dt lists the tables of the current schema, \\dt feature.* those of the branch', async () => {
    const dt = await psql(port, ['-c', '\\dt'])
    expect(dt.code).to.equal(0)
    expect(dt.stdout).to.match(/ public \| notes +\| table \| svc\n public \| people +\| table \| svc\n\(2 rows\)/)
    expect(dt.stdout).to.not.include('drafts')
    const branch = await psql(port, ['-c', '\\dt feature.*'])
    expect(branch.stdout).to.match(/ feature \| drafts +\| table \| svc/)
    expect(branch.stdout).to.not.match(/ public \|/)
    const none = await psql(port, ['-c', '\\dt nothing_like_this'])
    expect(none.stderr).to.include('Did not find any relation named "nothing_like_this"')
  })

  it('\\d name shows columns, NOT NULL, the primary key and secondary indexes; \\d+ the storage', async () => {
    const d = await psql(port, ['-c', '\\d people'])
    expect(d.stdout).to.include('Table "public.people"')
    expect(d.stdout).to.match(/ id +\| integer +\| +\| not null \|/)
    expect(d.stdout).to.match(/ name +\| text +\| +\| not null \|/)
    expect(d.stdout).to.match(/ age +\| integer +\| +\| +\|/)
    expect(d.stdout).to.include('"people_pkey" PRIMARY KEY, btree (id)')
    expect(d.stdout).to.include('"people_age" btree (age)')
    const plus = await psql(port, ['-c', '\\d+ notes'])
    expect(plus.stdout).to.match(/ body +\| text +\| +\| not null \| +\| extended \|/)
    expect(plus.stdout).to.match(/ pinned +\| boolean +\| +\| +\| +\| plain +\|/)
    const other = await psql(port, ['-c', '\\d feature.drafts'])
    expect(other.stdout).to.include('Table "feature.drafts"')
    expect(other.stdout).to.match(/ title +\| text +\| +\| not null \|/)
    const missing = await psql(port, ['-c', '\\d nosuch'])
    expect(missing.code).to.not.equal(0)
    expect(missing.stderr).to.include('Did not find any relation named "nosuch"')
  })

  it('\\l, \\dn and \\di list the database, the schemas (branches) and the indexes', async () => {
    const l = await psql(port, ['-c', '\\l'])
    expect(l.stdout).to.match(/ svc +\| svc +\| UTF8 +\| C\.UTF-8 +\| C\.UTF-8 +\| +\| libc +\|/)
    const dn = await psql(port, ['-c', '\\dn'])
    expect(dn.stdout).to.match(/ feature \| svc\n public +\| pg_database_owner\n\(2 rows\)/)
    const di = await psql(port, ['-c', '\\di'])
    expect(di.stdout).to.match(/ public \| notes_pkey +\| index \| svc +\| notes\n public \| people_age +\| index \| svc +\| people\n public \| people_pkey +\| index \| svc +\| people\n/)
    const du = await psql(port, ['-c', '\\du'])
    expect(du.stdout).to.match(/ svc +\| Superuser/)
    // Catalogs of objects svc has none of list nothing rather than fail.
    const df = await psql(port, ['-c', '\\df'])
    expect(df.code).to.equal(0)
    expect(df.stdout).to.include('(0 rows)')
  })

  it('answers a hand-written join of pg_class, pg_attribute and pg_namespace with WHERE, functions and ORDER BY', async () => {
    const sql = `SELECT n.nspname, c.relname, a.attname, format_type(a.atttypid, a.atttypmod) AS type
      FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind = 'r' AND a.attnum > 0 AND a.attnotnull AND a.attname <> 'id' AND n.nspname !~ '^pg_'
      ORDER BY n.nspname DESC, c.relname, a.attnum`
    const r = await psql(port, ['-A', '-t', '-F', ' ', '-c', sql])
    expect(r.code, r.stderr).to.equal(0)
    // feature branched from main after people and notes existed: it holds them too.
    expect(r.stdout.trim().split('\n')).to.deep.equal(['public notes body text', 'public people name text', 'feature drafts title text', 'feature notes body text', 'feature people name text'])
    const counted = await c.query(
      `SELECT c.relname, count(*)::int AS columns, bool_or(i.indisprimary) AS has_pkey
       FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
       WHERE c.relkind = 'r' AND pg_table_is_visible(c.oid) GROUP BY c.relname ORDER BY c.relname`,
    )
    expect(counted.rows).to.deep.equal([
      {columns: 3, has_pkey: true, relname: 'notes'},
      {columns: 3, has_pkey: true, relname: 'people'},
    ])
    const defs = await c.query("SELECT pg_get_indexdef(indexrelid) AS def FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid WHERE t.relname = 'people' AND pg_table_is_visible(t.oid) ORDER BY 1")
    expect(defs.rows.map((x) => x.def)).to.deep.equal(['CREATE INDEX people_age ON public.people USING btree (age)', 'CREATE UNIQUE INDEX people_pkey ON public.people USING btree (id)'])
    // The PostgreSQL wiki's "primary key of a table" query: regclass input and ANY(indkey).
    const pkey = await c.query(
      'SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS data_type FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) WHERE i.indrelid = $1::regclass AND i.indisprimary',
      ['feature.drafts'],
    )
    expect(pkey.rows).to.deep.equal([{attname: 'id', data_type: 'integer'}])
  })

  it("answers the queries psql's tab completion sends (quote_ident, pg_catalog.count, UNION over catalogs)", async () => {
    const tables = await c.query(
      `SELECT pg_catalog.quote_ident(c.relname) AS name FROM pg_catalog.pg_class c WHERE c.relkind IN ('r', 'S', 'v', 'm', 'f', 'p') AND substring(pg_catalog.quote_ident(c.relname),1,2)='pe' AND pg_catalog.pg_table_is_visible(c.oid) AND c.relnamespace <> (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = 'pg_catalog')
       UNION SELECT pg_catalog.quote_ident(n.nspname) || '.' FROM pg_catalog.pg_namespace n WHERE substring(pg_catalog.quote_ident(n.nspname) || '.',1,2)='pe' AND (SELECT pg_catalog.count(*) FROM pg_catalog.pg_namespace WHERE substring(pg_catalog.quote_ident(nspname) || '.',1,2) = substring('pe',1,pg_catalog.length(substring('pe',1,2)))) > 1
       LIMIT 1000`,
    )
    expect(tables.rows).to.deep.equal([{name: 'people'}])
    const cols = await c.query(
      `SELECT pg_catalog.quote_ident(attname) AS name FROM pg_catalog.pg_attribute a, pg_catalog.pg_class c WHERE c.oid = a.attrelid AND a.attnum > 0 AND NOT a.attisdropped AND substring(pg_catalog.quote_ident(attname),1,1)='n' AND (pg_catalog.quote_ident(relname)='people' OR '"' || relname || '"'='people') AND pg_catalog.pg_table_is_visible(c.oid) LIMIT 1000`,
    )
    expect(cols.rows).to.deep.equal([{name: 'name'}])
  })

  it('reads information_schema through prepared statements with parameters (node-postgres extended protocol)', async () => {
    const cols = await c.query('SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position', ['public', 'people'])
    expect(cols.rows).to.deep.equal([
      {column_name: 'id', data_type: 'integer', is_nullable: 'NO'},
      {column_name: 'name', data_type: 'text', is_nullable: 'NO'},
      {column_name: 'age', data_type: 'integer', is_nullable: 'YES'},
    ])
    const tables = await c.query("SELECT table_schema, table_name FROM information_schema.tables WHERE table_name LIKE $1 ORDER BY 1, 2", ['dr%'])
    expect(tables.rows).to.deep.equal([{table_name: 'drafts', table_schema: 'feature'}])
    const pk = await c.query("SELECT kcu.column_name FROM information_schema.table_constraints tc JOIN information_schema.key_column_usage kcu ON kcu.constraint_name = tc.constraint_name AND kcu.table_schema = tc.table_schema WHERE tc.constraint_type = 'PRIMARY KEY' AND tc.table_name = $1 AND tc.table_schema = 'public'", ['people'])
    expect(pk.rows).to.deep.equal([{column_name: 'id'}])
  })

  it('sees a table created in the same transaction, and a new index at once', async () => {
    await c.query('BEGIN')
    await c.query('CREATE TABLE fresh (id int, v text)')
    const inTx = await c.query("SELECT relname FROM pg_class WHERE relname = 'fresh'")
    expect(inTx.rows).to.deep.equal([{relname: 'fresh'}])
    await c.query('ROLLBACK')
    expect((await c.query("SELECT relname FROM pg_class WHERE relname = 'fresh'")).rows).to.deep.equal([])
    await c.query('CREATE INDEX notes_pinned ON notes (pinned)')
    const d = await psql(port, ['-c', '\\d notes'])
    expect(d.stdout).to.include('"notes_pinned" btree (pinned)')
  })

  it('refuses bad catalog queries with the SQLSTATE PostgreSQL uses and keeps serving', async () => {
    expect((await sqlError(c.query('SELECT * FROM pg_catalog.pg_nosuch'))).code).to.equal('42P01')
    expect((await sqlError(c.query('SELECT relnosuch FROM pg_class'))).code).to.equal('42703')
    expect((await sqlError(c.query("SELECT relname FROM pg_class WHERE relname ~ '('"))).code).to.equal('2201B')
    expect((await sqlError(c.query("SELECT attname FROM pg_attribute WHERE attrelid = 'nosuch'::regclass"))).code).to.equal('42P01')
    expect((await sqlError(c.query('INSERT INTO pg_catalog.pg_class (relname) VALUES ($1)', ['x']))).code).to.equal('42501')
    // A COLLATE other than the default one is still not parsed.
    expect((await sqlError(c.query('SELECT relname FROM pg_class WHERE relname = \'x\' COLLATE "C"'))).code).to.equal('42601')
    expect((await c.query('SELECT count(*)::int AS n FROM people')).rows).to.deep.equal([{n: 2}])
  })
})

describe('svc catalog: the text rewrite before parsing', () => {
  it("drops COLLATE pg_catalog.default and turns E'' into '' outside literals, identifiers and comments", () => {
    expect(rewriteForParser("WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$' COLLATE pg_catalog.default\n  AND x")).to.equal("WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$'\n  AND x")
    expect(rewriteForParser("SELECT CASE WHEN a THEN E'' ELSE 'b' END")).to.equal("SELECT CASE WHEN a THEN '' ELSE 'b' END")
    const untouched = [
      "SELECT ' COLLATE pg_catalog.default', \"a COLLATE pg_catalog.default\" -- COLLATE pg_catalog.default",
      "SELECT E'it''s', E'\\'', 'E'''",
      "SELECT x COLLATE \"C\"",
      "SELECT $$ COLLATE pg_catalog.default $$",
      'SELECT 1',
    ]
    for (const sql of untouched) expect(rewriteForParser(sql)).to.equal(sql)
  })
})
