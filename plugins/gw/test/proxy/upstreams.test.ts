import {expect} from 'chai'

import {connectServer} from '../../src/client/connect.js'
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
      connect: (name) => connectServer(name, {url: e.url}, {interactive: false, tokenStore: store}),
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
})
