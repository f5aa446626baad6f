/**
 * Issue 24: one Redis reply is bounded (`:max-reply-bytes`, default 64 MiB). An MGET, HGETALL,
 * LRANGE, SMEMBERS or KEYS whose reply would pass it answers an error that says what to do,
 * instead of the server building it whole for every other client's cost; MGET stops loading as
 * soon as it passes the bound. The connection and everything stored stay as they were. Through
 * the built CLI with redis-cli and ioredis.
 */
import {expect} from 'chai'
import {execFile} from 'node:child_process'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {promisify} from 'node:util'

import {Redis} from 'ioredis'

import {startServer, type Started} from './helpers/cli.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'

const run = promisify(execFile)
const LIMIT = 100_000
const big = (c: string): string => c.repeat(30_000)

describe('svc Redis: a reply over :max-reply-bytes is an error, the connection and data stay (built CLI, redis-cli, ioredis)', function () {
  this.timeout(120_000)
  let s: Started
  let redis: Redis
  before(async () => {
    const dir = tempDir()
    writeFileSync(join(dir, 'config.edn'), `{:servers {:rest {:enabled false} :postgresql {:enabled false} :redis {:enabled true :port 0 :max-reply-bytes ${LIMIT}}}}\n`)
    s = await startServer(['--data-dir', join(dir, 'data'), '--log-level', 'error'], {cwd: dir})
    redis = new Redis({host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, port: Number(s.ready.redis)})
    await redis.connect()
    for (const c of 'abcde') await redis.set(`v:${c}`, big(c))
    await redis.hset('h:big', Object.fromEntries(Array.from({length: 5}, (_, i) => [`f${i}`, big(String(i))])))
    await redis.rpush('l:big', ...Array.from({length: 5}, (_, i) => big(String(i))))
    await redis.sadd('s:big', ...Array.from({length: 5}, (_, i) => big(String(i))))
  })
  after(async () => {
    redis?.disconnect()
    // Stopped, not killed: a killed server's git children go on writing into the directory removed next.
    if (s && s.child.exitCode === null) {
      s.child.kill('SIGTERM')
      await s.exited
    }
    cleanupTempDirs()
  })

  const refusal = (p: Promise<unknown>): Promise<string> => p.then(() => 'answered', (error: Error) => error.message)

  it('ioredis: MGET, HGETALL, LRANGE and SMEMBERS under the bound answer; over it they are errors naming the limit and what to do', async () => {
    expect(await redis.mget('v:a', 'v:b', 'v:none')).to.deep.equal([big('a'), big('b'), null])
    for (const p of [redis.mget('v:a', 'v:b', 'v:c', 'v:d', 'v:e'), redis.hgetall('h:big'), redis.lrange('l:big', 0, -1), redis.smembers('s:big')]) {
      const message = await refusal(p)
      expect(message).to.include('reply too large').and.include(`${LIMIT} bytes`).and.include(':max-reply-bytes').and.include('SCAN')
    }
    // A range of the list that fits answers; the same connection goes on serving.
    expect(await redis.lrange('l:big', 0, 1)).to.deep.equal([big('0'), big('1')])
    expect(await redis.ping()).to.equal('PONG')
    // Nothing stored changed.
    expect(await redis.strlen('v:e')).to.equal(30_000)
    expect(await redis.hlen('h:big')).to.equal(5)
    expect(await redis.llen('l:big')).to.equal(5)
  })

  it('ioredis: inside MULTI the EXEC reply is bounded as a whole, and the queued writes still happen', async () => {
    const out = await redis.multi().set('v:x', 'x').mget('v:a', 'v:b').mget('v:c', 'v:d').exec().then((r) => JSON.stringify(r), (error: Error) => error.message)
    expect(out).to.include('reply too large')
    expect(await redis.get('v:x')).to.equal('x')
  })

  it('redis-cli: MGET over the bound prints the error, a pipeline behind it is answered in order', async () => {
    const port = String(s.ready.redis)
    const over = await run('redis-cli', ['-p', port, 'MGET', 'v:a', 'v:b', 'v:c', 'v:d'])
    expect(over.stdout).to.include('ERR reply too large')
    const {stdout} = await run('bash', ['-c', `printf 'MGET v:a v:b v:c v:d\\r\\nGET v:none\\r\\nPING\\r\\n' | redis-cli -p ${port}`])
    expect(stdout.trim().split('\n').slice(-2)).to.deep.equal(['', 'PONG'])
    expect(stdout).to.include('reply too large')
  })
})
