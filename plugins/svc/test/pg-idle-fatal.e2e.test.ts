/**
 * PostgreSQL's idle timeouts as node-postgres sees them: a session idle inside a transaction ends
 * with FATAL 25P03 (idle_in_transaction_session_timeout) and its transaction rolled back, one idle
 * outside with FATAL 57P05 (idle_session_timeout); and the FATAL reaches the client even when
 * answers it has not read yet are still queued before it (the socket is ended, not destroyed).
 * Through the built CLI, with svc's one :idle-timeout-ms playing both settings.
 */
import {expect} from 'chai'
import {writeFileSync} from 'node:fs'
import type {Socket} from 'node:net'
import {join} from 'node:path'

import pg from 'pg'

import {stopServer} from './fuzz/server.js'
import {startServer, type Started} from './helpers/cli.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'

// Two seconds: under a loaded CI machine one second once passed between the login and the first statement.
const IDLE_MS = 2000

async function until(check: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out waiting for the server to close the idle connection')
    await new Promise((r) => setTimeout(r, 10))
  }
}

describe('svc PostgreSQL: idle sessions get FATAL 25P03 or 57P05, delivered before the close (built CLI, node-postgres)', function () {
  this.timeout(60_000)
  let s: Started
  let ports: {pg: number; rest: number}
  const open: pg.Client[] = []

  const client = async (): Promise<pg.Client> => {
    const c = new pg.Client({database: 'svc', host: '127.0.0.1', password: 'svc', port: ports.pg, user: 'svc'})
    open.push(c)
    // After the FATAL, node-postgres also reports the closed connection: only the first error is asserted.
    c.on('error', () => {})
    await c.connect()
    return c
  }
  /** The first error the client is told while it runs no query (node-postgres emits it as 'error'). */
  const told = (c: pg.Client) => new Promise<{code?: string; message: string}>((resolve) => c.once('error', resolve))

  before(async () => {
    const root = tempDir()
    writeFileSync(join(root, 'config.edn'), `{:data-dir "${join(root, 'data')}" :servers {:rest {:port 0} :redis {:enabled false} :postgresql {:port 0 :username "svc" :password "svc" :idle-timeout-ms ${IDLE_MS}}}}\n`)
    s = await startServer(['--config', join(root, 'config.edn'), '--log-level', 'debug'])
    ports = s.ready as typeof ports
  })

  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.end().catch(() => {})))
  })

  after(async () => {
    await stopServer(s)
    cleanupTempDirs()
  })

  it('a session idle inside a transaction gets 25P03 and nothing it wrote is kept', async () => {
    const setup = await client()
    await setup.query('CREATE TABLE notes (id text PRIMARY KEY, body text)')
    await setup.end()
    const c = await client()
    const error = told(c)
    await c.query('BEGIN')
    await c.query("INSERT INTO notes (id, body) VALUES ('n1', 'written in the transaction')")
    expect(await error).to.include({code: '25P03', message: 'terminating connection due to idle-in-transaction timeout'})
    const other = await client()
    expect((await other.query('SELECT count(*)::int AS n FROM notes')).rows).to.deep.equal([{n: 0}])
  })

  it('a session whose unread answers are still queued gets them all, then 57P05', async () => {
    // About 18 MB of answers: more than loopback's socket buffers hold, so the server keeps some queued.
    const value = 'v'.repeat(900 * 1024)
    for (let i = 0; i < 20; i++) {
      const r = await fetch(`http://127.0.0.1:${ports.rest}/api/v1/documents/big:${i}`, {body: JSON.stringify({value}), method: 'PUT'})
      expect(r.status).to.equal(200)
    }
    const closings = () => s.stderr().split('closing connection after timeout').length - 1
    const closedBefore = closings()
    const c = await client()
    const error = told(c)
    const stream = (c as unknown as {connection: {stream: Socket}}).connection.stream
    stream.pause()
    const answer = c.query('SELECT id, value FROM big')
    // The client reads nothing, so the server's socket makes no progress and its idle timeout
    // fires with most of the answer still queued in the server (its debug log says when).
    // Reading resumes then, within the close's grace (2 s).
    await until(() => closings() > closedBefore, 30_000)
    stream.resume()
    const rows = (await answer).rows as Array<{value: string}>
    expect(rows).to.have.length(20)
    expect(rows.every((r) => r.value === value)).to.equal(true)
    expect(await error).to.include({code: '57P05', message: 'terminating connection due to idle-session timeout'})
  })
})
