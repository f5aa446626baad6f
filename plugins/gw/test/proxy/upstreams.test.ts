import {expect} from 'chai'
import {createServer, type Socket} from 'node:net'

import {connectServer} from '../../src/client/connect.js'
import {fastCallFor} from '../../src/proxy/fast-call.js'
import {UpstreamPool, UpstreamUnavailableError} from '../../src/proxy/upstreams.js'
import {type Everything, memoryTokenStore, startEverything} from './helpers.js'

describe('proxy upstream pool (server-everything)', function () {
  this.timeout(60_000)
  let e: Everything
  let pool: UpstreamPool

  before(async () => {
    e = await startEverything()
    const store = memoryTokenStore()
    // Pings are off (an hour apart): what is tested is how calls themselves notice a lost session.
    pool = new UpstreamPool(['everything'], {
      connect: (name, signal) => connectServer(name, {url: e.url}, {interactive: false, signal, tokenStore: store}),
      pingIntervalMs: 3_600_000,
    })
    await pool.start()
  })

  after(async () => {
    await pool?.stop()
    await e?.kill()
  })

  it('re-establishes a session the upstream forgot (restart) and sends the call again, invisibly', async () => {
    const first = await pool.call('everything__get-sum', {a: 1, b: 2})
    expect(JSON.stringify(first.content)).to.include('3')
    await e.kill()
    await e.restart()
    const again = await pool.call('everything__get-sum', {a: 20, b: 3})
    expect(JSON.stringify(again.content)).to.include('23')
    expect(pool.status()[0]).to.deep.include({name: 'everything', state: 'up'})
  })

  it('a Streamable HTTP session tells the headers it sends, and a call sent with them lands in that session', async () => {
    const conn = await connectServer('everything', {headers: {'X-Trace': 'abc'}, url: e.url}, {interactive: false, tokenStore: memoryTokenStore()})
    try {
      expect(conn.http?.url.href).to.equal(e.url)
      const headers = conn.http!.headers()
      expect(headers['mcp-session-id']).to.be.a('string').and.not.equal('')
      expect(headers['mcp-protocol-version']).to.match(/^\d{4}-\d{2}-\d{2}$/)
      expect(headers['x-trace']).to.equal('abc')
      const result = await fastCallFor(conn)!({arguments: {a: 2, b: 5}, name: 'get-sum'}, {timeoutMs: 10_000})
      expect(JSON.stringify(result.content)).to.include('7')
    } finally {
      await conn.close()
    }
  })

  it('answers at once, with the reason, when the upstream is gone', async () => {
    await e.kill()
    const started = Date.now()
    const error = await pool.call('everything__get-sum', {a: 1, b: 2}).catch((error_: Error) => error_)
    expect(error).to.be.instanceOf(UpstreamUnavailableError)
    expect((error as Error).message).to.match(/server "everything" is unavailable: down \(.*(refused|reset)/)
    expect(Date.now() - started).to.be.below(3000)
    expect(pool.tools().next().done, 'its tools are gone').to.equal(true)
    await e.restart()
  })

  it('gives up on an upstream that accepts connections but never answers, and keeps retrying in the background', async () => {
    const sockets: Socket[] = []
    const blackhole = createServer((socket) => sockets.push(socket))
    await new Promise<void>((resolve) => blackhole.listen(0, '127.0.0.1', resolve))
    const port = (blackhole.address() as {port: number}).port
    const store = memoryTokenStore()
    const stuck = new UpstreamPool(['stuck'], {
      connect: (name, signal) => connectServer(name, {url: `http://127.0.0.1:${port}/mcp`}, {interactive: false, signal, tokenStore: store}),
      connectTimeoutMs: 300,
      pingIntervalMs: 3_600_000,
    })
    try {
      const started = Date.now()
      await stuck.start(5000)
      expect(Date.now() - started).to.be.below(4000)
      expect(stuck.status()[0]).to.deep.include({error: 'no answer within 0.3 s', name: 'stuck', state: 'down'})
    } finally {
      await stuck.stop()
      for (const s of sockets) s.destroy()
      blackhole.close()
    }
  })
})
