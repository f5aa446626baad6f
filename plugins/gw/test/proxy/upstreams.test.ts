import {expect} from 'chai'
import {createServer, type Socket} from 'node:net'

import {connectServer} from '../../src/client/connect.js'
import {fastCallFor} from '../../src/proxy/fast-call.js'
import {UpstreamPool, UpstreamUnavailableError} from '../../src/proxy/upstreams.js'
import {type Everything, memoryTokenStore, startEverything, until} from './helpers.js'

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

  it('a listing while the first connection is still under way waits for it instead of answering empty', async () => {
    const store = memoryTokenStore()
    const slow = new UpstreamPool(['slow'], {
      async connect(name, signal) {
        await new Promise((resolve) => setTimeout(resolve, 1500))
        return connectServer(name, {url: e.url}, {interactive: false, signal, tokenStore: store})
      },
      pingIntervalMs: 3_600_000,
    })
    try {
      await slow.start(50)
      expect(slow.status()[0]).to.deep.include({state: 'connecting'})
      expect(slow.cold, 'a first connection under way makes the pool cold').to.equal(true)
      await slow.warm()
      expect([...slow.tools()].map((t) => t.fullName)).to.include('slow__echo')
      expect(slow.cold).to.equal(false)
    } finally {
      await slow.stop()
    }
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

  describe('an upstream that answers late (a machine under heavy load)', () => {
    let slow: Everything
    let watched: UpstreamPool
    const states: string[] = []
    let sampler: NodeJS.Timeout | undefined

    beforeEach(async () => {
      slow = await startEverything()
      const store = memoryTokenStore()
      watched = new UpstreamPool(['slow'], {
        connect: (name, signal) => connectServer(name, {url: slow.url}, {interactive: false, signal, tokenStore: store}),
        connectTimeoutMs: 1000,
        // Each ping may take 1 s; three late ones in a row mark the upstream down.
        pingIntervalMs: 300,
      })
      await watched.start()
      states.length = 0
      sampler = setInterval(() => states.push(watched.status()[0].state), 50)
    })

    afterEach(async () => {
      clearInterval(sampler)
      slow.resume()
      await watched.stop()
      await slow.kill()
    })

    it('stays up through a pause shorter than three ping timeouts, and goes down after a longer one', async () => {
      expect(watched.status()[0].state).to.equal('up')
      slow.pause()
      // At most two pings can time out in 1.8 s (one at a time, 1 s each): not enough to flap.
      await new Promise((r) => setTimeout(r, 1800))
      slow.resume()
      await new Promise((r) => setTimeout(r, 500))
      expect([...new Set(states)], 'states seen while the upstream answered late').to.deep.equal(['up'])
      slow.pause()
      await until(() => watched.status()[0].state !== 'up', 15_000, 'the upstream marked down after pings time out in a row')
      expect(watched.status()[0].error).to.equal('request timed out')
    })

    it('a call waits for a slow reconnection within its budget, beyond one timed-out attempt', async () => {
      slow.pause()
      await until(() => watched.status()[0].state !== 'up', 15_000, 'down')
      // Reconnection attempts now time out after 1 s each; the upstream answers again after 2.5 s.
      const resumed = setTimeout(() => slow.resume(), 2500)
      try {
        expect(await watched.revive('slow', 8000)).to.equal(true)
      } finally {
        clearTimeout(resumed)
      }
      const r = await watched.call('slow__echo', {message: 'late but there'})
      expect(JSON.stringify(r.content)).to.include('late but there')
    })
  })
})
