/**
 * The differential suite (issue 18): the same statements run through node-postgres and psql
 * against a real PostgreSQL 15 started here and against svc, and the answers are compared:
 * column names, type OIDs, every value in PostgreSQL's text form, error SQLSTATEs. A difference
 * passes only when the statement is in the documented allow-list (allow-list.ts, each reason
 * described in docs/svc-sql.md); an allow-listed statement that now answers the same fails too,
 * so the list never outlives the difference. SQL_DIFF_REPORT=<file> writes every difference as
 * JSON (to classify new ones).
 */
import {expect} from 'chai'
import {execFile} from 'node:child_process'
import {readFileSync, writeFileSync} from 'node:fs'
import {dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'

import pg from 'pg'

import {type Harness, startHarness} from '../redis/harness.js'
import {KNOWN, REASONS} from './allow-list.js'
import {CASES, PARAM_CASES, PSQL_CASES, SETUP} from './cases.js'
import {type PeerPostgres, startPostgres} from './postgres.js'
import {randomQueries} from './random.js'

const here = dirname(fileURLToPath(import.meta.url))
const RANDOM_SEED = 18
const RANDOM_COUNT = 120

type Outcome = {columns: string[]; rows: (null | string)[][]; tag: string} | {error: string}

/** Every value as the server's text: node-postgres hands the wire text through unparsed. */
const raw = {getTypeParser: () => (v: string) => v}

async function run(c: pg.Client, sql: string): Promise<Outcome> {
  try {
    const r = await c.query({rowMode: 'array', text: sql, types: raw})
    const rows = (r.rows as (null | string)[][]).map((row) => row.map((v) => (v === null ? null : String(v))))
    // Without ORDER BY the row order is unspecified in both: compare as multisets.
    if (!/\border\s+by\b/i.test(sql)) rows.sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1))
    return {columns: (r.fields ?? []).map((f) => `${f.name}:${f.dataTypeID}`), rows, tag: r.command ?? ''}
  } catch (error) {
    const code = (error as {code?: string}).code
    if (!code) throw error
    return {error: code}
  }
}

function psql(port: number, user: string, password: string, script: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'sh',
      ['-c', `psql -h 127.0.0.1 -p ${port} -U ${user} -d ${user} -X -q -v ON_ERROR_STOP=0 -v VERBOSITY=sqlstate -P pager=off 2>&1`],
      {env: {...process.env, PGPASSWORD: password, PGTZ: 'UTC'}, timeout: 60_000},
      (err, stdout) => (err ? reject(err) : resolve(stdout)),
    )
    child.stdin?.end(script)
  })
}

/** psql's output split per statement (each preceded by an `\echo` marker). */
function psqlBlocks(out: string): Map<string, string> {
  const m = new Map<string, string>()
  for (const part of out.split('@@case ').slice(1)) {
    const nl = part.indexOf('\n')
    m.set(part.slice(0, nl), part.slice(nl + 1).replaceAll(/^psql:<stdin>:\d+: /gm, 'psql: '))
  }
  return m
}

describe('svc SQL answers as PostgreSQL 15 does (differential suite)', function () {
  this.timeout(180_000)
  let peer: PeerPostgres
  let h: Harness
  let theirs: pg.Client
  let ours: pg.Client
  const differences: {pg: unknown; statement: string; svc: unknown}[] = []

  before(async () => {
    peer = await startPostgres()
    const admin = new pg.Client({database: 'postgres', host: '127.0.0.1', port: peer.port, user: 'postgres'})
    await admin.connect()
    // The same user and database names on both sides, so psql's \d output (owner) compares.
    await admin.query("CREATE ROLE svc SUPERUSER LOGIN PASSWORD 'svc-secret'")
    await admin.query('CREATE DATABASE svc OWNER svc')
    await admin.end()
    theirs = new pg.Client({database: 'svc', host: '127.0.0.1', password: 'svc-secret', port: peer.port, user: 'svc'})
    h = await startHarness({redis: false})
    ours = new pg.Client({database: 'svc', host: '127.0.0.1', password: 'svc-secret', port: h.pg!.port, user: 'svc'})
    await theirs.connect()
    await ours.connect()
    for (const sql of SETUP) {
      await theirs.query(sql)
      await ours.query(sql)
    }
  })

  after(async () => {
    const out = process.env.SQL_DIFF_REPORT
    if (out) writeFileSync(out, JSON.stringify(differences, null, 1))
    await theirs?.end().catch(() => undefined)
    await ours?.end().catch(() => undefined)
    await h?.close()
    peer?.stop()
  })

  const compare = (statement: string, a: unknown, b: unknown, failures: string[], equal: {n: number}) => {
    const same = JSON.stringify(a) === JSON.stringify(b)
    if (same) equal.n++
    else differences.push({pg: a, statement, svc: b})
    if (same && KNOWN[statement]) failures.push(`allow-listed but now equal (remove it from allow-list.ts): ${statement}`)
    if (!same && !KNOWN[statement]) failures.push(`${statement}\n    PostgreSQL: ${JSON.stringify(a)}\n    svc:        ${JSON.stringify(b)}`)
  }

  it('runs at least 400 statements through node-postgres; every difference is allow-listed and documented', async () => {
    const failures: string[] = []
    const equal = {n: 0}
    for (const sql of CASES) compare(sql, await run(theirs, sql), await run(ours, sql), failures, equal)
    const allowed = CASES.filter((s) => KNOWN[s]).length
    console.log(`      node-postgres: ${CASES.length} statements, ${equal.n} equal, ${allowed} allow-listed`)
    expect(CASES.length).to.be.at.least(400)
    expect(failures, failures.join('\n')).to.deep.equal([])
  })

  it(`answers ${RANDOM_COUNT} seeded random queries (seed ${RANDOM_SEED}) as PostgreSQL does`, async () => {
    const failures: string[] = []
    const equal = {n: 0}
    const queries = randomQueries(RANDOM_SEED, RANDOM_COUNT)
    for (const sql of queries) compare(sql, await run(theirs, sql), await run(ours, sql), failures, equal)
    console.log(`      random: ${queries.length} statements, ${equal.n} equal`)
    expect(failures, failures.join('\n')).to.deep.equal([])
  })

  it('reads back parameters (a Date, numeric text, bigints) as node-postgres parses them, as from PostgreSQL', async () => {
    const failures: string[] = []
    const equal = {n: 0}
    const parsed = async (c: pg.Client, sql: string, params: unknown[]) => {
      try {
        const r = await c.query(sql, params)
        return {columns: r.fields.map((f) => `${f.name}:${f.dataTypeID}`), rows: JSON.parse(JSON.stringify(r.rows)) as unknown}
      } catch (error) {
        return {error: (error as {code?: string}).code}
      }
    }
    for (const [sql, params] of PARAM_CASES) compare(sql, await parsed(theirs, sql, params), await parsed(ours, sql, params), failures, equal)
    console.log(`      parameters: ${PARAM_CASES.length} statements, ${equal.n} equal`)
    expect(failures, failures.join('\n')).to.deep.equal([])
  })

  it('shows the same through psql, catalog commands included', async () => {
    const script = PSQL_CASES.map((s, i) => `\\echo @@case ${i}\n${s}${s.startsWith('\\') ? '' : ';'}\n`).join('')
    const a = psqlBlocks(await psql(peer.port, 'svc', 'svc-secret', script))
    const b = psqlBlocks(await psql(h.pg!.port, 'svc', 'svc-secret', script))
    const failures: string[] = []
    const equal = {n: 0}
    for (const [i, s] of PSQL_CASES.entries()) compare(`psql: ${s}`, a.get(String(i)), b.get(String(i)), failures, equal)
    console.log(`      psql: ${PSQL_CASES.length} statements, ${equal.n} equal`)
    expect(failures, failures.join('\n')).to.deep.equal([])
  })

  it('answers every SELECT of the suite in binary format (node-postgres binary: true) with the bytes PostgreSQL sends', async () => {
    const failures: string[] = []
    const equal = {n: 0}
    // node-postgres hands a binary column to a custom parser as the bytes read as UTF-8 (a byte
    // that is not valid UTF-8 becomes U+FFFD on both sides): compare them as hex. The format
    // code of every column is compared too, so a text answer cannot pass for a binary one.
    const bytes = {getTypeParser: () => (v: Buffer | string) => Buffer.from(v).toString('hex')}
    const runBinary = async (c: pg.Client, sql: string): Promise<Outcome> => {
      try {
        // binary and queryMode are node-postgres options its type definitions do not list.
        const config = {binary: true, queryMode: 'extended', rowMode: 'array', text: sql, types: bytes} as pg.QueryArrayConfig
        const r = await c.query(config)
        const rows = (r.rows as (null | string)[][]).map((row) => row.map((v) => (v === null ? null : String(v))))
        if (!/\border\s+by\b/i.test(sql)) rows.sort((x, y) => (JSON.stringify(x) < JSON.stringify(y) ? -1 : 1))
        return {columns: r.fields.map((f) => `${f.name}:${f.dataTypeID}:${f.format}`), rows, tag: r.command ?? ''}
      } catch (error) {
        const code = (error as {code?: string}).code
        if (!code) throw error
        return {error: code}
      }
    }
    const selects = CASES.filter((s) => /^select\b/i.test(s) && !KNOWN[s])
    for (const sql of selects) compare(`binary: ${sql}`, await runBinary(theirs, sql), await runBinary(ours, sql), failures, equal)
    console.log(`      binary: ${selects.length} statements, ${equal.n} equal`)
    expect(failures, failures.join('\n')).to.deep.equal([])
  })

  it('keeps now() fixed within a transaction and moving between transactions, as PostgreSQL does', async () => {
    const behaviour = async (c: pg.Client) => {
      const at = async (sql: string) => String((await c.query({rowMode: 'array', text: sql, types: raw})).rows[0][0])
      await c.query('BEGIN')
      const first = await at('SELECT now()')
      await new Promise((r) => setTimeout(r, 20))
      const second = await at('SELECT current_timestamp')
      const clock = await at('SELECT clock_timestamp()')
      await c.query('COMMIT')
      await new Promise((r) => setTimeout(r, 20))
      const after = await at('SELECT now()')
      const multi = (await c.query({rowMode: 'array', text: 'SELECT now(); SELECT pg_sleep(0.02); SELECT now()', types: raw})) as unknown as pg.QueryResult[]
      return {
        clockMoves: clock > first,
        multiSame: String(multi[0].rows[0][0]) === String(multi[2].rows[0][0]),
        nextTxMoves: after > first,
        sameInTx: first === second,
      }
    }
    const a = await behaviour(theirs)
    const b = await behaviour(ours)
    expect(a).to.deep.equal({clockMoves: true, multiSame: true, nextTxMoves: true, sameInTx: true})
    expect(b).to.deep.equal(a)
  })

  it('documents every allow-list reason in docs/svc-sql.md, and every entry names a known reason', () => {
    const doc = readFileSync(join(here, '../../../../docs/svc-sql.md'), 'utf8')
    for (const key of Object.keys(REASONS)) expect(doc, `docs/svc-sql.md must explain \`${key}\``).to.include(`\`${key}\``)
    for (const [statement, reason] of Object.entries(KNOWN)) expect(REASONS, statement).to.have.property(reason)
  })
})
