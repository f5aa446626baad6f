import {expect} from 'chai'
import {execFile} from 'node:child_process'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {promisify} from 'node:util'

import {Redis} from 'ioredis'
import pg from 'pg'

import {startServer, type Started} from '../helpers/cli.js'
import {cleanupTempDirs, tempDir} from '../helpers/tmp.js'

const run = promisify(execFile)

describe('toolkit svc server: Redis and PostgreSQL protocols (built CLI)', function () {
  this.timeout(60_000)
  let s: Started | undefined

  after(async () => {
    if (s && s.child.exitCode === null) s.child.kill('SIGKILL')
    cleanupTempDirs()
  })

  it('serves both protocols with config.edn credentials; a write through one is read through the other; SIGTERM exits 0', async () => {
    const cwd = tempDir()
    writeFileSync(
      join(cwd, 'config.edn'),
      `{:servers {:rest {:enabled false}
           :redis {:enabled true :port 0}
           :postgresql {:enabled true :port 0 :username "app" :password "app-pass"}}}
`,
    )
    s = await startServer(['--data-dir', join(cwd, 'data'), '--log-level', 'warn'], {cwd})
    const redisPort = Number(s.ready.redis)
    const pgPort = Number(s.ready.pg)
    expect(redisPort).to.be.greaterThan(0)
    expect(pgPort).to.be.greaterThan(0)

    const r = new Redis({host: '127.0.0.1', port: redisPort})
    await r.hset('users:1', 'name', 'Ann')
    r.disconnect()

    const wrong = new pg.Client({host: '127.0.0.1', password: 'svc', port: pgPort, user: 'svc'})
    const err = await wrong.connect().then(
      () => undefined,
      (error: {code?: string}) => error,
    )
    expect(err?.code).to.equal('28P01')

    const c = new pg.Client({host: '127.0.0.1', password: 'app-pass', port: pgPort, user: 'app'})
    await c.connect()
    expect((await c.query('SELECT name FROM users WHERE id = $1', ['1'])).rows).to.deep.equal([{name: 'Ann'}])
    await c.query("UPDATE users SET name = 'Anna' WHERE id = '1'")
    await c.end()

    const {stdout} = await run('redis-cli', ['-p', String(redisPort), 'HGET', 'users:1', 'name'])
    expect(stdout.trim()).to.equal('Anna')
    const psql = await run('psql', ['-h', '127.0.0.1', '-p', String(pgPort), '-U', 'app', '-X', '-A', '-t', '-c', 'SELECT count(*) FROM users'], {
      env: {...process.env, PGPASSWORD: 'app-pass'},
    })
    expect(psql.stdout.trim()).to.equal('1')

    s.child.kill('SIGTERM')
    expect((await s.exited).code).to.equal(0)
  })
})
