import {expect} from 'chai'
import {execFile} from 'node:child_process'
import {readFileSync, statSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {promisify} from 'node:util'

import pg from 'pg'

import {runCli, startServer} from '../helpers/cli.js'
import {cleanupTempDirs, tempDir} from '../helpers/tmp.js'
import {filesUnder} from '../../../../packages/kit/test/helpers/files-under.js'

const run = promisify(execFile)

// Issue 20: a planted PostgreSQL password must never reach stdout, stderr (debug logs included),
// error messages sent to clients, or any file svc writes; wrong passwords are logged without it.
describe('svc never prints or stores the PostgreSQL password (built CLI at debug level, psql, node-postgres)', function () {
  this.timeout(120_000)
  after(cleanupTempDirs)

  it('keeps a planted password out of stdout, stderr, client errors and the data directory', async () => {
    const root = tempDir()
    const secret = 'Pl4nted-Secret-7f3a9c'
    const wrong = 'Wr0ng-Secret-51be02'
    writeFileSync(join(root, 'config.edn'), `{:data-dir "${join(root, 'data')}" :servers {:postgresql {:enabled true :port 0 :username "owner" :password "${secret}"} :redis {:enabled false} :rest {:enabled true :port 0}}}\n`)
    const s = await startServer(['--config', join(root, 'config.edn'), '--log-level', 'debug', '--log-format', 'json'])
    const port = (s.ready as {pg: number}).pg
    const ok = new pg.Client({database: 'svc', host: '127.0.0.1', password: secret, port, user: 'owner'})
    await ok.connect()
    await ok.query('CREATE TABLE t (id int PRIMARY KEY, v text)')
    await ok.query("INSERT INTO t (id, v) VALUES (1, 'x')")
    // A client error that could echo the statement's text.
    const err = await ok.query(`SELECT '${secret}'::int`).catch((error: Error) => error)
    expect(err).to.be.instanceOf(Error)
    await ok.end()
    const bad = await run('psql', ['-h', '127.0.0.1', '-p', String(port), '-U', 'owner', '-X', '-c', 'SELECT 1'], {env: {...process.env, PGPASSWORD: wrong}}).catch((error: {stderr: string}) => error)
    expect(bad.stderr).to.include('password authentication failed')
    expect(bad.stderr).to.not.include(wrong)
    const md5ish = await new pg.Client({database: 'svc', host: '127.0.0.1', password: wrong, port, user: 'nobody'}).connect().catch((error: Error) => error)
    expect(String(md5ish)).to.not.include(wrong)
    const diagnose = await runCli(['svc', 'diagnose', '--data-dir', join(root, 'data'), '--no-fsck', '--format', 'json'])
    s.child.kill('SIGTERM')
    expect((await s.exited).code).to.equal(0)

    const printed = `${s.stderr()}\n${diagnose.stdout}\n${diagnose.stderr}`
    expect(s.stderr(), 'the debug log is empty: the test would prove nothing').to.include('"level":"debug"')
    for (const planted of [secret, wrong]) expect(printed, `${planted} printed`).to.not.include(planted)
    for (const f of filesUnder(join(root, 'data'))) {
      if (statSync(f).size > 50_000_000) continue
      const bytes = readFileSync(f)
      for (const planted of [secret, wrong]) expect(bytes.includes(planted), `${planted} found in ${f}`).to.equal(false)
    }
  })
})
