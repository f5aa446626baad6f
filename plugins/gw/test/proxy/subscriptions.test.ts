import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {SSEClientTransport} from '@modelcontextprotocol/sdk/client/sse.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {ResourceUpdatedNotificationSchema} from '@modelcontextprotocol/sdk/types.js'
import {expect} from 'chai'

import type {RunningProxy} from '../../src/proxy/serve.js'
import {serveBearer, until} from './helpers.js'
import {startSubscribingUpstream, type SubscribingUpstream} from './subscribing-upstream.js'

const DOC = 'test://doc'
const PROXIED = `subs__${DOC}`
const HEADERS = {authorization: 'Bearer tok-reader'}

describe('gw serve: resource subscriptions shared by sessions (SDK client, SDK upstream on loopback)', function () {
  this.timeout(60_000)
  let upstream: SubscribingUpstream
  let proxy: RunningProxy
  const clients: Array<{client: Client; transport: SSEClientTransport | StreamableHTTPClientTransport}> = []

  /**
   * A client session through the proxy that records the resources/updated it receives, and how
   * many of its notifications/cancelled the proxy has taken (answered 202: the SDK has run it).
   */
  const open = async (transport: 'sse' | 'streamable' = 'streamable') => {
    const c = new Client({name: 'subscriptions-test', version: '1'})
    const seen: string[] = []
    let cancelsTaken = 0
    const counting: typeof fetch = async (url, init) => {
      const r = await fetch(url, init)
      if (r.status === 202 && String(init?.body).includes('notifications/cancelled')) cancelsTaken++
      return r
    }
    c.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
      seen.push(n.params.uri)
    })
    const t =
      transport === 'sse'
        ? new SSEClientTransport(new URL('/sse', proxy.url!), {eventSourceInit: {fetch: (u, init) => fetch(u, {...init, headers: {...init?.headers, ...HEADERS}})}, requestInit: {headers: HEADERS}})
        : new StreamableHTTPClientTransport(new URL(proxy.url!), {fetch: counting, requestInit: {headers: HEADERS}})
    await c.connect(t)
    clients.push({client: c, transport: t})
    return {cancelsTaken: () => cancelsTaken, client: c, seen, transport: t}
  }

  before(async () => {
    upstream = await startSubscribingUpstream()
    const servers = {subs: {url: upstream.url}}
    proxy = await serveBearer(servers, {roles: {reader: [{access: 'read', server: '*'}]}, tokens: {'tok-reader': {roles: ['reader'], subject: 'rita'}}})
  })

  afterEach(async () => {
    // Ends each session on the proxy (closing a Streamable HTTP client alone leaves it to expire).
    for (const {client, transport} of clients.splice(0)) {
      if (transport instanceof StreamableHTTPClientTransport) await transport.terminateSession().catch(() => {})
      await client.close().catch(() => {})
    }
    await until(() => upstream.subscribed().length === 0, 10_000, 'every subscription released')
    upstream.log.length = 0
  })

  after(async () => {
    await proxy?.close()
    await upstream?.close()
  })

  it('subscribes the upstream once for two sessions; one leaving keeps the other updated; the last leaving unsubscribes it', async () => {
    const a = await open()
    const b = await open()
    await a.client.subscribeResource({uri: PROXIED})
    await b.client.subscribeResource({uri: PROXIED})
    expect(upstream.log).to.deep.equal([`subscribe ${DOC}`])
    await upstream.update(DOC)
    await until(() => a.seen.length === 1 && b.seen.length === 1, 10_000, 'both sessions to get the update')
    expect(a.seen).to.deep.equal([PROXIED])

    await a.client.unsubscribeResource({uri: PROXIED})
    expect(upstream.log, 'one session left: the upstream keeps the subscription').to.deep.equal([`subscribe ${DOC}`])
    expect(upstream.subscribed()).to.deep.equal([DOC])
    await upstream.update(DOC)
    await until(() => b.seen.length === 2, 10_000, 'the session still subscribed to get the second update')
    expect(a.seen, 'the session that unsubscribed gets no more updates').to.deep.equal([PROXIED])

    await b.client.unsubscribeResource({uri: PROXIED})
    expect(upstream.log).to.deep.equal([`subscribe ${DOC}`, `unsubscribe ${DOC}`])
    expect(upstream.subscribed()).to.deep.equal([])
    // Subscribing again after everyone left asks the upstream again.
    await a.client.subscribeResource({uri: PROXIED})
    expect(upstream.log.at(-1)).to.equal(`subscribe ${DOC}`)
    expect(upstream.subscribed()).to.deep.equal([DOC])
  })

  it("a session subscribing while the last holder's unsubscribe is on its way upstream ends subscribed", async () => {
    const a = await open()
    const b = await open()
    await a.client.subscribeResource({uri: PROXIED})
    upstream.unsubscribeDelayMs = 400
    try {
      const leaving = a.client.unsubscribeResource({uri: PROXIED})
      await until(() => upstream.log.at(-1) === `unsubscribe ${DOC}`, 10_000, 'the unsubscribe to reach the upstream')
      await b.client.subscribeResource({uri: PROXIED})
      await leaving
    } finally {
      upstream.unsubscribeDelayMs = 0
    }
    // The subscribe was sent once the unsubscribe was answered, never overtaken by it.
    expect(upstream.log).to.deep.equal([`subscribe ${DOC}`, `unsubscribe ${DOC}`, `subscribe ${DOC}`])
    expect(upstream.subscribed()).to.deep.equal([DOC])
    await upstream.update(DOC)
    await until(() => b.seen.length === 1, 10_000, 'the new holder to get updates')
  })

  it('a session subscribing twice holds one subscription: one unsubscribe releases it', async () => {
    const a = await open()
    await a.client.subscribeResource({uri: PROXIED})
    await a.client.subscribeResource({uri: PROXIED})
    await a.client.unsubscribeResource({uri: PROXIED})
    expect(upstream.log).to.deep.equal([`subscribe ${DOC}`, `unsubscribe ${DOC}`])
  })

  it('releases the subscriptions of a session that ends (DELETE), and the other session keeps its own', async () => {
    const a = await open()
    const b = await open()
    await a.client.subscribeResource({uri: PROXIED})
    await a.client.subscribeResource({uri: 'subs__test://other'})
    await b.client.subscribeResource({uri: PROXIED})
    await (a.transport as StreamableHTTPClientTransport).terminateSession()
    await until(() => upstream.subscribed().length === 1, 10_000, 'the ended session to release test://other')
    expect(upstream.subscribed()).to.deep.equal([DOC])
    expect(upstream.log).to.deep.equal([`subscribe ${DOC}`, 'subscribe test://other', 'unsubscribe test://other'])
    await upstream.update(DOC)
    await until(() => b.seen.length === 1, 10_000, 'the remaining session to get the update')
    await (b.transport as StreamableHTTPClientTransport).terminateSession()
    await until(() => upstream.subscribed().length === 0, 10_000, 'the last session to release test://doc')
    expect(upstream.log.at(-1)).to.equal(`unsubscribe ${DOC}`)
  })

  it('a session that ends while its subscribe waits for the upstream gives its hold back: the last one leaving unsubscribes', async () => {
    const a = await open()
    const b = await open()
    const release = upstream.holdSubscribes()
    try {
      const first = a.client.subscribeResource({uri: PROXIED})
      await until(() => upstream.log.includes(`subscribe ${DOC}`), 10_000, 'the subscribe to reach the upstream')
      b.client.subscribeResource({uri: PROXIED}).catch(() => {})
      // Time for b's request to reach the proxy (no event tells); b's session then ends (DELETE)
      // before the upstream answers.
      await new Promise((r) => setTimeout(r, 200))
      await (b.transport as StreamableHTTPClientTransport).terminateSession()
      release()
      await first
    } finally {
      release()
    }
    expect(upstream.subscribed()).to.deep.equal([DOC])
    await a.client.unsubscribeResource({uri: PROXIED})
    expect(upstream.log, 'the ended session held nothing: the upstream is unsubscribed').to.deep.equal([`subscribe ${DOC}`, `unsubscribe ${DOC}`])
  })

  it('the first subscriber cancelling does not fail the others sharing its upstream subscribe', async () => {
    const a = await open()
    const b = await open()
    const c = await open()
    const release = upstream.holdSubscribes()
    try {
      const stop = new AbortController()
      const first = a.client.subscribeResource({uri: PROXIED}, {signal: stop.signal})
      await until(() => upstream.log.includes(`subscribe ${DOC}`), 10_000, 'the subscribe to reach the upstream')
      const second = b.client.subscribeResource({uri: PROXIED})
      const third = c.client.subscribeResource({uri: PROXIED})
      // Time for b's and c's requests to reach the proxy (no event tells; arriving late, they would only share less).
      await new Promise((r) => setTimeout(r, 200))
      stop.abort()
      await first.then(
        () => expect.fail('the cancelled subscribe answered'),
        () => {},
      )
      await until(() => a.cancelsTaken() === 1, 10_000, "the proxy to take a's cancellation")
      release()
      await second
      await third
    } finally {
      release()
    }
    expect(upstream.log, 'one upstream subscribe, never cancelled').to.deep.equal([`subscribe ${DOC}`])
    expect(upstream.subscribed()).to.deep.equal([DOC])
    await upstream.update(DOC)
    await until(() => b.seen.length === 1 && c.seen.length === 1, 10_000, 'the remaining sessions to get the update')
    await b.client.unsubscribeResource({uri: PROXIED})
    await c.client.unsubscribeResource({uri: PROXIED})
    expect(upstream.log, 'the cancelled caller held nothing').to.deep.equal([`subscribe ${DOC}`, `unsubscribe ${DOC}`])
  })

  it('a subscribe no session waits for any more is cancelled upstream and leaves it unsubscribed', async () => {
    const a = await open()
    const release = upstream.holdSubscribes()
    try {
      const stop = new AbortController()
      const pending = a.client.subscribeResource({uri: PROXIED}, {signal: stop.signal}).catch(() => 'cancelled')
      await until(() => upstream.log.includes(`subscribe ${DOC}`), 10_000, 'the subscribe to reach the upstream')
      stop.abort()
      expect(await pending).to.equal('cancelled')
      await until(() => a.cancelsTaken() === 1, 10_000, "the proxy to take a's cancellation")
      release()
      await until(() => upstream.log.includes(`cancelled ${DOC}`), 10_000, 'the upstream to see its subscribe cancelled')
    } finally {
      release()
    }
    expect(upstream.subscribed()).to.deep.equal([])
    // The next subscriber asks the upstream again and is served.
    await a.client.subscribeResource({uri: PROXIED})
    expect(upstream.subscribed()).to.deep.equal([DOC])
  })

  it('releases the subscriptions of a legacy SSE session when its stream closes', async () => {
    const s = await open('sse')
    await s.client.subscribeResource({uri: PROXIED})
    expect(upstream.subscribed()).to.deep.equal([DOC])
    await s.client.close()
    await until(() => upstream.subscribed().length === 0, 10_000, 'the closed SSE session to release its subscription')
    expect(upstream.log).to.deep.equal([`subscribe ${DOC}`, `unsubscribe ${DOC}`])
  })
})

describe('gw serve: a config reload that restarts a lazy upstream subscribes it again to what sessions hold', function () {
  this.timeout(60_000)
  let upstream: SubscribingUpstream
  let proxy: RunningProxy
  let client: Client | undefined
  let transport: StreamableHTTPClientTransport | undefined
  const auth = {roles: {reader: [{access: 'read', server: '*'}]}, tokens: {'tok-reader': {roles: ['reader'], subject: 'rita'}}}
  const config = (servers: Record<string, unknown>) => ({
    file: '/virtual/servers.json',
    raw: {gwServers: servers, serverAuth: {acl: {default: 'deny', roles: auth.roles}, bearer: {tokens: auth.tokens}, providers: ['bearer']}},
    servers: servers as Record<string, {url: string}>,
  })

  before(async () => {
    upstream = await startSubscribingUpstream()
  })

  after(async () => {
    await transport?.terminateSession().catch(() => {})
    await client?.close().catch(() => {})
    await proxy?.close()
    await upstream?.close()
  })

  it('a session subscribed before the reload gets the updates sent after it, without using the server', async () => {
    // idleTimeout makes the server lazy: started on first use, and (before this fix) left asleep by a reload.
    proxy = await serveBearer({subs: {idleTimeout: 600, url: upstream.url} as {url: string}}, auth)
    client = new Client({name: 'reload-subscriber', version: '1'})
    const seen: string[] = []
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
      seen.push(n.params.uri)
    })
    transport = new StreamableHTTPClientTransport(new URL(proxy.url!), {requestInit: {headers: HEADERS}})
    await client.connect(transport)
    await client.subscribeResource({uri: PROXIED})
    expect(upstream.log).to.deep.equal([`subscribe ${DOC}`])

    // A changed entry (its headers) restarts the server: the old upstream session ends.
    const result = await proxy.reload(config({subs: {headers: {'x-reloaded': '1'}, idleTimeout: 600, url: upstream.url}}))
    expect(result.changed).to.deep.equal(['subs'])
    await until(() => upstream.log.length === 2, 10_000, 'the restarted server to be subscribed again')
    expect(upstream.log).to.deep.equal([`subscribe ${DOC}`, `subscribe ${DOC}`])
    expect(upstream.subscribed()).to.deep.equal([DOC])
    await upstream.update(DOC)
    await until(() => seen.length === 1, 10_000, 'the update sent after the reload to reach the session')
  })
})
