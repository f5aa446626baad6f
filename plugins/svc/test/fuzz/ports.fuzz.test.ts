import {expect} from 'chai'
import fc from 'fast-check'
import {connect} from 'node:net'
import {join} from 'node:path'

import {Redis} from 'ioredis'
import pg from 'pg'

import {startServer, type Started} from '../helpers/cli.js'
import {cleanupTempDirs, tempDir} from '../helpers/tmp.js'
import {stopServer} from './server.js'
import {FUZZ_SEED, fuzzRuns, fuzzTimeout} from './runs.js'

const SEED = FUZZ_SEED

/** Sends `bytes` on a new connection and closes it after a short while (or when the server does). */
function blast(port: number, bytes: Uint8Array): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(Buffer.from(bytes)))
    const done = (): void => {
      socket.destroy()
      resolve()
    }
    socket.on('error', done)
    socket.on('close', done)
    socket.setTimeout(200, done)
    socket.resume()
  })
}

// Issue 20: random bytes to every listening port of `svc server`; after each round, a correct
// request on each protocol still answers and the stored data is unchanged.
describe('svc server: random bytes on every port, then correct requests still answer (built CLI, raw sockets, ioredis, node-postgres)', function () {
  this.timeout(fuzzTimeout(180_000))
  let s: Started
  after(async () => {
    await stopServer(s)
    cleanupTempDirs()
  })

  it('survives 3 x 80 rounds of random and prefixed junk (fast-check, fixed seed)', async () => {
    s = await startServer(['--data-dir', join(tempDir(), 'data'), '--http-port', '0', '--redis-port', '0', '--pg-port', '0', '--log-level', 'error'])
    const ports = s.ready as {pg: number; redis: number; rest: number}
    const redis = new Redis({host: '127.0.0.1', maxRetriesPerRequest: 0, port: ports.redis})
    await redis.set('kept', 'v')
    const sql = new pg.Client({database: 'svc', host: '127.0.0.1', password: 'svc', port: ports.pg, user: 'svc'})
    await sql.connect()
    // Realistic prefixes get the junk past the first checks of each protocol.
    const prefixes = ['', 'GET / HTTP/1.1\r\nHost: x\r\n', 'PUT /api/v1/documents/a:1 HTTP/1.1\r\ncontent-length: 99999\r\n\r\n', '*3\r\n$3\r\nSET\r\n', '\u0000\u0000\u0000\u0008\u0004\u00d2\u0016\u002f', '\u0000\u0000\u0000\u0050\u0000\u0003\u0000\u0000user\u0000svc\u0000']
    const junk = fc.tuple(fc.constantFrom(...prefixes), fc.uint8Array({maxLength: 512})).map(([p, b]) => new Uint8Array([...Buffer.from(p, 'latin1'), ...b]))
    for (const port of [ports.rest, ports.redis, ports.pg]) {
      await fc.assert(
        fc.asyncProperty(fc.array(junk, {maxLength: 4, minLength: 1}), async (sends) => {
          await Promise.all(sends.map((b) => blast(port, b)))
          expect(s.child.exitCode, `server exited; stderr: ${s.stderr()}`).to.equal(null)
        }),
        {numRuns: fuzzRuns(80), seed: SEED},
      )
      expect(await redis.get('kept')).to.equal('v')
      expect((await sql.query('SELECT 1 AS one')).rows).to.deep.equal([{one: 1}])
      expect((await fetch(`http://127.0.0.1:${ports.rest}/healthz`)).status).to.equal(200)
    }
    redis.disconnect()
    await sql.end()
  })
})
