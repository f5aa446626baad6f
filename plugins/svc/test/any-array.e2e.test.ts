/**
 * Issue 24: `col = ANY($1)` with an array parameter (node-postgres sends a JS array as the text
 * array literal `{1,2,3}`) selects by id through the id lookup and by any other column, its items
 * read once per statement, and it has the IN lists' cap: past `:max-in-values` items it is 54001
 * and the connection goes on serving. Through the built CLI with node-postgres and psql.
 */
import {expect} from 'chai'
import {execFile} from 'node:child_process'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {promisify} from 'node:util'

import pg from 'pg'

import {startServer, type Started} from './helpers/cli.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'

const run = promisify(execFile)

describe('svc SQL: = ANY($1) with an array parameter, capped like IN lists (built CLI, node-postgres, psql)', function () {
  this.timeout(120_000)
  let s: Started
  let client: pg.Client
  before(async () => {
    const dir = tempDir()
    writeFileSync(join(dir, 'config.edn'), '{:servers {:rest {:enabled false} :redis {:enabled false} :postgresql {:enabled true :port 0 :max-in-values 1000}}}\n')
    s = await startServer(['--data-dir', join(dir, 'data'), '--log-level', 'error'], {cwd: dir})
    client = new pg.Client({host: '127.0.0.1', password: 'svc', port: Number(s.ready.pg), user: 'svc'})
    client.on('error', () => {})
    await client.connect()
    await client.query('CREATE TABLE t (id int PRIMARY KEY, name text, n int)')
    await client.query("INSERT INTO t (id, name, n) VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30), (4, 'd', NULL)")
  })
  after(async () => {
    await client?.end().catch(() => {})
    if (s && s.child.exitCode === null) s.child.kill('SIGKILL')
    cleanupTempDirs()
  })

  const ids = async (sql: string, params: unknown[]): Promise<number[]> => (await client.query(sql, params)).rows.map((r: {id: number}) => r.id)

  it('selects by id (an id lookup, not a scan) and by other columns of both types', async () => {
    expect(await ids('SELECT id FROM t WHERE id = ANY($1) ORDER BY id', [[3, 1, 99]])).to.deep.equal([1, 3])
    expect(await ids('SELECT id FROM t WHERE name = ANY($1) ORDER BY id', [['b', 'd', 'zz']])).to.deep.equal([2, 4])
    expect(await ids('SELECT id FROM t WHERE n = ANY($1) ORDER BY id', [[30, 10]])).to.deep.equal([1, 3])
    expect(await ids('SELECT id FROM t WHERE id = ANY($1::int[]) AND n = ANY($2) ORDER BY id', [[1, 2, 3], [20, 30]])).to.deep.equal([2, 3])
    expect(await ids('SELECT id FROM t WHERE id = ANY($1)', [[]])).to.deep.equal([])
    // A NULL item matches nothing; NOT (n = ANY) of an array holding NULL is unknown, as in PostgreSQL.
    expect(await ids('SELECT id FROM t WHERE n = ANY($1) ORDER BY id', [[10, null]])).to.deep.equal([1])
    expect(await ids('SELECT id FROM t WHERE NOT (n = ANY($1)) ORDER BY id', [[10, null]])).to.deep.equal([])
    const plan = (await client.query('EXPLAIN SELECT id FROM t WHERE id = ANY($1)', [[1, 2]])).rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n')
    expect(plan).to.include('Id Lookup').and.include('2 keys')
    // Writes select by the array too, and only the rows it names change.
    await client.query('UPDATE t SET n = n + 1 WHERE id = ANY($1)', [[1, 2]])
    expect((await client.query('SELECT id, n FROM t ORDER BY id')).rows).to.deep.equal([{id: 1, n: 11}, {id: 2, n: 21}, {id: 3, n: 30}, {id: 4, n: null}])
  })

  it('past :max-in-values items is 54001 on id and other columns; nothing changes and the connection answers', async () => {
    const many = Array.from({length: 1001}, (_, i) => i)
    for (const sql of ['SELECT id FROM t WHERE id = ANY($1)', 'SELECT id FROM t WHERE n = ANY($1)', 'DELETE FROM t WHERE id = ANY($1)']) {
      const err = await client.query(sql, [many]).then(() => undefined, (error: {code?: string; message: string}) => error)
      expect(err?.code, sql).to.equal('54001')
      expect(err?.message).to.include('= ANY array holds more than 1000 values')
    }
    expect(await ids('SELECT id FROM t WHERE id = ANY($1) ORDER BY id', [many.slice(0, 1000)])).to.deep.equal([1, 2, 3, 4])
  })

  it('psql: a text array literal selects, and a too long one is an ERROR naming 54001 while the session goes on', async () => {
    const env = {...process.env, PGPASSWORD: 'svc'}
    const args = ['-h', '127.0.0.1', '-p', String(s.ready.pg), '-U', 'svc', '-d', 'svc', '-X', '-A', '-t', '-v', 'VERBOSITY=verbose']
    const ok = await run('psql', [...args, '-c', "SELECT id FROM t WHERE name = ANY('{a,c}') ORDER BY id"], {env})
    expect(ok.stdout.trim().split('\n')).to.deep.equal(['1', '3'])
    const list = `{${Array.from({length: 1001}, (_, i) => i).join(',')}}`
    const r = await run('psql', [...args, '-c', `SELECT count(*) FROM t WHERE id = ANY('${list}'::int[])`, '-c', 'SELECT count(*) FROM t'], {env}).catch((error: {stderr: string; stdout: string}) => error)
    expect(r.stderr).to.include('54001')
    expect(r.stdout.trim()).to.equal('4')
  })
})
