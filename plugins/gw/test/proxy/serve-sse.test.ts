import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {SSEClientTransport} from '@modelcontextprotocol/sdk/client/sse.js'
import {McpError} from '@modelcontextprotocol/sdk/types.js'
import {expect} from 'chai'

import {ACCESS_DENIED} from '../../src/proxy/aggregator.js'
import type {RunningProxy} from '../../src/proxy/serve.js'
import {type Everything, serveBearer, startEverything} from './helpers.js'

describe('gw serve: the legacy HTTP+SSE transport (/sse + /messages) for 2024-11-05 clients', function () {
  this.timeout(60_000)
  let upstream: Everything
  let proxy: RunningProxy
  let base: string
  const clients: Client[] = []
  const open = async (token: string) => {
    const c = new Client({name: 'sse-test', version: '1'})
    await c.connect(new SSEClientTransport(new URL(`${base}/sse`), {requestInit: {headers: {authorization: `Bearer ${token}`}}}))
    clients.push(c)
    return c
  }
  /** The first event of a raw GET /sse: the endpoint with the session id. */
  const endpointOf = async (token: string): Promise<{abort: AbortController; endpoint: string}> => {
    const abort = new AbortController()
    const res = await fetch(`${base}/sse`, {headers: {accept: 'text/event-stream', authorization: `Bearer ${token}`}, signal: abort.signal})
    expect(res.status).to.equal(200)
    const reader = res.body!.getReader()
    let text = ''
    while (!text.includes('\n\n')) text += new TextDecoder().decode((await reader.read()).value)
    return {abort, endpoint: /data: (.*)/.exec(text)![1]}
  }

  before(async () => {
    upstream = await startEverything()
    const servers = {everything: {url: upstream.url}}
    proxy = await serveBearer(
      servers,
      {
        roles: {admin: [{access: '*', server: '*'}], viewer: [{access: 'read', server: '*'}]},
        tokens: {'tok-admin': {roles: ['admin'], subject: 'alice'}, 'tok-viewer': {roles: ['viewer'], subject: 'bob'}},
      },
      {http: {host: '127.0.0.1', limits: {maxSessionsPerSubject: 3}, port: 0}},
    )
    base = new URL(proxy.url!).origin
  })

  after(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => {})))
    await proxy?.close()
    await upstream?.kill()
  })

  it("serves the SDK's SSEClientTransport: tools, calls, resources and prompts, under the ACL", async () => {
    const c = await open('tok-viewer')
    const names = (await c.listTools()).tools.map((t) => t.name)
    expect(names).to.include('everything__echo')
    expect(names).not.to.include('everything__toggle-simulated-logging')
    const r = await c.callTool({arguments: {message: 'over sse'}, name: 'everything__echo'})
    expect(JSON.stringify(r.content)).to.include('over sse')
    expect((await c.listResources()).resources.length).to.be.greaterThan(0)
    expect((await c.listPrompts()).prompts.map((p) => p.name)).to.include('everything__simple-prompt')
    const denied = await c.callTool({arguments: {}, name: 'everything__toggle-simulated-logging'}).catch((error: unknown) => error)
    expect(denied).to.be.instanceOf(McpError)
    expect((denied as McpError).code).to.equal(ACCESS_DENIED)
  })

  it('refuses /sse without credentials (401 with a Bearer challenge)', async () => {
    const res = await fetch(`${base}/sse`, {headers: {accept: 'text/event-stream'}})
    expect(res.status).to.equal(401)
    expect(res.headers.get('www-authenticate')).to.match(/^Bearer /)
  })

  it("answers a post to another user's session with 403, an unknown session with 404", async () => {
    const {abort, endpoint} = await endpointOf('tok-admin')
    try {
      const post = (token: string, path: string) =>
        fetch(`${base}${path}`, {
          body: JSON.stringify({id: 1, jsonrpc: '2.0', method: 'ping'}),
          headers: {authorization: `Bearer ${token}`, 'content-type': 'application/json'},
          method: 'POST',
        })
      expect(endpoint).to.match(/^\/messages\?sessionId=/)
      expect((await post('tok-viewer', endpoint)).status).to.equal(403)
      expect((await post('tok-admin', '/messages?sessionId=nope')).status).to.equal(404)
      expect((await post('tok-admin', endpoint)).status).to.equal(202)
    } finally {
      abort.abort()
    }
  })

  it('counts SSE sessions toward the per-user limit (429 past it) and frees them when the stream closes', async () => {
    const streams = [await endpointOf('tok-admin'), await endpointOf('tok-admin'), await endpointOf('tok-admin')]
    const refused = await fetch(`${base}/sse`, {headers: {authorization: 'Bearer tok-admin'}})
    expect(refused.status).to.equal(429)
    expect(refused.headers.get('retry-after')).to.equal('60')
    // Another user is not affected.
    const other = await endpointOf('tok-viewer')
    other.abort.abort()
    for (const s of streams) s.abort.abort()
    // Closed streams end their sessions: the user may open one again.
    let again: Awaited<ReturnType<typeof endpointOf>> | undefined
    for (let i = 0; i < 50 && !again; i++) {
      again = await endpointOf('tok-admin').catch(() => undefined)
      if (!again) await new Promise((r) => setTimeout(r, 50))
    }
    expect(again, 'a session after the others closed').to.not.equal(undefined)
    again!.abort.abort()
  })
})
