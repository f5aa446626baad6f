/**
 * Issue 24: a client that pipelines many large reads and never reads the replies must not make the
 * server buffer them all (a few such clients would exhaust its memory). Its pipeline waits while
 * 8 MB of its replies are unread; it gets every reply, in order, once it reads. Through the built
 * CLI; the slow Redis client is a raw socket (no Redis driver sends without reading), the slow
 * PostgreSQL client node-postgres's own socket after login, written to directly.
 */
import {expect} from 'chai'
import {execFile} from 'node:child_process'
import {readFileSync} from 'node:fs'
import {connect} from 'node:net'
import {join} from 'node:path'
import {promisify} from 'node:util'

import pg from 'pg'

import {startServer, type Started} from './helpers/cli.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'

const run = promisify(execFile)
const rssMb = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024

describe('svc Redis and PostgreSQL: a client that never reads its replies cannot grow the server without bound (built CLI)', function () {
  this.timeout(120_000)
  let s: Started | undefined
  after(() => {
    if (s?.child.exitCode === null) s.child.kill('SIGKILL')
    cleanupTempDirs()
  })

  it('holds a 360 MB pipeline of GETs at about 8 MB of unread replies, keeps serving others, and sends every reply once the client reads', async () => {
    s = await startServer(['--data-dir', join(tempDir(), 'data'), '--http-port', '0', '--redis-port', '0', '--disable-sql', '--log-level', 'error'])
    const port = Number(s.ready.redis)
    const value = 'v'.repeat(900 * 1024)
    const setter = connect(port, '127.0.0.1')
    await new Promise((resolve) => setter.once('connect', resolve))
    setter.write(`*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$${value.length}\r\n${value}\r\n`)
    expect((await new Promise<Buffer>((resolve) => setter.once('data', resolve))).toString()).to.equal('+OK\r\n')
    setter.destroy()
    const pid = s.child.pid as number
    const before = rssMb(pid)

    const n = 400
    const slow = connect(port, '127.0.0.1')
    slow.pause()
    await new Promise((resolve) => slow.once('connect', resolve))
    slow.write('*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n'.repeat(n))
    // Watch the server while it runs what it will of the pipeline (unbounded, it grew about 45 MB/s here).
    let grown = 0
    for (let i = 0; i < 16; i++) {
      await new Promise((resolve) => setTimeout(resolve, 500))
      grown = Math.max(grown, rssMb(pid) - before)
    }
    expect(grown, `server RSS grew ${grown.toFixed(0)} MB for a client that reads nothing`).to.be.lessThan(100)
    expect((await run('redis-cli', ['-p', String(port), 'PING'])).stdout.trim()).to.equal('PONG')

    // Reading now brings every reply.
    const header = `$${value.length}\r\n`
    const want = n * (header.length + value.length + 2)
    let got = 0
    let first = ''
    await new Promise<void>((resolve, reject) => {
      slow.on('data', (c: Buffer) => {
        if (first.length < header.length) first += c.toString('latin1', 0, header.length)
        got += c.length
        if (got >= want) resolve()
      })
      slow.on('error', reject)
      slow.resume()
    })
    expect(first.slice(0, header.length)).to.equal(header)
    expect(got).to.equal(want)
    slow.destroy()
    s.child.kill('SIGTERM')
    expect((await s.exited).code).to.equal(0)
  })

  it('PostgreSQL: holds 400 pipelined queries of a 900 KB row at about 8 MB of unread answers, and answers others meanwhile', async () => {
    s = await startServer(['--data-dir', join(tempDir(), 'data'), '--http-port', '0', '--redis-port', '0', '--pg-port', '0', '--log-level', 'error'])
    const ports = s.ready as {pg: number; rest: number}
    await fetch(`http://127.0.0.1:${ports.rest}/api/v1/documents/t:big`, {body: JSON.stringify({value: 'v'.repeat(900 * 1024)}), method: 'PUT'})
    const config = {database: 'svc', host: '127.0.0.1', password: 'svc', port: ports.pg, user: 'svc'}
    const slow = new pg.Client(config)
    slow.on('error', () => {})
    await slow.connect()
    const pid = s.child.pid as number
    const before = rssMb(pid)
    // Simple Query messages written straight to the logged-in socket, which then reads nothing.
    const stream = (slow as unknown as {connection: {stream: import('node:net').Socket}}).connection.stream
    stream.pause()
    stream.removeAllListeners('data')
    const sql = Buffer.from('SELECT * FROM t\0')
    const msg = Buffer.alloc(5 + sql.length)
    msg.write('Q')
    msg.writeInt32BE(4 + sql.length, 1)
    sql.copy(msg, 5)
    stream.write(Buffer.concat(Array.from({length: 400}, () => msg)))
    let grown = 0
    for (let i = 0; i < 16; i++) {
      await new Promise((resolve) => setTimeout(resolve, 500))
      grown = Math.max(grown, rssMb(pid) - before)
    }
    expect(grown, `server RSS grew ${grown.toFixed(0)} MB for a client that reads nothing`).to.be.lessThan(70)
    const other = new pg.Client(config)
    await other.connect()
    expect((await other.query("SELECT length(value) AS n FROM t WHERE id = 'big'")).rows).to.deep.equal([{n: 921_600}])
    await other.end()
    stream.destroy()
    s.child.kill('SIGTERM')
    expect((await s.exited).code).to.equal(0)
  })

  it('REST: 200 pipelined listings of 900 KB documents from a client that reads nothing are built a few at a time, others are answered, every answer arrives once it reads', async () => {
    s = await startServer(['--data-dir', join(tempDir(), 'data'), '--http-port', '0', '--disable-redis', '--disable-sql', '--log-level', 'error'])
    const port = Number(s.ready.rest)
    const blob = 'x'.repeat(900 * 1024)
    for (const k of ['a', 'b']) {
      const r = await fetch(`http://127.0.0.1:${port}/api/v1/documents/big:${k}`, {body: JSON.stringify({blob}), headers: {'content-type': 'application/json'}, method: 'PUT'})
      expect(r.status).to.equal(200)
    }
    const pid = s.child.pid as number
    const before = rssMb(pid)
    const n = 200
    const slow = connect(port, '127.0.0.1')
    slow.pause()
    await new Promise((resolve) => slow.once('connect', resolve))
    slow.write('GET /api/v1/documents?table=big HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(n))
    let grown = 0
    for (let i = 0; i < 12; i++) {
      await new Promise((resolve) => setTimeout(resolve, 500))
      grown = Math.max(grown, rssMb(pid) - before)
    }
    // Unbounded, all 200 answers (360 MB) were built at once.
    expect(grown, `server RSS grew ${grown.toFixed(0)} MB for a client that reads nothing`).to.be.lessThan(100)
    expect((await run('curl', ['-s', `http://127.0.0.1:${port}/healthz`])).stdout).to.include('ok')
    let text = ''
    await new Promise<void>((resolve, reject) => {
      let statuses = 0
      slow.on('data', (c: Buffer) => {
        // 14 characters of the previous chunk: a status line split between chunks counts once.
        const seen = text.slice(-14) + c.toString('latin1')
        statuses += (seen.match(/HTTP\/1\.1 200 OK/g) ?? []).length
        text = seen.slice(-64)
        if (statuses === n && text.endsWith(']}')) resolve()
      })
      slow.on('error', reject)
      slow.resume()
    })
    slow.destroy()
    s.child.kill('SIGTERM')
    expect((await s.exited).code).to.equal(0)
  })
})
