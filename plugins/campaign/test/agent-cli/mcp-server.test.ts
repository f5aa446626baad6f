import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {expect} from 'chai'

import {type MissionMcpServer, startMissionMcpServer} from '../../src/providers/agent-cli/mcp-server.js'
import type {ToolResult} from '../../src/tools/call.js'
import {toolSpecs} from '../../src/tools/registry.js'

describe('agent-cli: the mission MCP server', function () {
  this.timeout(20_000)
  const calls: Array<{input: unknown; name: string}> = []
  let server: MissionMcpServer

  before(async () => {
    server = await startMissionMcpServer({
      async call(name, input): Promise<ToolResult> {
        calls.push({input, name})
        if (name === 'get_brief') return {ok: true, result: {campaign: 'beans'}}
        return {error: 'headline 3 is 34 characters; the limit is 30', ok: false}
      },
      mission: 'campaign:beans',
      tools: toolSpecs('campaign'),
    })
  })

  after(() => server.close())

  async function connect(token: null | string): Promise<Client> {
    const headers: Record<string, string> = token === null ? {} : {Authorization: `Bearer ${token}`}
    const client = new Client({name: 'test', version: '1'})
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), {requestInit: {headers}}))
    return client
  }

  it('listens on loopback only', () => {
    expect(new URL(server.url).hostname).to.equal('127.0.0.1')
  })

  it('refuses a client without the bearer token, or with another one', async () => {
    for (const token of [null, 'not-the-token', `${server.token}x`]) {
      let failure: unknown = null
      await connect(token).catch((error: unknown) => {
        failure = error
      })
      expect(String(failure), String(token)).to.match(/401|Unauthorized/)
    }
    const raw = await fetch(server.url, {body: '{}', headers: {'content-type': 'application/json'}, method: 'POST'})
    expect(raw.status).to.equal(401)
    expect(calls).to.have.length(0)
  })

  it('refuses a request under another host name (DNS rebinding)', async () => {
    const {request} = await import('node:http')
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(server.url, {headers: {authorization: `Bearer ${server.token}`, 'content-type': 'application/json', host: 'evil.example:80'}, method: 'POST'}, (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      })
      req.on('error', reject)
      req.end('{}')
    })
    expect(status).to.equal(403)
  })

  it('lists exactly the mission\'s tools with their JSON schemas', async () => {
    const client = await connect(server.token)
    const {tools} = await client.listTools()
    expect(tools.map((t) => t.name).sort()).to.deep.equal(toolSpecs('campaign').map((t) => t.name).sort())
    expect(tools.map((t) => t.name)).not.to.include('set_account_plan')
    const upsert = tools.find((t) => t.name === 'upsert_ad_group')
    expect(upsert?.inputSchema.type).to.equal('object')
    expect(upsert?.inputSchema.properties).to.have.property('keywords')
    await client.close()
  })

  it('forwards a call and returns its result as JSON text', async () => {
    const client = await connect(server.token)
    const res = await client.callTool({arguments: {}, name: 'get_brief'})
    expect(res.isError).to.not.equal(true)
    expect(JSON.parse((res.content as Array<{text: string}>)[0].text)).to.deep.equal({campaign: 'beans'})
    expect(calls.at(-1)).to.deep.equal({input: {}, name: 'get_brief'})
    await client.close()
  })

  it('a refused call comes back as a tool error the model can read', async () => {
    const client = await connect(server.token)
    const res = await client.callTool({arguments: {name: 'x'}, name: 'upsert_ad_group'})
    expect(res.isError).to.equal(true)
    expect((res.content as Array<{text: string}>)[0].text).to.equal('Error: headline 3 is 34 characters; the limit is 30')
    await client.close()
  })

  it('stops listening when closed', async () => {
    const other = await startMissionMcpServer({call: async () => ({ok: true, result: null}), mission: 'plan', tools: toolSpecs('plan')})
    await other.close()
    const failure = await fetch(other.url, {method: 'POST'}).then(
      () => null,
      (error: unknown) => error,
    )
    expect(failure).to.be.instanceOf(Error)
  })
})
