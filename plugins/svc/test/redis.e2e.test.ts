/** Issues 13 and 24 on the Redis protocol, through the built `bin/run.js` with redis-cli and ioredis. */
import {expect} from 'chai'
import {execFile} from 'node:child_process'
import {join} from 'node:path'
import {Redis} from 'ioredis'

import {startServer, type Started} from './helpers/cli.js'
import {cleanupTempDirs, gitOut, tempDir} from './helpers/tmp.js'

describe('svc Redis through the built CLI (issues 13 and 24)', function () {
  this.timeout(60_000)
  let server: Started
  let dir: string
  let io: Redis

  const cli = (...args: string[]): Promise<string> =>
    new Promise((resolve, reject) => {
      execFile('redis-cli', ['-p', String(server.ready.redis), ...args], (error, stdout) => (error ? reject(error) : resolve(stdout.trim())))
    })
  const subjects = (): string[] => gitOut(join(dir, 'repo'), ['log', '--format=%s', 'main']).trim().split('\n')
  /** The subjects, or none while `main` is not yet in Git (its first checkpoint has not run). */
  const subjectsSoFar = (): string[] => {
    try {
      return subjects()
    } catch {
      return []
    }
  }
  /** Waits until the newest commit on main has `subject` (writes reach Git within about a second). */
  const headIs = async (subject: string): Promise<void> => {
    for (let i = 0; i < 200 && subjectsSoFar()[0] !== subject; i++) await new Promise((r) => setTimeout(r, 50))
    expect(subjects()[0]).to.equal(subject)
  }

  before(async () => {
    dir = tempDir()
    server = await startServer(['--data-dir', dir, '--http-port', '0', '--redis-port', '0', '--disable-sql'])
    io = new Redis({lazyConnect: true, port: Number(server.ready.redis), stringNumbers: true})
    await io.connect()
  })
  after(async () => {
    io.disconnect()
    server.child.kill('SIGTERM')
    await server.exited
    cleanupTempDirs()
  })

  it('INCR, INCRBY, DECR and DECRBY are exact over the signed 64-bit range, with Redis overflow errors', async () => {
    expect(await cli('SET', 'big', '9007199254740993')).to.equal('OK')
    expect(await cli('INCR', 'big')).to.equal('9007199254740994')
    expect(await cli('INCRBY', 'big', '9007199254740993')).to.equal('18014398509481987')
    expect(await cli('SET', 'max', '9223372036854775806')).to.equal('OK')
    expect(await cli('INCR', 'max')).to.equal('9223372036854775807')
    expect(await cli('INCR', 'max')).to.equal('ERR increment or decrement would overflow')
    expect(await cli('GET', 'max')).to.equal('9223372036854775807')
    expect(await cli('SET', 'min', '-9223372036854775807')).to.equal('OK')
    expect(await cli('DECR', 'min')).to.equal('-9223372036854775808')
    expect(await cli('DECRBY', 'min', '1')).to.equal('ERR increment or decrement would overflow')
    expect(await cli('DECRBY', 'fresh', '-9223372036854775808')).to.equal('ERR decrement would overflow')
    expect(await cli('INCRBY', 'fresh', '9223372036854775808')).to.equal('ERR value is not an integer or out of range')
    expect(await cli('SET', 'padded', '01')).to.equal('OK')
    expect(await cli('INCR', 'padded')).to.equal('ERR value is not an integer or out of range')
    expect(await cli('EXISTS', 'fresh')).to.equal('0')

    expect(await io.incrby('io', '9223372036854775807')).to.equal('9223372036854775807')
    expect(await io.decr('io')).to.equal('9223372036854775806')
    expect(await io.hincrby('h', 'n', '9007199254740993')).to.equal('9007199254740993')
    expect(await io.hincrby('h', 'n', '1')).to.equal('9007199254740994')
    // The value stays exact for the other protocols too.
    const doc = (await (await fetch(`http://127.0.0.1:${server.ready.rest}/api/v1/documents/big`)).json()) as {value: string}
    expect(doc.value).to.equal('18014398509481987')
  })

  it('MULTI/EXEC is exactly one Git commit; a failure inside it commits nothing', async () => {
    const res = await io.multi().set('tx:a', '1').set('tx:b', '2').incr('tx:a').get('tx:a').exec()
    expect(res).to.deep.equal([
      [null, 'OK'],
      [null, 'OK'],
      [null, '2'],
      [null, '2'],
    ])
    await headIs('batch of 2 operations')
    expect(subjects().filter((s) => /tx:/.test(s))).to.deep.equal([])

    expect(await cli('HSET', 'tx:h', 'f', 'v')).to.equal('1')
    const failed = await io
      .multi()
      .set('tx:d', '1')
      .incr('tx:h')
      .set('tx:e', '2')
      .exec()
      .then(
        () => undefined,
        (error: Error) => error,
      )
    expect(failed?.message).to.match(/EXECABORT .*command 2 \(INCR\) failed: WRONGTYPE.*nothing was written/)
    expect(await cli('SET', 'tx:fence', '1')).to.equal('OK')
    await headIs('put tx:fence')
    expect(subjects().slice(0, 3)).to.deep.equal(['put tx:fence', 'put tx:h', 'batch of 2 operations'])
    expect(await io.exists('tx:d', 'tx:e')).to.equal('0')
  })

  it("refuses SET on svc's own tables and BRANCH CREATE of names Git refuses, and keeps serving", async () => {
    expect(await cli('SET', '_pg_schema:people', 'x')).to.equal(`ERR table "_pg_schema" is reserved for svc's own data`)
    expect(await cli('HSET', '_pg_schema:people', 'columns', 'garbage')).to.match(/^ERR table "_pg_schema" is reserved/)
    expect(await cli('EXISTS', '_pg_schema:people')).to.equal('0')
    for (const name of ['x.', 'x.lock', 'HEAD', 'a..b']) {
      expect(await cli('BRANCH', 'CREATE', name), name).to.match(new RegExp(`^ERR invalid branch name "${name.replaceAll('.', '\\.')}"`))
    }
    expect(await cli('BRANCH', 'CREATE', 'ok-branch')).to.equal('OK')
    expect(await cli('SET', 'after', '1')).to.equal('OK')
    await headIs('put default:after')
  })

  it("a TTL is the engine's expiry: an expired key is gone from REST at once, also across a restart", async () => {
    const rest = (id: string): Promise<number> => fetch(`http://127.0.0.1:${server.ready.rest}/api/v1/documents/${id}`).then((r) => r.status)
    // Long enough that a loaded CI machine still reads the key before it expires.
    expect(await cli('SET', 'ttl:short', 'v', 'PX', '1500')).to.equal('OK')
    expect(await rest('ttl:short')).to.equal(200)
    await new Promise((r) => setTimeout(r, 1600))
    expect(await rest('ttl:short')).to.equal(404)
    expect(await cli('GET', 'ttl:short')).to.equal('')

    expect(await cli('SET', 'ttl:restart', 'v', 'PX', '1500')).to.equal('OK')
    expect(await cli('SET', 'ttl:long', 'v', 'EX', '1000')).to.equal('OK')
    expect(await cli('HSET', 'ttl:h', 'f', '1')).to.equal('1')
    expect(await cli('EXPIRE', 'ttl:h', '1000')).to.equal('1')
    expect(await cli('HINCRBY', 'ttl:h', 'f', '1')).to.equal('2')
    io.disconnect()
    server.child.kill('SIGTERM')
    expect((await server.exited).code).to.equal(0)
    await new Promise((r) => setTimeout(r, 1600))
    server = await startServer(['--data-dir', dir, '--http-port', '0', '--redis-port', '0', '--disable-sql'])
    io = new Redis({lazyConnect: true, port: Number(server.ready.redis), stringNumbers: true})
    await io.connect()
    expect(await rest('ttl:restart')).to.equal(404)
    expect(await cli('EXISTS', 'ttl:restart')).to.equal('0')
    // The restart takes seconds on a loaded machine; the TTLs count down through it.
    expect(Number(await cli('TTL', 'ttl:long'))).to.be.within(900, 1000)
    // HINCRBY kept the TTL, as in Redis; SET without KEEPTTL clears it.
    expect(Number(await cli('TTL', 'ttl:h'))).to.be.within(900, 1000)
    expect(await cli('SET', 'ttl:long', 'w')).to.equal('OK')
    expect(await cli('TTL', 'ttl:long')).to.equal('-1')
    expect(await cli('PERSIST', 'ttl:h')).to.equal('1')
    expect(await cli('TTL', 'ttl:h')).to.equal('-1')
  })
})
