import {expect} from 'chai'
import {execFile} from 'node:child_process'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {promisify} from 'node:util'

import pg from 'pg'

import {getOwn as get, open, type Raw, trickle, until} from '../../../packages/kit/test/helpers/raw-socket.js'
import {startServer, type Started} from './helpers/cli.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'
import {stopServer} from './fuzz/server.js'

const run = promisify(execFile)
const MAX = 2
const HEADER_MS = 1500

// Issue 20: each server serves at most :max-connections clients (one more gets the protocol's
// refusal at once), and a client that trickles a request byte by byte is dropped after
// :header-timeout-ms while the others keep getting answers.
describe('svc connection limits and slow clients on REST, Redis and PostgreSQL (built CLI, raw sockets, redis-cli, psql, node-postgres)', function () {
  this.timeout(60_000)
  let s: Started
  let ports: {pg: number; redis: number; rest: number}
  const held: Raw[] = []
  const clients: pg.Client[] = []

  async function pgClient(): Promise<pg.Client> {
    const c = new pg.Client({database: 'svc', host: '127.0.0.1', password: 'svc', port: ports.pg, user: 'svc'})
    c.on('error', () => {})
    await c.connect()
    clients.push(c)
    return c
  }

  before(async () => {
    const root = tempDir()
    const net = `:max-connections ${MAX} :header-timeout-ms ${HEADER_MS}`
    writeFileSync(join(root, 'config.edn'), `{:data-dir "${join(root, 'data')}" :servers {:rest {:port 0 ${net}} :redis {:port 0 ${net}} :postgresql {:port 0 :username "svc" :password "svc" ${net}}}}\n`)
    s = await startServer(['--config', join(root, 'config.edn'), '--log-level', 'error'])
    ports = s.ready as typeof ports
  })

  afterEach(async () => {
    for (const r of held.splice(0)) r.socket.destroy()
    await Promise.all(clients.splice(0).map((c) => c.end().catch(() => {})))
    await new Promise((r) => setTimeout(r, 100))
  })

  after(async () => {
    await stopServer(s)
    cleanupTempDirs()
  })

  it('Redis: the client past :max-connections gets "-ERR max number of clients reached"; a freed slot serves again', async () => {
    for (let i = 0; i < MAX; i++) {
      const r = await open(ports.redis)
      held.push(r)
      r.socket.write('PING\r\n')
      await until(() => r.received() === '+PONG\r\n')
    }
    const extra = await open(ports.redis)
    await extra.closed
    expect(extra.received()).to.equal('-ERR max number of clients reached\r\n')
    const cli = await run('redis-cli', ['-p', String(ports.redis), 'PING']).catch((error: {stdout: string}) => error)
    expect(cli.stdout).to.include('max number of clients reached')
    held.pop()!.socket.destroy()
    await new Promise((r) => setTimeout(r, 100))
    expect((await run('redis-cli', ['-p', String(ports.redis), 'PING'])).stdout.trim()).to.equal('PONG')
  })

  it('Redis: a command trickled one byte every 300 ms is dropped after the header timeout while another client keeps getting PONG', async () => {
    const slow = await open(ports.redis)
    held.push(slow)
    const started = Date.now()
    const sent = trickle(slow, '*2\r\n$4\r\nECHO\r\n$40\r\n' + 'x'.repeat(40) + '\r\n', 300)
    let answers = 0
    while (!slow.socket.destroyed && Date.now() - started < 8000) {
      expect((await run('redis-cli', ['-p', String(ports.redis), 'PING'])).stdout.trim()).to.equal('PONG')
      answers++
      if (await Promise.race([slow.closed.then(() => true), new Promise((r) => setTimeout(() => r(false), 100))])) break
    }
    const closedAt = await slow.closed
    expect(closedAt - started, 'dropped about the header timeout after its first byte').to.be.within(HEADER_MS - 100, HEADER_MS + 3000)
    expect(await sent, 'it was still sending when dropped').to.be.below(50)
    expect(slow.received(), 'the half-sent command got no reply').to.equal('')
    expect(answers).to.be.greaterThan(0)
  })

  it('Redis: an idle client between commands is not cut by the header timeout', async () => {
    const r = await open(ports.redis)
    held.push(r)
    r.socket.write('PING\r\n')
    await new Promise((res) => setTimeout(res, HEADER_MS + 1000))
    r.socket.write('PING\r\n')
    await until(() => r.received() === '+PONG\r\n+PONG\r\n')
  })

  it('PostgreSQL: the client past :max-connections gets 53300 (node-postgres and psql); a freed slot serves again', async () => {
    for (let i = 0; i < MAX; i++) await pgClient()
    const err = (await pgClient().catch((error: unknown) => error)) as {code?: string; message: string}
    expect(err.code).to.equal('53300')
    expect(err.message).to.equal('sorry, too many clients already')
    const psql = await run('psql', ['-h', '127.0.0.1', '-p', String(ports.pg), '-U', 'svc', '-X', '-c', 'SELECT 1'], {env: {...process.env, PGPASSWORD: 'svc'}}).catch((error: {code: number; stderr: string}) => error)
    expect(psql.stderr).to.include('too many clients')
    expect((await clients[0].query('SELECT 1 AS one')).rows).to.deep.equal([{one: 1}])
    await clients.pop()!.end()
    await new Promise((r) => setTimeout(r, 100))
    const again = await run('psql', ['-h', '127.0.0.1', '-p', String(ports.pg), '-U', 'svc', '-X', '-At', '-c', 'SELECT 1'], {env: {...process.env, PGPASSWORD: 'svc'}})
    expect(again.stdout.trim()).to.equal('1')
  })

  it('PostgreSQL: a startup packet trickled byte by byte is dropped after the header timeout while another client queries', async () => {
    const user = Buffer.from('user\0svc\0database\0svc\0\0')
    const startup = Buffer.alloc(8 + user.length)
    startup.writeInt32BE(startup.length, 0)
    startup.writeInt32BE(196_608, 4)
    user.copy(startup, 8)
    const slow = await open(ports.pg)
    held.push(slow)
    const started = Date.now()
    const sent = trickle(slow, startup, 300)
    const c = await pgClient()
    let answers = 0
    while (!slow.socket.destroyed && Date.now() - started < 8000) {
      expect((await c.query('SELECT 1 AS one')).rows).to.deep.equal([{one: 1}])
      answers++
      await new Promise((r) => setTimeout(r, 100))
    }
    const closedAt = await slow.closed
    expect(closedAt - started).to.be.within(HEADER_MS - 100, HEADER_MS + 3000)
    expect(await sent).to.be.below(startup.length)
    expect(answers).to.be.greaterThan(0)
  })

  it('PostgreSQL: a connection that never logs in is dropped after the header timeout', async () => {
    const silent = await open(ports.pg)
    held.push(silent)
    const started = Date.now()
    expect((await silent.closed) - started).to.be.within(HEADER_MS - 100, HEADER_MS + 3000)
  })

  it('REST: the connection past :max-connections gets 503 too_many_connections; a freed slot serves again', async () => {
    for (let i = 0; i < MAX; i++) {
      const r = await open(ports.rest)
      held.push(r)
      r.socket.write('GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n')
      await until(() => r.received().includes('\r\n\r\n'))
    }
    const refused = await get(ports.rest, '/healthz')
    expect(refused.status).to.equal(503)
    expect(JSON.parse(refused.body).error.code).to.equal('too_many_connections')
    held.pop()!.socket.destroy()
    await new Promise((r) => setTimeout(r, 100))
    expect((await get(ports.rest, '/healthz')).status).to.equal(200)
  })

  it('REST: headers trickled one line every 300 ms are answered 408 and closed after the header timeout while another client gets answers', async () => {
    const slow = await open(ports.rest)
    held.push(slow)
    const started = Date.now()
    slow.socket.write('GET /healthz HTTP/1.1\r\nhost: x\r\n')
    const sent = trickle(slow, 'x-slow: 1\r\n'.repeat(40), 300)
    let answers = 0
    while (!slow.socket.destroyed && Date.now() - started < 8000) {
      expect((await get(ports.rest, '/healthz')).status).to.equal(200)
      answers++
      await new Promise((r) => setTimeout(r, 100))
    }
    const closedAt = await slow.closed
    expect(closedAt - started).to.be.within(HEADER_MS - 100, HEADER_MS + 3000)
    expect(slow.received()).to.match(/^HTTP\/1\.1 408/)
    expect(await sent).to.be.below(400)
    expect(answers).to.be.greaterThan(0)
  })
})
