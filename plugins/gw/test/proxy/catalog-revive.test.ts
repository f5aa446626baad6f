import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {PromptListChangedNotificationSchema, ResourceListChangedNotificationSchema} from '@modelcontextprotocol/sdk/types.js'
import {expect} from 'chai'

import {ACCESS_DENIED} from '../../src/proxy/aggregator.js'
import type {RunningProxy} from '../../src/proxy/serve.js'
import {type Everything, rpcError, serveBearer, startEverything, until} from './helpers.js'

describe('gw serve: resources and prompts of an upstream that was down reconnect it first, as tools/call does', function () {
  this.timeout(90_000)
  let upstream: Everything
  let proxy: RunningProxy
  const log: string[] = []
  const clients: Client[] = []
  const open = async (token: string) => {
    const c = new Client({name: 'catalog-revive', version: '1'})
    await c.connect(new StreamableHTTPClientTransport(new URL(proxy.url!), {requestInit: {headers: {authorization: `Bearer ${token}`}}}))
    clients.push(c)
    return c
  }
  const state = async () => {
    const h = (await (await fetch(new URL('/health', proxy.url))).json()) as {upstreams: Array<{name: string; state: string}>}
    return h.upstreams.find((u) => u.name === 'everything')?.state
  }

  /** Kills the upstream and waits until the proxy's next background retry is at least 8 s away. */
  const downForLong = async () => {
    await upstream.kill()
    await until(async () => (await state()) === 'down', 15_000, 'the proxy to notice the upstream is gone')
    await until(() => log.some((l) => /retrying in (8000|16000|30000) ms/.test(l)), 30_000, 'the backoff to grow past 8 s')
  }

  before(async () => {
    upstream = await startEverything()
    const servers = {everything: {url: upstream.url}}
    proxy = await serveBearer(
      servers,
      {
        roles: {docs: [{access: 'read', server: 'everything', tools: ['architecture.md']}], reader: [{access: 'read', server: '*'}]},
        tokens: {'tok-docs': {roles: ['docs'], subject: 'dee'}, 'tok-reader': {roles: ['reader'], subject: 'rita'}},
      },
      {connectTimeoutMs: 2000, log: (m) => log.push(m), pingIntervalMs: 300},
    )
  })

  after(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => {})))
    await proxy?.close()
    await upstream?.kill()
  })

  it('resources/read, prompts/get, completion/complete and resources/subscribe to a restarted upstream succeed within the request', async () => {
    const c = await open('tok-reader')
    const architecture = (await c.listResources()).resources.find((r) => r.name === 'everything__architecture.md')
    expect(architecture, 'a listed resource of server-everything').to.not.equal(undefined)
    const changed = {prompts: 0, resources: 0}
    c.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
      changed.resources++
    })
    c.setNotificationHandler(PromptListChangedNotificationSchema, () => {
      changed.prompts++
    })
    await downForLong()
    // The upstream's resources and prompts left the listings: the session was told of both.
    await until(() => changed.resources > 0 && changed.prompts > 0, 10_000, 'resources and prompts list_changed')
    expect((await c.listResources()).resources).to.deep.equal([])
    expect((await c.listPrompts()).prompts).to.deep.equal([])
    changed.resources = 0
    changed.prompts = 0
    log.length = 0
    await upstream.restart()
    // All at once, right after the restart: none may answer with the outage the proxy last saw.
    // A failure names the request and carries the proxy's log: which reconnection did what.
    const tag = <T,>(what: string, p: Promise<T>) =>
      p.catch((error: Error) => {
        throw new Error(`${what}: ${error.message}\n${log.join('\n')}`)
      })
    const [read, listedRead, prompt, completion] = await Promise.all([
      tag('read', c.readResource({uri: 'everything__demo://resource/dynamic/text/5'})),
      tag('listed', c.readResource({uri: architecture!.uri})),
      tag('prompt', c.getPrompt({name: 'everything__simple-prompt'})),
      tag('complete', c.complete({argument: {name: 'department', value: 'E'}, ref: {name: 'everything__completable-prompt', type: 'ref/prompt'}})),
      tag('subscribe', c.subscribeResource({uri: 'everything__demo://resource/dynamic/text/6'})),
    ])
    expect(read.contents[0].uri).to.equal('everything__demo://resource/dynamic/text/5')
    expect(listedRead.contents[0].uri).to.equal(architecture!.uri)
    expect(prompt.messages.length).to.be.greaterThan(0)
    expect(completion.completion.values).to.deep.equal(['Engineering'])
    expect(log.filter((l) => /connected/.test(l)), 'one reconnection shared by the four requests').to.have.length(1)
    await until(() => changed.resources > 0 && changed.prompts > 0, 10_000, 'list_changed again when the upstream is back')
    expect((await c.listPrompts()).prompts.map((p) => p.name)).to.include('everything__simple-prompt')
  })

  it('an upstream that stays down: the ACL decides by the last listing first, then a clear -32603 after one reconnection attempt', async () => {
    const docs = await open('tok-docs')
    const reader = await open('tok-reader')
    await downForLong()
    const uri = (await reader.listResources()).resources.length === 0 ? 'everything__demo://resource/static/document/architecture.md' : ''
    expect(uri, 'a down upstream lists nothing').to.not.equal('')
    // A grant naming the resource lets "dee" read it while the server is up; while it is down the
    // same rule decides (by the last listing), so "dee" learns of the outage, and of nothing else.
    const outage = await rpcError(docs.readResource({uri}))
    expect(outage.code).to.equal(-32_603)
    expect(outage.message).to.match(/server "everything" is unavailable: down \(.*(refused|reset)/)
    const denied = await rpcError(docs.getPrompt({name: 'everything__simple-prompt'}))
    expect(denied.code).to.equal(ACCESS_DENIED)
    const prompt = await rpcError(reader.getPrompt({name: 'everything__simple-prompt'}))
    expect(prompt.code).to.equal(-32_603)
    expect(prompt.message).to.include('server "everything" is unavailable')
    const subscribe = await rpcError(reader.subscribeResource({uri}))
    expect(subscribe.code).to.equal(-32_603)
    await upstream.restart()
  })
})
