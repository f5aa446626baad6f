import {expect} from 'chai'
import fc from 'fast-check'
import {connect, type Socket} from 'node:net'
import {join} from 'node:path'

import {Redis} from 'ioredis'

import {startServer, type Started} from '../helpers/cli.js'
import {cleanupTempDirs, tempDir} from '../helpers/tmp.js'
import {stopServer} from './server.js'
import {FUZZ_SEED, fuzzRuns, fuzzTimeout} from './runs.js'

const SEED = FUZZ_SEED

/** A raw connection that collects every byte the server sends. */
async function raw(port: number): Promise<{closed: () => boolean; received: () => Buffer; socket: Socket}> {
  const socket = connect(port, '127.0.0.1')
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve)
    socket.once('error', reject)
  })
  let got = Buffer.alloc(0)
  let closed = false
  socket.on('data', (d: Buffer) => (got = Buffer.concat([got, d])))
  socket.on('close', () => (closed = true))
  socket.on('error', () => {})
  return {closed: () => closed, received: () => got, socket}
}

async function waitUntil(check: () => boolean, ms: number): Promise<boolean> {
  const until = Date.now() + ms
  while (Date.now() < until) {
    if (check()) return true
    await new Promise((r) => setTimeout(r, 5))
  }
  return check()
}

function resp(args: string[]): string {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`
}

describe('svc Redis protocol: random and mutated RESP frames get an error reply or a wait, never a crash (built CLI, raw socket, ioredis)', function () {
  this.timeout(fuzzTimeout(180_000))
  let s: Started
  let port: number
  let checker: Redis

  before(async () => {
    s = await startServer(['--data-dir', join(tempDir(), 'data'), '--http-port', '0', '--redis-port', '0', '--disable-sql', '--log-level', 'error'])
    port = (s.ready as {redis: number}).redis
    checker = new Redis({host: '127.0.0.1', maxRetriesPerRequest: 0, port})
    await checker.set('kept', 'stored before the fuzzing')
    await checker.hset('kept:h', {a: '1', b: '2'})
  })

  after(async () => {
    checker?.disconnect()
    await stopServer(s)
    cleanupTempDirs()
  })

  async function stillServing(): Promise<void> {
    expect(s.child.exitCode, `server exited; stderr: ${s.stderr()}`).to.equal(null)
    expect(await checker.ping()).to.equal('PONG')
    expect(await checker.get('kept')).to.equal('stored before the fuzzing')
    expect(await checker.hgetall('kept:h')).to.deep.equal({a: '1', b: '2'})
  }

  it('answers mutated frames (bad, negative and huge lengths, truncation, junk, inline commands) with an error or waits for more (fast-check, fixed seed)', async () => {
    const valid = fc.constantFrom(resp(['PING']), resp(['GET', 'kept']), resp(['SET', 'fuzz:k', 'v']), resp(['HSET', 'fuzz:h', 'f', 'v']), 'PING\r\n', 'GET kept\r\n')
    const mutation = fc.oneof(
      fc.constantFrom('*-5\r\n', '*99999999999\r\n', '$-7\r\n', '*1\r\n$99999999999\r\n', '*1\r\n$-1\r\n', '*2\r\n$3\r\nGET\r\n$4\r\nke', '*1\r\n$4\r\nPING\r\n\r\n', '*0\r\n', '*1\r\n:1\r\n', '%1\r\n+a\r\n+b\r\n', 'HELLO 3\r\n', '"unterminated\r\n', '\r\n\r\n', `*1\r\n$${2 ** 31}\r\n`, '*3\r\n$3\r\nSET\r\n$1\r\n_\r\n$1\r\nx\r\n'),
      fc.uint8Array({maxLength: 48}).map((b) => Buffer.from(b).toString('latin1')),
      valid.chain((v) => fc.nat({max: v.length}).map((cut) => v.slice(0, cut))),
      valid.chain((v) => fc.tuple(fc.nat({max: v.length - 1}), fc.integer({max: 255, min: 0})).map(([i, c]) => v.slice(0, i) + String.fromCharCode(c) + v.slice(i + 1))),
    )
    const outcomes = {closed: 0, error: 0, reply: 0, waiting: 0}
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(mutation, valid), {maxLength: 4, minLength: 1}), async (frames) => {
        const c = await raw(port)
        c.socket.write(Buffer.from(frames.join(''), 'latin1'))
        await waitUntil(() => c.received().length > 0 || c.closed(), 300)
        const text = c.received().toString('latin1')
        if (text.includes('-ERR') || text.includes('-WRONG')) outcomes.error++
        else if (text.length > 0) outcomes.reply++
        else if (c.closed()) outcomes.closed++
        else outcomes.waiting++
        c.socket.destroy()
        await stillServing()
      }),
      {numRuns: fuzzRuns(100), seed: SEED},
    )
    if (process.env.FUZZ_REPORT) console.log('redis mutated frames', outcomes)
    expect(outcomes.error, JSON.stringify(outcomes)).to.be.greaterThan(0)
  })

  it('gives the same replies to a pipeline split at any byte as to the pipeline sent whole (fast-check, fixed seed)', async () => {
    const commands = fc.array(fc.constantFrom(['PING'], ['GET', 'kept'], ['SET', 'split:k', 'v1'], ['INCR', 'split:n'], ['GET', 'split:k'], ['HGET', 'kept:h', 'a'], ['DEL', 'split:n']), {maxLength: 6, minLength: 1})
    await fc.assert(
      fc.asyncProperty(commands, fc.array(fc.nat(), {maxLength: 8}), async (cmds, cuts) => {
        const bytes = Buffer.from(cmds.map((c) => resp(c)).join(''))
        await checker.del('split:n')
        const whole = await raw(port)
        whole.socket.write(bytes)
        const expected = cmds.length
        await waitUntil(() => countReplies(whole.received()) >= expected, 10_000)
        whole.socket.destroy()
        await checker.del('split:n')
        const split = await raw(port)
        const at = [...new Set(cuts.map((c) => c % bytes.length))].sort((a, b) => a - b)
        let from = 0
        for (const cut of [...at, bytes.length]) {
          split.socket.write(bytes.subarray(from, cut))
          from = cut
          await new Promise((r) => setImmediate(r))
        }
        await waitUntil(() => countReplies(split.received()) >= expected, 10_000)
        split.socket.destroy()
        expect(split.received().toString()).to.equal(whole.received().toString())
      }),
      {numRuns: fuzzRuns(60), seed: SEED},
    )
    await stillServing()
  })

  it('refuses a bulk length past the limit with an error instead of buffering it', async () => {
    const c = await raw(port)
    c.socket.write('*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2147483647\r\n')
    expect(await waitUntil(() => c.received().length > 0 || c.closed(), 10_000), 'no answer to a 2 GB bulk length').to.equal(true)
    expect(c.received().toString()).to.match(/^-ERR/)
    c.socket.destroy()
    await stillServing()
  })
})

/** Top-level RESP2 replies in `b` (simple, error, integer, bulk, arrays of those). */
function countReplies(b: Buffer): number {
  const s = b.toString('latin1')
  let i = 0
  let n = 0
  const skipOne = (): boolean => {
    const nl = s.indexOf('\r\n', i)
    if (nl < 0) return false
    const head = s[i]
    const num = Number(s.slice(i + 1, nl))
    i = nl + 2
    if (head === '$' && num >= 0) {
      if (s.length < i + num + 2) return false
      i += num + 2
    } else if (head === '*' && num > 0) {
      for (let k = 0; k < num; k++) if (!skipOne()) return false
    }
    return true
  }
  while (i < s.length && skipOne()) n++
  return n
}
