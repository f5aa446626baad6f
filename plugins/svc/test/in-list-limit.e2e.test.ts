/**
 * Issue 24: the values of one `IN (...)` list are capped (`:max-in-values`, default 100,000), so
 * one statement cannot make the server lift and plan millions of values while others wait. Past
 * the cap the statement gets SQLSTATE 54001 with a message saying what to do, and the connection
 * goes on serving.
 */
import {expect} from 'chai'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'

import pg from 'pg'

import {startServer, type Started} from './helpers/cli.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'

const list = (n: number): string => Array.from({length: n}, (_, i) => i + 1).join(',')

describe('svc SQL: an IN list past :max-in-values is 54001 and the connection stays usable (built CLI, node-postgres)', function () {
  this.timeout(120_000)
  const running: Started[] = []
  after(async () => {
    // Stopped, not killed: a killed server's git children go on writing into the directory removed next.
    for (const s of running) {
      if (s.child.exitCode !== null) continue
      s.child.kill('SIGTERM')
      await s.exited
    }
    cleanupTempDirs()
  })

  async function connect(config: string): Promise<pg.Client> {
    const dir = tempDir()
    writeFileSync(join(dir, 'config.edn'), `{:servers {:rest {:enabled false} :redis {:enabled false} :postgresql {:enabled true :port 0 ${config}}}}\n`)
    const s = await startServer(['--data-dir', join(dir, 'data'), '--log-level', 'error'], {cwd: dir})
    running.push(s)
    const client = new pg.Client({host: '127.0.0.1', password: 'svc', port: Number(s.ready.pg), user: 'svc'})
    client.on('error', () => {})
    await client.connect()
    await client.query('CREATE TABLE t (id int PRIMARY KEY, n int)')
    await client.query('INSERT INTO t (id, n) VALUES (1, 10), (1000, 20), (100000, 30)')
    return client
  }

  const refusal = (client: pg.Client, sql: string): Promise<{code?: string; hint?: string; message: string} | undefined> =>
    client.query(sql).then(
      () => undefined,
      (error: {code?: string; hint?: string; message: string}) => error,
    )

  it('by default takes 100,000 values and refuses 100,001 with 54001; the same connection then answers', async () => {
    const client = await connect('')
    expect((await client.query(`SELECT count(*)::int AS c FROM t WHERE id IN (${list(100_000)})`)).rows).to.deep.equal([{c: 3}])
    const err = await refusal(client, `SELECT count(*) FROM t WHERE id IN (${list(100_001)})`)
    expect(err?.code).to.equal('54001')
    expect(err?.message).to.include('IN list holds more than 100000 values')
    expect(err?.hint).to.include('array parameter')
    expect((await client.query('SELECT n FROM t WHERE id = $1', [1000])).rows).to.deep.equal([{n: 20}])
    // Inside a transaction the refusal aborts it as any error does; ROLLBACK brings the connection back.
    await client.query('BEGIN')
    expect((await refusal(client, `SELECT n FROM t WHERE id IN (${list(100_001)})`))?.code).to.equal('54001')
    expect((await refusal(client, 'SELECT 1'))?.code).to.equal('25P02')
    await client.query('ROLLBACK')
    expect((await client.query('SELECT count(*)::int AS c FROM t')).rows).to.deep.equal([{c: 3}])
    await client.end()
  })

  it('follows :max-in-values from config.edn', async () => {
    const client = await connect(':max-in-values 1000')
    expect((await client.query(`SELECT count(*)::int AS c FROM t WHERE id IN (${list(1000)})`)).rows).to.deep.equal([{c: 2}])
    const err = await refusal(client, `DELETE FROM t WHERE id IN (${list(1001)})`)
    expect(err?.code).to.equal('54001')
    expect(err?.message).to.include('more than 1000 values')
    // Nothing of the refused DELETE happened.
    expect((await client.query('SELECT count(*)::int AS c FROM t')).rows).to.deep.equal([{c: 3}])
    await client.end()
  })
})
