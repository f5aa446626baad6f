import {expect} from 'chai'
import {connect, type Socket} from 'node:net'

import {type Engine, nullLogger, openEngine} from '../src/engine/index.js'
import type {RunningServer} from '../src/engine/types.js'
import {Health} from '../src/servers/health.js'
import {createMetrics} from '../src/servers/metrics.js'
import {startRestServer} from '../src/servers/rest/index.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'

const IDLE_MS = 300

/**
 * The REST server tells the idle timeout which connections have a request in flight (the answer
 * not yet written out) instead of the guard counting requests itself: a request that goes silent
 * for longer than the timeout is still answered, an idle connection is still closed.
 */
describe('svc REST idle timeout and requests in flight', function () {
  let db: Engine
  let server: RunningServer

  const open = async (): Promise<{closed: Promise<void>; received: () => string; socket: Socket}> => {
    const socket = connect(server.port, '127.0.0.1')
    await new Promise((r) => socket.once('connect', r))
    let text = ''
    socket.on('data', (d) => (text += d))
    const closed = new Promise<void>((r) => socket.once('close', () => r()))
    return {closed, received: () => text, socket}
  }

  before(async () => {
    db = await openEngine(tempDir(), {logger: nullLogger})
    const metrics = createMetrics(db)
    server = await startRestServer(
      {engine: db, logger: nullLogger, metrics: metrics.connections},
      {health: new Health(db, {startedAt: Date.now(), version: '9.9.9'}), host: '127.0.0.1', metrics, net: {idleTimeoutMs: IDLE_MS}, port: 0},
    )
  })
  after(async () => {
    await server.close()
    await db.close()
    cleanupTempDirs()
  })

  it('answers a PUT whose body comes after a silence of three idle timeouts', async () => {
    const c = await open()
    const body = JSON.stringify({name: 'late'})
    c.socket.write(`PUT /api/v1/documents/users:late HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n`)
    await new Promise((r) => setTimeout(r, IDLE_MS * 3))
    expect(c.socket.destroyed, 'closed while its request was in flight').to.equal(false)
    c.socket.write(body)
    while (!c.received().includes('"users:late"')) await new Promise((r) => setTimeout(r, 20))
    expect(c.received()).to.match(/^HTTP\/1\.1 200 /)
    c.socket.destroy()
  })

  it('closes a connection idle after its answer, and one that never asked', async () => {
    const [used, silent] = [await open(), await open()]
    used.socket.write('GET /api/v1/documents/users:late HTTP/1.1\r\nhost: x\r\n\r\n')
    const started = Date.now()
    await Promise.all([used.closed, silent.closed])
    expect(used.received()).to.match(/^HTTP\/1\.1 200 [\s\S]*"late"/)
    expect(Date.now() - started).to.be.within(IDLE_MS / 2, IDLE_MS * 20)
  })
})
