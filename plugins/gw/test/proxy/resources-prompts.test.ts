import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {ResourceUpdatedNotificationSchema} from '@modelcontextprotocol/sdk/types.js'
import {expect} from 'chai'

import {ACCESS_DENIED} from '../../src/proxy/aggregator.js'
import type {RunningProxy} from '../../src/proxy/serve.js'
import {EVERYTHING, type Everything, rpcError, serveBearer, startEverything, until} from './helpers.js'

describe('gw serve: resources and prompts of the upstreams (server-everything, SDK client)', function () {
  this.timeout(60_000)
  let upstream: Everything
  let direct: Client
  let proxy: RunningProxy
  const clients: Client[] = []
  const open = async (token: string) => {
    const c = new Client({name: 'resources-test', version: '1'})
    await c.connect(new StreamableHTTPClientTransport(new URL(proxy.url!), {requestInit: {headers: {authorization: `Bearer ${token}`}}}))
    clients.push(c)
    return c
  }

  before(async () => {
    upstream = await startEverything()
    direct = new Client({name: 'direct', version: '1'})
    await direct.connect(new StreamableHTTPClientTransport(new URL(upstream.url)))
    const servers = {everything: {url: upstream.url}, local: {args: [EVERYTHING, 'stdio'], command: process.execPath}}
    proxy = await serveBearer(servers, {
      roles: {
        docs: [{access: 'read', server: 'everything', tools: ['simple-prompt', 'architecture.md']}],
        reader: [{access: 'read', server: '*'}],
        writer: [{access: 'write', server: '*'}],
      },
      tokens: {'tok-docs': {roles: ['docs'], subject: 'dee'}, 'tok-reader': {roles: ['reader'], subject: 'rita'}, 'tok-writer': {roles: ['writer'], subject: 'will'}},
    })
  })

  after(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => {})))
    await direct?.close().catch(() => {})
    await proxy?.close()
    await upstream?.kill()
  })

  it('lists every upstream resource with its URI and name prefixed <server>__, and reads it with the upstream content', async () => {
    const c = await open('tok-reader')
    expect(c.getServerCapabilities()).to.deep.include({prompts: {listChanged: true}, resources: {listChanged: true, subscribe: true}})
    const mine = (await direct.listResources()).resources
    expect(mine.length).to.be.greaterThan(0)
    const listed = (await c.listResources()).resources
    const uris = listed.map((r) => r.uri)
    for (const r of mine) {
      expect(uris).to.include(`everything__${r.uri}`)
      expect(uris).to.include(`local__${r.uri}`)
    }
    const first = mine[0]
    const read = await c.readResource({uri: `everything__${first.uri}`})
    const expected = await direct.readResource({uri: first.uri})
    expect(read.contents.length).to.equal(expected.contents.length)
    expect(read.contents[0].uri).to.equal(`everything__${first.uri}`)
    expect((read.contents[0] as {text?: string}).text).to.equal((expected.contents[0] as {text?: string}).text)
  })

  it('lists resource templates prefixed and reads a URI built from one', async () => {
    const c = await open('tok-reader')
    const templates = (await c.listResourceTemplates()).resourceTemplates
    const text = templates.find((t) => t.uriTemplate === 'everything__demo://resource/dynamic/text/{resourceId}')
    expect(text, JSON.stringify(templates.map((t) => t.uriTemplate))).to.not.equal(undefined)
    expect(text!.name.startsWith('everything__')).to.equal(true)
    const read = await c.readResource({uri: 'local__demo://resource/dynamic/text/7'})
    expect(read.contents[0].uri).to.equal('local__demo://resource/dynamic/text/7')
    expect(JSON.stringify(read.contents)).to.include('7')
  })

  it('lists prompts as <server>__<prompt> and gets one with its arguments', async () => {
    const c = await open('tok-reader')
    const names = (await c.listPrompts()).prompts.map((p) => p.name)
    expect(names).to.include.members(['everything__simple-prompt', 'everything__args-prompt', 'local__simple-prompt'])
    const simple = await c.getPrompt({name: 'everything__simple-prompt'})
    expect(simple).to.deep.equal(await direct.getPrompt({name: 'simple-prompt'}))
    const args = await c.getPrompt({arguments: {city: 'Lisbon'}, name: 'local__args-prompt'})
    expect(JSON.stringify(args.messages)).to.include('Lisbon')
  })

  it('applies the ACL: resources and prompts are reads (a write-only role sees none, a denied read is -32003)', async () => {
    const w = await open('tok-writer')
    expect((await w.listResources()).resources).to.deep.equal([])
    expect((await w.listPrompts()).prompts).to.deep.equal([])
    const denied = await rpcError(w.readResource({uri: 'everything__demo://resource/dynamic/text/1'}))
    expect(denied.code).to.equal(ACCESS_DENIED)
    expect(denied.message).to.include('"will" may not read everything__demo://resource/dynamic/text/1')
    const p = await rpcError(w.getPrompt({name: 'everything__simple-prompt'}))
    expect(p.code).to.equal(ACCESS_DENIED)
  })

  it('narrows resources and prompts by name for a grant that lists names', async () => {
    const d = await open('tok-docs')
    expect((await d.listPrompts()).prompts.map((p) => p.name)).to.deep.equal(['everything__simple-prompt'])
    const resources = (await d.listResources()).resources.map((r) => r.name)
    expect(resources).to.deep.equal(['everything__architecture.md'])
    expect((await rpcError(d.getPrompt({name: 'everything__args-prompt', arguments: {city: 'x'}}))).code).to.equal(ACCESS_DENIED)
  })

  it('answers a URI outside every configured server with -32602', async () => {
    const c = await open('tok-reader')
    const e = await rpcError(c.readResource({uri: 'nowhere__demo://x'}))
    expect(e.code).to.equal(-32602)
    expect(e.message).to.include('unknown resource "nowhere__demo://x"')
    expect((await rpcError(c.getPrompt({name: 'everything__no-such-prompt'}))).code).to.be.oneOf([-32602, -32603])
  })

  it('proxies completion/complete for prompt arguments and resource templates, with the upstream answers', async () => {
    const c = await open('tok-reader')
    expect(c.getServerCapabilities()?.completions).to.deep.equal({})
    const department = await c.complete({argument: {name: 'department', value: 'E'}, ref: {name: 'everything__completable-prompt', type: 'ref/prompt'}})
    expect(department.completion.values).to.deep.equal(['Engineering'])
    // The context (earlier arguments) travels to the upstream: it narrows the second argument.
    const name = await c.complete({argument: {name: 'name', value: ''}, context: {arguments: {department: 'Sales'}}, ref: {name: 'local__completable-prompt', type: 'ref/prompt'}})
    expect(name.completion.values).to.deep.equal(['David', 'Eve', 'Frank'])
    const expected = await direct.complete({argument: {name: 'resourceId', value: '42'}, ref: {type: 'ref/resource', uri: 'demo://resource/dynamic/text/{resourceId}'}})
    const id = await c.complete({argument: {name: 'resourceId', value: '42'}, ref: {type: 'ref/resource', uri: 'everything__demo://resource/dynamic/text/{resourceId}'}})
    expect(id.completion.values).to.deep.equal(expected.completion.values).and.to.deep.equal(['42'])
  })

  it('judges completion/complete by the ACL rule of the prompt or template it completes', async () => {
    const w = await open('tok-writer')
    const prompt = await rpcError(w.complete({argument: {name: 'department', value: 'E'}, ref: {name: 'everything__completable-prompt', type: 'ref/prompt'}}))
    expect(prompt.code).to.equal(ACCESS_DENIED)
    expect(prompt.message).to.include('"will" may not read everything__completable-prompt')
    const template = await rpcError(w.complete({argument: {name: 'resourceId', value: '1'}, ref: {type: 'ref/resource', uri: 'everything__demo://resource/dynamic/text/{resourceId}'}}))
    expect(template.code).to.equal(ACCESS_DENIED)
    // A grant naming one prompt lets its user complete that prompt's arguments only.
    const d = await open('tok-docs')
    expect((await rpcError(d.complete({argument: {name: 'department', value: ''}, ref: {name: 'everything__completable-prompt', type: 'ref/prompt'}}))).code).to.equal(ACCESS_DENIED)
    const allowed = await d.complete({argument: {name: 'x', value: ''}, ref: {name: 'everything__simple-prompt', type: 'ref/prompt'}})
    expect(allowed.completion.values).to.deep.equal([])
  })

  it('answers completion for an unknown prompt or server with -32602', async () => {
    const c = await open('tok-reader')
    const unknown = await rpcError(c.complete({argument: {name: 'a', value: ''}, ref: {name: 'nowhere__prompt', type: 'ref/prompt'}}))
    expect(unknown.code).to.equal(-32602)
    expect(unknown.message).to.include('unknown prompt "nowhere__prompt"')
    const uri = await rpcError(c.complete({argument: {name: 'a', value: ''}, ref: {type: 'ref/resource', uri: 'nowhere__x://{a}'}}))
    expect(uri.code).to.equal(-32602)
  })

  it('passes on resources/updated for a subscribed URI, to the subscribed session only', async () => {
    const sub = await open('tok-reader')
    const other = await open('tok-reader')
    const seen: string[] = []
    const otherSeen: string[] = []
    sub.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
      seen.push(n.params.uri)
    })
    other.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
      otherSeen.push(n.params.uri)
    })
    const uri = 'everything__demo://resource/dynamic/text/3'
    await sub.subscribeResource({uri})
    // server-everything sends updates of subscribed URIs once this tool is switched on (in the proxy's upstream session).
    const admin = await open('tok-writer')
    await admin.callTool({arguments: {}, name: 'everything__toggle-subscriber-updates'}).catch(() => {})
    await until(() => seen.includes(uri), 15_000, 'a resources/updated notification')
    expect(otherSeen).to.deep.equal([])
  })
})
