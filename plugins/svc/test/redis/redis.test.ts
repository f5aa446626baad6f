import {expect} from 'chai'
import {execFile} from 'node:child_process'
import {mkdtempSync, rmSync} from 'node:fs'
import {connect, type Socket} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {promisify} from 'node:util'

import {Redis} from 'ioredis'

import {nullLogger, openEngine} from '../../src/engine/index.js'
import {startRedisServer} from '../../src/servers/redis/index.js'
import {type Harness, startHarness} from './harness.js'

const run = promisify(execFile)

async function rejects(p: Promise<unknown>, re: RegExp): Promise<void> {
  try {
    await p
  } catch (error) {
    expect(String((error as Error).message)).to.match(re)
    return
  }
  expect.fail(`expected an error matching ${re}`)
}

/** Sends raw bytes and collects the answer until the server closes, or goes quiet after answering (5 s at most). */
async function raw(port: number, data: Buffer | string, quietMs = 200): Promise<{closed: boolean; text: string}> {
  return new Promise((resolve, reject) => {
    const sock: Socket = connect(port, '127.0.0.1')
    let text = ''
    let closed = false
    let timer: NodeJS.Timeout | undefined
    const done = () => {
      clearTimeout(timer)
      clearTimeout(deadline)
      sock.destroy()
      resolve({closed, text})
    }
    const deadline = setTimeout(done, 5000)
    sock.on('data', (d) => {
      text += d.toString('utf8')
      clearTimeout(timer)
      timer = setTimeout(done, quietMs)
    })
    sock.on('end', () => {
      closed = true
      done()
    })
    sock.on('error', reject)
    sock.on('connect', () => sock.write(data))
  })
}

describe('svc Redis protocol', function () {
  this.timeout(30_000)
  let h: Harness
  let r: Redis

  before(async () => {
    h = await startHarness({pg: false, redisLimits: {maxBulk: 1024 * 1024, maxInline: 4096}})
    r = new Redis({host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, port: h.redis!.port})
    await r.connect()
  })

  after(async () => {
    r?.disconnect()
    await h?.close()
  })

  it('stores strings as documents and reads them back byte for byte', async () => {
    expect(await r.set('greeting', 'hello world')).to.equal('OK')
    expect(await r.get('greeting')).to.equal('hello world')
    expect(await h.engine.get('greeting')).to.deep.include({id: 'default:greeting', value: 'hello world'})
    const bin = Buffer.from([0, 255, 1, 128, 10, 13])
    await r.set('bin:1', bin)
    expect(await r.getBuffer('bin:1')).to.deep.equal(bin)
    expect(await r.get('missing:key')).to.equal(null)
    // A value over the engine's document limit is refused; the connection stays usable.
    // (Quotes double in JSON, so this value is under the frame limit and over the document limit.)
    await rejects(r.set('big:1', '"'.repeat(600 * 1024)), /^ERR document .* bytes; the limit is \d+/)
    await r.set('big:ok', 'y'.repeat(512 * 1024))
    expect(await r.strlen('big:ok')).to.equal(512 * 1024)
  })

  it('SET honours NX, XX and GET; SETNX, GETDEL; TTL of keys without an expiry', async () => {
    expect(await r.set('s:nx', 'a', 'NX')).to.equal('OK')
    expect(await r.set('s:nx', 'b', 'NX')).to.equal(null)
    expect(await r.set('s:xx', 'a', 'XX')).to.equal(null)
    expect(await r.set('s:nx', 'c', 'XX')).to.equal('OK')
    expect(await r.get('s:nx')).to.equal('c')
    expect(await r.setnx('s:nx', 'd')).to.equal(0)
    expect(await r.setnx('s:new', 'd')).to.equal(1)
    expect(await r.ttl('s:nx')).to.equal(-1)
    expect(await r.ttl('s:none')).to.equal(-2)
    expect(await r.getdel('s:nx')).to.equal('c')
    expect(await r.exists('s:nx')).to.equal(0)
    await rejects(r.set('s:bad', 'v', 'EX', 0), /invalid expire time/)
  })

  it('EX, PX, SETEX and TTL follow the engine clock: an expired key is gone for Redis and the engine at once', async () => {
    // The engine's clock, moved by hand, so no assertion depends on how fast the machine is.
    let now = Date.UTC(2030, 0, 1)
    const hc = await startHarness({now: () => now, pg: false})
    const c = new Redis({host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, port: hc.redis!.port})
    try {
      await c.connect()
      expect(await c.set('s:ex', 'v', 'EX', 100)).to.equal('OK')
      expect(await c.ttl('s:ex')).to.equal(100)
      expect(await c.setex('s:setex', 50, 'x')).to.equal('OK')
      expect(await c.pttl('s:setex')).to.equal(50_000)
      await c.set('s:px', 'gone', 'PX', 30)
      now += 30
      expect(await c.get('s:px')).to.equal(null)
      // An expired key disappears from the engine (so from REST and SQL) without being read again.
      await c.set('s:swept', 'soon', 'PX', 50)
      expect(await hc.engine.get('s:swept')).to.not.equal(undefined)
      now += 50
      expect(await hc.engine.get('s:swept')).to.equal(undefined)
      await hc.engine.sweepExpired()
      await hc.engine.flush()
      const latest = (await hc.engine.history('s:swept')).versions[0]
      expect(latest).to.deep.include({doc: null, op: 'delete'})
      expect(latest.meta).to.deep.include({origin: 'expiry'})
      now += 50_000
      expect(await c.ttl('s:ex')).to.equal(50)
      expect(await c.exists('s:setex')).to.equal(0)
    } finally {
      c.disconnect()
      await hc.close()
    }
  })

  it('MSET is one commit; MGET, DEL, EXISTS, TYPE, INCR', async () => {
    const before = (await h.engine.history('m:a')).versions.length
    expect(before).to.equal(0)
    await r.mset('m:a', '1', 'm:b', '2', 'm:c', '3')
    expect(await r.mget('m:a', 'm:b', 'm:zz', 'm:c')).to.deep.equal(['1', '2', null, '3'])
    await h.engine.flush()
    const ha = await h.engine.history('m:a')
    const hc = await h.engine.history('m:c')
    expect(ha.versions[0].commit).to.equal(hc.versions[0].commit)
    expect(await r.exists('m:a', 'm:b', 'm:nope')).to.equal(2)
    expect(await r.del('m:a', 'm:b', 'm:nope')).to.equal(2)
    expect(await r.type('m:c')).to.equal('string')
    expect(await r.type('m:a')).to.equal('none')
    expect(await r.incr('counter:x')).to.equal(1)
    expect(await r.incrby('counter:x', 41)).to.equal(42)
    expect(await r.decr('counter:x')).to.equal(41)
  })

  it('hashes are document fields, visible to the engine as one document', async () => {
    expect(await r.hset('users:1', 'name', 'Ann', 'city', 'Oslo')).to.equal(2)
    expect(await r.hset('users:1', 'name', 'Anna')).to.equal(0)
    expect(await r.hget('users:1', 'name')).to.equal('Anna')
    expect(await r.hmget('users:1', 'name', 'nope', 'city')).to.deep.equal(['Anna', null, 'Oslo'])
    expect(await r.hgetall('users:1')).to.deep.equal({city: 'Oslo', name: 'Anna'})
    expect(await h.engine.get('users:1')).to.deep.equal({city: 'Oslo', id: 'users:1', name: 'Anna'})
    expect(await r.type('users:1')).to.equal('hash')
    expect(await r.hdel('users:1', 'city', 'nope')).to.equal(1)
    expect(await r.hgetall('users:1')).to.deep.equal({name: 'Anna'})
    // A document written by another protocol reads as a hash; numbers come back as text.
    await h.engine.put({age: 30, id: 'users:2', name: 'Bob'})
    expect(await r.hgetall('users:2')).to.deep.equal({age: '30', name: 'Bob'})
    expect(JSON.parse((await r.get('users:2')) as string)).to.deep.equal({age: 30, id: 'users:2', name: 'Bob'})
    await rejects(r.hset('users:1', 'id', 'x'), /reserved/)
  })

  it('lists, sets and sorted sets', async () => {
    expect(await r.rpush('l:1', 'a', 'b')).to.equal(2)
    expect(await r.lpush('l:1', 'z')).to.equal(3)
    expect(await r.lrange('l:1', 0, -1)).to.deep.equal(['z', 'a', 'b'])
    expect(await r.lrange('l:1', -2, 10)).to.deep.equal(['a', 'b'])
    expect(await r.llen('l:1')).to.equal(3)
    expect(await r.lpop('l:1')).to.equal('z')
    expect(await r.rpop('l:1')).to.equal('b')
    expect(await r.rpop('l:1')).to.equal('a')
    expect(await r.exists('l:1')).to.equal(0)
    expect(await r.lpop('l:1')).to.equal(null)

    expect(await r.sadd('set:1', 'x', 'y', 'x')).to.equal(2)
    expect(await r.sismember('set:1', 'x')).to.equal(1)
    expect(await r.sismember('set:1', 'q')).to.equal(0)
    expect((await r.smembers('set:1')).sort()).to.deep.equal(['x', 'y'])
    expect(await r.srem('set:1', 'x', 'q')).to.equal(1)
    expect(await r.smembers('set:1')).to.deep.equal(['y'])

    expect(await r.zadd('z:1', 3, 'c', 1, 'a', 2, 'b')).to.equal(3)
    expect(await r.zrange('z:1', '0', '-1')).to.deep.equal(['a', 'b', 'c'])
    expect(await r.zrange('z:1', '0', '1', 'WITHSCORES')).to.deep.equal(['a', '1', 'b', '2'])
    expect(await r.zscore('z:1', 'b')).to.equal('2')
    expect(await r.zscore('z:1', 'nope')).to.equal(null)
    expect(await r.zadd('z:1', 2.5, 'a')).to.equal(0)
    expect(await r.zrange('z:1', '0', '-1')).to.deep.equal(['b', 'a', 'c'])
    expect(await r.zrem('z:1', 'a', 'zz')).to.equal(1)
    expect(await r.type('z:1')).to.equal('zset')
  })

  it('RENAME in one commit, INCRBYFLOAT, GETRANGE, ZINCRBY, ZRANK, ZCOUNT, ZRANGEBYSCORE', async () => {
    await r.set('rn:a', 'value')
    expect(await r.rename('rn:a', 'rn:b')).to.equal('OK')
    expect(await r.get('rn:a')).to.equal(null)
    expect(await r.get('rn:b')).to.equal('value')
    await h.engine.flush()
    expect((await h.engine.history('rn:a')).versions[0].commit).to.equal((await h.engine.history('rn:b')).versions[0].commit)
    await rejects(r.rename('rn:none', 'rn:c'), /no such key/)
    expect(await r.incrbyfloat('fl:1', '1.5')).to.equal('1.5')
    expect(await r.incrbyfloat('fl:1', '0.25')).to.equal('1.75')
    expect(await r.getrange('rn:b', 1, -2)).to.equal('alu')
    await r.zadd('zs:1', 1, 'a', 5, 'b', 10, 'c')
    expect(await r.zincrby('zs:1', 2, 'a')).to.equal('3')
    expect(await r.zrank('zs:1', 'b')).to.equal(1)
    expect(await r.zrevrank('zs:1', 'b')).to.equal(1)
    expect(await r.zrank('zs:1', 'zz')).to.equal(null)
    expect(await r.zcount('zs:1', '(3', '+inf')).to.equal(2)
    expect(await r.zrangebyscore('zs:1', '-inf', '5', 'WITHSCORES')).to.deep.equal(['a', '3', 'b', '5'])
    expect(await r.zrangebyscore('zs:1', '0', '100', 'LIMIT', '1', '1')).to.deep.equal(['b'])
    expect(await r.zrevrangebyscore('zs:1', '100', '(3')).to.deep.equal(['c', 'b'])
  })

  it('wrong type, wrong arity and unknown commands get Redis error replies; the connection stays usable', async () => {
    await r.rpush('wt:list', 'a')
    await rejects(r.get('wt:list'), /^WRONGTYPE Operation against a key holding the wrong kind of value/)
    await rejects(r.hget('wt:list', 'f'), /^WRONGTYPE/)
    await rejects(r.sadd('wt:list', 'x'), /^WRONGTYPE/)
    await rejects(r.call('get'), /ERR wrong number of arguments for 'get' command/)
    await rejects(r.call('nosuchcmd', 'a', 'b'), /ERR unknown command 'nosuchcmd', with args beginning with: 'a' 'b'/)
    await rejects(r.call('auth', 'pw'), /AUTH.*svc does not support AUTH/)
    // A client configured with a password recognises the reply and keeps working.
    const withPassword = new Redis({host: '127.0.0.1', password: 'unused', port: h.redis!.port})
    const warn = console.warn
    console.warn = () => undefined
    try {
      expect(await withPassword.ping()).to.equal('PONG')
    } finally {
      console.warn = warn
      withPassword.disconnect()
    }
    await rejects(r.incr('greeting'), /not an integer/)
    await rejects(r.call('select', '1'), /DB index is out of range/)
    expect(await r.ping()).to.equal('PONG')
    expect(await r.lrange('wt:list', 0, -1)).to.deep.equal(['a'])
  })

  it('GET reads from Git when a value is not in memory, keeping pipeline order; a bad key is an error reply', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-cold-'))
    const options = {fullText: false, indexCheckIntervalMs: 0, logger: nullLogger}
    let engine = await openEngine(dir, options)
    await Promise.all(Array.from({length: 20}, (_, i) => engine.put({id: `cold:${i}`, value: `v${i}`})))
    await engine.close()
    engine = await openEngine(dir, options)
    const noop = () => undefined
    const server = await startRedisServer({engine, logger: nullLogger, metrics: {connectionClosed: noop, connectionOpened: noop}}, {host: '127.0.0.1', port: 0})
    try {
      // Freshly opened: nothing is cached, so these GETs must wait for git cat-file.
      expect(engine.getRawIfCached('cold:3')).to.equal(false)
      const frame = (k: string) => `*2\r\n$3\r\nGET\r\n$${Buffer.byteLength(k)}\r\n${k}\r\n`
      const keys = ['cold:3', 'cold:nope', 'cold:3', 'bad table:k', 'cold:19']
      const res = await raw(server.port, keys.map(frame).join(''))
      expect(res.text).to.match(/^\$2\r\nv3\r\n\$-1\r\n\$2\r\nv3\r\n-ERR invalid table name "bad table" .*\r\n\$3\r\nv19\r\n$/)
    } finally {
      await server.close()
      await engine.close()
      rmSync(dir, {force: true, recursive: true})
    }
  })

  it("GET's fast path (a multibulk frame, absent keys answered from the key's bytes) answers byte for byte as the general path (inline)", async () => {
    await r.set('fp:present', 'v1')
    await r.set('fp:gone', 'v2')
    await r.del('fp:gone')
    await r.set('nocolon', 'v3')
    await r.set('fp:ключ', 'v4')
    await r.hset('fp:hash', 'f', 'x')
    await r.rpush('fp:list', 'a')
    await r.call('branch', 'create', 'fastpath')
    const keys = ['fp:present', 'fp:gone', 'fp:absent', 'nocolon', 'nocolon2', 'fp:ключ', 'fp:ключ2', 'über:1', 'fp:hash', 'fp:list', 'fp:', ':x', 'a b:c', 'fp:x y']
    keys.push(...Array.from({length: 300}, (_, i) => `fp:${i}`))
    const frame = (k: string) => `*2\r\n$3\r\nGET\r\n$${Buffer.byteLength(k)}\r\n${k}\r\n`
    const inline = (k: string) => `GET "${k}"\r\n`
    for (const [use, at] of [['', 'main'], ['BRANCH USE fastpath\r\n', 'fastpath']]) {
      const asked = h.calls.absentIdBytes ?? 0
      const fast = await raw(h.redis!.port, use + keys.map(frame).join(''))
      const general = await raw(h.redis!.port, use + keys.map(inline).join(''))
      expect(fast.text, at).to.equal(general.text)
      expect(fast.text, at).to.include('$2\r\nv1\r\n$-1\r\n$-1\r\n$2\r\nv3\r\n$-1\r\n$2\r\nv4\r\n$-1\r\n')
      expect(fast.text, at).to.include('WRONGTYPE')
      // The frames did take the byte path (the harness counts engine calls).
      expect((h.calls.absentIdBytes ?? 0) - asked, at).to.be.greaterThan(250)
    }
  })

  it('pipelines many commands and keeps replies in order, errors included', async () => {
    const p = r.pipeline()
    for (let i = 0; i < 200; i++) p.set(`pipe:${i}`, `v${i}`)
    p.call('nosuchcmd')
    for (let i = 0; i < 200; i++) p.get(`pipe:${i}`)
    const res = (await p.exec()) ?? []
    expect(res).to.have.length(401)
    expect(res.slice(0, 200).every(([e, v]) => e === null && v === 'OK')).to.equal(true)
    expect(String(res[200][0])).to.match(/unknown command/)
    expect(res.slice(201).map(([, v]) => v)).to.deep.equal(Array.from({length: 200}, (_, i) => `v${i}`))
  })

  it('MULTI/EXEC runs queued commands in order; DISCARD drops them; a bad queued command aborts EXEC', async () => {
    const res = await r.multi().set('tx:a', '1').incr('tx:a').get('tx:a').exec()
    expect(res).to.deep.equal([
      [null, 'OK'],
      [null, 2],
      [null, '2'],
    ])
    const aborted = await raw(h.redis!.port, 'MULTI\r\nSET tx:b 1\r\nNOSUCH\r\nEXEC\r\nGET tx:b\r\nMULTI\r\nSET tx:c 1\r\nDISCARD\r\nGET tx:c\r\nEXEC\r\n')
    expect(aborted.text).to.equal(
      "+OK\r\n+QUEUED\r\n-ERR unknown command 'NOSUCH'\r\n-EXECABORT Transaction discarded because of previous errors.\r\n$-1\r\n+OK\r\n+QUEUED\r\n+OK\r\n$-1\r\n-ERR EXEC without MULTI\r\n",
    )
  })

  it('KEYS and SCAN with MATCH and COUNT walk the keyspace', async () => {
    await r.mset('scan:a1', '1', 'scan:a2', '2', 'scan:b1', '3')
    expect((await r.keys('scan:a*')).sort()).to.deep.equal(['scan:a1', 'scan:a2'])
    expect((await r.keys('greet*')).sort()).to.deep.equal(['greeting'])
    const seen: string[] = []
    let cursor = '0'
    let rounds = 0
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', 'scan:*', 'COUNT', 1)
      seen.push(...keys)
      cursor = next
      rounds++
    } while (cursor !== '0' && rounds < 100)
    expect(seen.sort()).to.deep.equal(['scan:a1', 'scan:a2', 'scan:b1'])
    expect(rounds).to.be.greaterThan(1)
  })

  it('SEARCH with LIMIT/OFFSET, HISTORY of a key and BRANCH selection', async () => {
    await r.hset('docs:1', 'title', 'the quick brown fox')
    await r.hset('docs:2', 'title', 'a quick red fox')
    await r.hset('docs:3', 'title', 'slow turtle')
    let found: unknown[] = []
    for (let i = 0; i < 200; i++) {
      found = (await r.call('search', 'quick', 'LIMIT', '10', 'TABLE', 'docs')) as unknown[]
      if (found[0] === 2) break
      await new Promise((res) => setTimeout(res, 50))
    }
    expect(found[0]).to.equal(2)
    expect(found).to.have.length(5)
    const page2 = (await r.call('search', 'quick', 'LIMIT', '1', 'OFFSET', '1', 'TABLE', 'docs')) as unknown[]
    expect(page2[0]).to.equal(2)
    expect(page2).to.have.length(3)
    expect([found[1], found[3]]).to.include(page2[1])

    await r.set('hist:k', 'one')
    await r.set('hist:k', 'two')
    await r.del('hist:k')
    const hist = (await r.call('history', 'hist:k')) as unknown[][]
    expect(hist).to.have.length(3)
    const asObj = hist.map((v) => Object.fromEntries(Array.from({length: v.length / 2}, (_, i) => [v[2 * i], v[2 * i + 1]])))
    expect(asObj.map((v) => v.op)).to.deep.equal(['delete', 'put', 'put'])
    expect(asObj.map((v) => v.value)).to.deep.equal([null, 'two', 'one'])
    expect(asObj[1].commit).to.match(/^[0-9a-f]{40}$/)

    expect(await r.call('branch')).to.equal('main')
    expect(await r.call('branch', 'create', 'feature')).to.equal('OK')
    const b = new Redis({host: '127.0.0.1', port: h.redis!.port})
    try {
      expect(await b.call('branch', 'use', 'feature')).to.equal('OK')
      await b.set('greeting', 'on feature')
      expect(await b.get('greeting')).to.equal('on feature')
      expect(await r.get('greeting')).to.equal('hello world')
      await rejects(b.call('branch', 'use', 'nope'), /no such branch/)
    } finally {
      b.disconnect()
    }
  })

  it('speaks RESP3 after HELLO 3 and accepts inline commands', async () => {
    const res = await raw(h.redis!.port, '*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n*2\r\n$3\r\nGET\r\n$8\r\nnone:key\r\n*2\r\n$7\r\nHGETALL\r\n$7\r\nusers:1\r\n')
    expect(res.text.startsWith('%')).to.equal(true)
    expect(res.text).to.include('_\r\n')
    expect(res.text).to.include('%1\r\n$4\r\nname\r\n$4\r\nAnna\r\n')
    const inline = await raw(h.redis!.port, 'PING\r\nSET inline:k "two words"\r\nGET inline:k\r\n')
    expect(inline.text).to.equal('+PONG\r\n+OK\r\n$9\r\ntwo words\r\n')
    const noproto = await raw(h.redis!.port, 'HELLO 4\r\n')
    expect(noproto.text).to.match(/^-NOPROTO/)
  })

  it('a malformed or oversized frame closes only that connection', async () => {
    const bad = await raw(h.redis!.port, '*1\r\n$x\r\n')
    expect(bad.text).to.match(/^-ERR Protocol error/)
    expect(bad.closed).to.equal(true)
    const big = await raw(h.redis!.port, `*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$${2 * 1024 * 1024}\r\n`)
    expect(big.text).to.match(/^-ERR Protocol error: invalid bulk length/)
    expect(big.closed).to.equal(true)
    const longInline = await raw(h.redis!.port, 'PING ' + 'x'.repeat(10_000))
    expect(longInline.text).to.match(/too big inline request/)
    // The ioredis connection opened before is unaffected.
    expect(await r.ping()).to.equal('PONG')
  })

  it('works with the real redis-cli, including its error output', async () => {
    const port = String(h.redis!.port)
    const cli = async (...args: string[]) => (await run('redis-cli', ['-p', port, ...args])).stdout.trim()
    expect(await cli('SET', 'cli:k', 'from cli')).to.equal('OK')
    expect(await cli('GET', 'cli:k')).to.equal('from cli')
    expect(await cli('HSET', 'cli:h', 'f', 'v')).to.equal('1')
    expect(await cli('HGETALL', 'cli:h')).to.equal('f\nv')
    expect(await cli('GET')).to.match(/ERR wrong number of arguments for 'get' command/)
    expect(await cli('INFO', 'server')).to.match(/redis_version:/)
    expect(await cli('COMMAND', 'COUNT')).to.match(/^\d+$/)
    const scanned = (await cli('--scan', '--pattern', 'cli:*')).split('\n').sort()
    expect(scanned).to.deep.equal(['cli:h', 'cli:k'])
    // redis-cli --pipe sends a batch of raw RESP commands in one go.
    const {stdout} = await new Promise<{stdout: string}>((resolve, reject) => {
      const child = execFile('redis-cli', ['-p', port, '--pipe'], (err, out) => (err ? reject(err) : resolve({stdout: out})))
      child.stdin?.end(Array.from({length: 50}, (_, i) => `*3\r\n$3\r\nSET\r\n$${`pipecli:${i}`.length}\r\npipecli:${i}\r\n$1\r\nv\r\n`).join(''))
    })
    expect(stdout).to.match(/errors: 0, replies: 50/)
  })

  it('close() answers commands already running before it ends connections', async () => {
    const h2 = await startHarness({pg: false})
    const c2 = new Redis({host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, port: h2.redis!.port, retryStrategy: () => null})
    c2.on('error', () => undefined)
    await c2.connect()
    const writes = Promise.allSettled(Array.from({length: 20}, (_, i) => c2.set(`close:${i}`, 'v')))
    // Close while the server is executing the pipelined batch (its first write has reached the engine).
    for (let i = 0; i < 500 && !h2.calls.put; i++) await new Promise((r) => setTimeout(r, 2))
    await h2.redis!.close()
    const results = await writes
    expect(results.map((x) => x.status)).to.deep.equal(Array.from({length: 20}, () => 'fulfilled'))
    for (let i = 0; i < 20; i++) expect(await h2.engine.get(`close:${i}`)).to.not.equal(undefined)
    c2.disconnect()
    h2.redis = undefined
    await h2.close()
  })

  it('counts connections in the metrics and survives many clients', async () => {
    const clients = Array.from({length: 10}, () => new Redis({host: '127.0.0.1', port: h.redis!.port}))
    await Promise.all(clients.map((c, i) => c.set(`conc:${i}`, String(i))))
    expect(h.open.redis).to.be.at.least(11)
    await Promise.all(clients.map((c) => c.quit()))
    for (let i = 0; i < 250 && h.open.redis > 1; i++) await new Promise((res) => setTimeout(res, 20))
    expect(h.open.redis).to.equal(1)
    expect(await r.mget(...Array.from({length: 10}, (_, i) => `conc:${i}`))).to.deep.equal(Array.from({length: 10}, (_, i) => String(i)))
  })
})
