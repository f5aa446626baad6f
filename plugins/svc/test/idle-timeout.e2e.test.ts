import {expect} from 'chai'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {Redis} from 'ioredis'
import pg from 'pg'

import {open, type Raw, until} from '../../../packages/kit/test/helpers/raw-socket.js'
import {stopServer} from './fuzz/server.js'
import {startServer, type Started} from './helpers/cli.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'

const IDLE_MS = 1000
const ROUNDS = 14 // 300 ms apart: four idle timeouts

// Issue 20: on every server a connection with no traffic (Redis, PostgreSQL) or no request in
// flight (REST) is closed after :idle-timeout-ms, while a client that keeps working is not.
describe('svc idle connections on REST, Redis and PostgreSQL are closed after :idle-timeout-ms, busy ones are not (built CLI, ioredis, node-postgres, raw sockets)', function () {
  this.timeout(60_000)
  let s: Started
  let ports: {pg: number; redis: number; rest: number}
  const held: Raw[] = []

  before(async () => {
    const root = tempDir()
    const net = `:idle-timeout-ms ${IDLE_MS}`
    writeFileSync(join(root, 'config.edn'), `{:data-dir "${join(root, 'data')}" :servers {:rest {:port 0 ${net}} :redis {:port 0 ${net}} :postgresql {:port 0 :username "svc" :password "svc" ${net}}}}\n`)
    s = await startServer(['--config', join(root, 'config.edn'), '--log-level', 'error'])
    ports = s.ready as typeof ports
  })

  afterEach(() => {
    for (const r of held.splice(0)) r.socket.destroy()
  })

  after(async () => {
    await stopServer(s)
    cleanupTempDirs()
  })

  const tick = () => new Promise((r) => setTimeout(r, 300))
  const within = (ms: number, slack = 3000) => expect(ms).to.be.within(IDLE_MS - 100, IDLE_MS + slack)

  it('Redis: an ioredis client silent after PING is closed about :idle-timeout-ms later; one sending PING every 300 ms stays', async () => {
    const opts = {host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, port: ports.redis, retryStrategy: () => null}
    const idle = new Redis(opts)
    const busy = new Redis(opts)
    for (const c of [idle, busy]) c.on('error', () => {})
    try {
      // The busy client works from the moment it is connected: a login on a loaded machine can take longer than the idle timeout.
      let busyClosed = false
      busy.once('close', () => (busyClosed = true))
      const working = (async () => {
        await busy.connect()
        for (let i = 0; i < ROUNDS; i++) {
          expect(await busy.ping()).to.equal('PONG')
          await tick()
        }
      })()
      working.catch(() => {}) // awaited below; this keeps an early failure from being reported as unhandled
      await idle.connect()
      const idleClosed = new Promise<number>((r) => idle.once('close', () => r(Date.now())))
      expect(await idle.ping()).to.equal('PONG')
      const started = Date.now()
      within((await idleClosed) - started)
      await working
      expect(busyClosed, 'the busy client was cut').to.equal(false)
    } finally {
      idle.disconnect()
      busy.disconnect()
    }
  })

  it('PostgreSQL: a node-postgres client idle after a query is closed about :idle-timeout-ms later; one querying every 300 ms stays', async () => {
    const client = () => {
      const c = new pg.Client({database: 'svc', host: '127.0.0.1', password: 'svc', port: ports.pg, user: 'svc'})
      c.on('error', () => {})
      return c
    }
    const idle = client()
    const busy = client()
    try {
      let busyEnded = false
      busy.once('end', () => (busyEnded = true))
      const working = (async () => {
        await busy.connect()
        for (let i = 0; i < ROUNDS; i++) {
          expect((await busy.query('SELECT 1 AS one')).rows).to.deep.equal([{one: 1}])
          await tick()
        }
      })()
      working.catch(() => {}) // awaited below; this keeps an early failure from being reported as unhandled
      await idle.connect()
      const idleEnded = new Promise<number>((r) => idle.once('end', () => r(Date.now())))
      const told = new Promise<{code?: string; message: string}>((r) => idle.once('error', r))
      expect((await idle.query('SELECT 1 AS one')).rows).to.deep.equal([{one: 1}])
      const started = Date.now()
      within((await idleEnded) - started)
      // Told why first, as PostgreSQL's idle_session_timeout does.
      expect(await told).to.include({code: '57P05', message: 'terminating connection due to idle-session timeout'})
      await working
      expect(busyEnded, 'the busy client was cut').to.equal(false)
      const err = (await idle.query('SELECT 1').catch((error: unknown) => error)) as Error
      expect(err).to.be.instanceOf(Error)
    } finally {
      await Promise.all([idle.end().catch(() => {}), busy.end().catch(() => {})])
    }
  })

  it('PostgreSQL: a connection that logged in and then sends nothing is closed, not held by the header timeout', async () => {
    const idle = await open(ports.pg)
    held.push(idle)
    const user = Buffer.from('user\0svc\0database\0svc\0\0')
    const startup = Buffer.alloc(8 + user.length)
    startup.writeInt32BE(startup.length, 0)
    startup.writeInt32BE(196_608, 4)
    user.copy(startup, 8)
    idle.socket.write(startup)
    await until(() => idle.received().length > 0)
    const started = Date.now()
    within((await idle.closed) - started)
  })

  const health = 'GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n'

  it('REST: a connection that never sends a request, and a kept-alive one after its answer, are closed; one asking every 300 ms stays', async () => {
    const started = Date.now()
    const [silent, kept, busy] = await Promise.all([open(ports.rest), open(ports.rest), open(ports.rest)])
    held.push(silent, kept, busy)
    kept.socket.write(health)
    for (let i = 0; i < ROUNDS; i++) {
      busy.socket.write(health)
      await tick()
      expect(busy.socket.destroyed, `closed after ${i + 1} requests`).to.equal(false)
    }
    await until(() => busy.received().split('HTTP/1.1 200').length - 1 === ROUNDS)
    within((await silent.closed) - started)
    expect(silent.received()).to.equal('')
    // Node keeps an answered connection one second past the keep-alive timeout.
    within((await kept.closed) - started, 4000)
    expect(kept.received()).to.match(/^HTTP\/1\.1 200/)
  })
})
