import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {ToolListChangedNotificationSchema} from '@modelcontextprotocol/sdk/types.js'
import {expect} from 'chai'
import {existsSync, mkdtempSync, readFileSync, rmSync, statSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {ACCESS_DENIED} from '../../src/proxy/aggregator.js'
import {type RunningProxy, startServe} from '../../src/proxy/serve.js'
import {EVERYTHING, type Everything, memoryTokenStore, rpcError, startEverything, until} from './helpers.js'

const TOKENS = {
  'tok-admin': {roles: ['admin'], subject: 'alice'},
  'tok-plain': 'pat',
  'tok-viewer': {roles: ['viewer'], subject: 'bob'},
}

async function connect(url: string, headers: Record<string, string>): Promise<Client> {
  const client = new Client({name: 'proxy-test', version: '1'})
  await client.connect(new StreamableHTTPClientTransport(new URL(url), {requestInit: {headers}}))
  return client
}

interface Json {
  error: {code: number; message: string}
  id?: unknown
  status?: string
  upstreams: Array<{name: string; state: string}>
}
const json = async (r: Response): Promise<Json> => (await r.json()) as Json

describe('gw serve --http (in process, server-everything upstreams)', function () {
  this.timeout(60_000)
  let a: Everything
  let b: Everything
  let proxy: RunningProxy
  let url: string
  const auditDir = mkdtempSync(join(tmpdir(), 'gw-audit-'))
  const auditFile = join(auditDir, 'audit.jsonl')
  const logs: string[] = []
  const clients: Client[] = []
  const open = async (headers: Record<string, string>) => {
    const c = await connect(url, headers)
    clients.push(c)
    return c
  }

  before(async () => {
    ;[a, b] = await Promise.all([startEverything(), startEverything()])
    proxy = await startServe({
      auditFile,
      config: {
        file: '/virtual/servers.json',
        raw: {
          gwServers: {
            backup: {url: b.url},
            everything: {toolAccess: {'toggle-*': 'read'}, url: a.url},
            local: {args: [EVERYTHING, 'stdio'], command: process.execPath},
          },
          serverAuth: {
            acl: {
              default: 'deny',
              roles: {
                admin: [{access: '*', server: '*'}],
                dev: [
                  {access: '*', server: 'everything'},
                  {access: '*', deny: true, server: '*', tools: ['trigger-*']},
                ],
                viewer: [{access: 'read', server: '*'}],
              },
            },
            bearer: {tokens: TOKENS},
            providers: ['bearer', 'forwarded'],
          },
        },
        servers: {backup: {url: b.url}, everything: {url: a.url}, local: {args: [EVERYTHING, 'stdio'], command: process.execPath}},
      },
      env: {},
      http: {host: '127.0.0.1', maxBodyBytes: 64 * 1024, port: 0},
      log: (m) => logs.push(m),
      pingIntervalMs: 300,
      store: memoryTokenStore(),
    })
    url = proxy.url!
  })

  after(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => {})))
    await proxy?.close()
    await Promise.all([a?.kill(), b?.kill()])
    rmSync(auditDir, {force: true, recursive: true})
  })

  it('answers a request without credentials with 401 and a Bearer challenge (first provider error)', async () => {
    const res = await fetch(url, {body: '{}', headers: {'content-type': 'application/json'}, method: 'POST'})
    expect(res.status).to.equal(401)
    expect(res.headers.get('www-authenticate')).to.match(/^Bearer /)
    expect(await res.json()).to.deep.include({error_description: 'missing bearer token'})
  })

  it('rejects a wrong bearer token with invalid_token', async () => {
    const res = await fetch(url, {body: '{}', headers: {authorization: 'Bearer nope', 'content-type': 'application/json'}, method: 'POST'})
    expect(res.status).to.equal(401)
    expect(res.headers.get('www-authenticate')).to.include('error="invalid_token"')
  })

  it('lists every tool of every server as <server>__<tool> for an admin', async () => {
    const c = await open({authorization: 'Bearer tok-admin'})
    const names = (await c.listTools()).tools.map((t) => t.name)
    expect(names).to.include.members(['everything__echo', 'everything__get-sum', 'backup__echo', 'backup__trigger-long-running-operation'])
    expect(names.filter((n) => n.startsWith('backup__')).length).to.equal(names.filter((n) => n.startsWith('everything__')).length)
    const r = await c.callTool({arguments: {a: 2, b: 3}, name: 'everything__get-sum'})
    expect(JSON.stringify(r.content)).to.include('5')
  })

  it('forwards calls to a local (stdio) upstream too', async () => {
    const c = await open({authorization: 'Bearer tok-admin'})
    const r = await c.callTool({arguments: {a: 4, b: 5}, name: 'local__get-sum'})
    expect(JSON.stringify(r.content)).to.include('9')
  })

  it('shows a viewer only read tools (readOnlyHint or the operator override) and lets it call them', async () => {
    const c = await open({authorization: 'Bearer tok-viewer'})
    const names = (await c.listTools()).tools.map((t) => t.name)
    expect(names).to.include.members(['everything__echo', 'backup__get-sum', 'everything__toggle-simulated-logging'])
    expect(names).not.to.include('backup__toggle-simulated-logging')
    expect(names).not.to.include('everything__gzip-file-as-resource')
    const r = await c.callTool({arguments: {message: 'hi'}, name: 'backup__echo'})
    expect(JSON.stringify(r.content)).to.include('hi')
  })

  it('denies a write tool to a viewer with a JSON-RPC error naming the rule', async () => {
    const c = await open({authorization: 'Bearer tok-viewer'})
    const e = await rpcError(c.callTool({arguments: {}, name: 'backup__toggle-simulated-logging'}))
    expect(e.code).to.equal(ACCESS_DENIED)
    expect(e.message).to.include('"bob" may not call backup__toggle-simulated-logging (write tool), decided by acl.default')
    expect(e.data).to.deep.include({rule: 'acl.default', subject: 'bob'})
  })

  it('writes an audit line per call (decision, rule, outcome; never the arguments), mode 0600', async () => {
    const c = await open({authorization: 'Bearer tok-viewer'})
    // Earlier tests wrote lines too (a denial of the same tool among them), and the log is
    // written asynchronously: wait for this test's two lines, not for any matching one.
    const linesIn = (text: string) => text.split('\n').filter((l) => l !== '').length
    const before = existsSync(auditFile) ? linesIn(readFileSync(auditFile, 'utf8')) : 0
    await c.callTool({arguments: {message: 'audit-secret-argument'}, name: 'everything__echo'})
    await c.callTool({arguments: {}, name: 'backup__toggle-simulated-logging'}).catch(() => {})
    await until(() => linesIn(readFileSync(auditFile, 'utf8')) >= before + 2, 5000, 'the audit lines')
    const text = readFileSync(auditFile, 'utf8')
    expect(text).not.to.include('audit-secret-argument')
    const lines = text.trim().split('\n').slice(before).map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(lines.find((l) => l.tool === 'everything__echo' && l.subject === 'bob')).to.deep.include({allowed: true, outcome: 'ok', provider: 'bearer', rule: 'acl.roles.viewer[0]'})
    expect(lines.find((l) => l.tool === 'backup__toggle-simulated-logging')).to.deep.include({allowed: false, outcome: 'denied', rule: 'acl.default', subject: 'bob'})
    expect(statSync(auditFile).mode & 0o777).to.equal(0o600)
  })

  it('a user with no roles (plain subject token) sees nothing under default deny', async () => {
    const c = await open({authorization: 'Bearer tok-plain'})
    expect((await c.listTools()).tools).to.deep.equal([])
  })

  it('authenticates forwarded requests and applies a deny grant (deny wins over the grant)', async () => {
    const c = await open({'x-forwarded-groups': 'dev', 'x-forwarded-user': 'dana'})
    const names = (await c.listTools()).tools.map((t) => t.name)
    expect(names).to.include('everything__echo')
    expect(names.some((n) => n.startsWith('backup__'))).to.equal(false)
    expect(names.some((n) => n.includes('trigger-'))).to.equal(false)
    const e = await rpcError(c.callTool({arguments: {}, name: 'everything__trigger-long-running-operation'}))
    expect(e.code).to.equal(ACCESS_DENIED)
    expect(e.message).to.include('acl.roles.dev[1]')
  })

  it("passes an upstream's own error result through unchanged", async () => {
    const c = await open({authorization: 'Bearer tok-admin'})
    const r = await c.callTool({arguments: {a: 'not a number', b: 1}, name: 'everything__get-sum'})
    expect(r.isError).to.equal(true)
    expect(JSON.stringify(r.content)).to.include('Invalid arguments for tool get-sum')
  })

  it('answers an unknown tool with InvalidParams and a suggestion', async () => {
    const c = await open({authorization: 'Bearer tok-admin'})
    const e = await rpcError(c.callTool({arguments: {}, name: 'everything__ecoh'}))
    expect(e.code).to.equal(-32602)
    expect(e.message).to.include('unknown tool "everything__ecoh" (did you mean "everything__echo"?)')
  })

  describe('bad HTTP input', () => {
    const post = (body: string, headers: Record<string, string> = {}) =>
      fetch(url, {
        body,
        headers: {accept: 'application/json, text/event-stream', authorization: 'Bearer tok-admin', 'content-type': 'application/json', ...headers},
        method: 'POST',
      })

    it('malformed JSON: 400 with a JSON-RPC parse error', async () => {
      const res = await post('{"jsonrpc": "2.0", "method": ')
      expect(res.status).to.equal(400)
      expect((await json(res)).error.code).to.equal(-32700)
    })

    it('oversized body: 413, and the server keeps serving', async () => {
      const res = await post(JSON.stringify({jsonrpc: '2.0', method: 'initialize', params: {pad: 'x'.repeat(100_000)}}))
      expect(res.status).to.equal(413)
      expect((await json(res)).error.message).to.match(/exceeds the limit of 65536 bytes/)
      const c = await open({authorization: 'Bearer tok-admin'})
      expect((await c.listTools()).tools.length).to.be.greaterThan(0)
    })

    it('a request before initialize (no session): 400', async () => {
      const res = await post(JSON.stringify({id: 1, jsonrpc: '2.0', method: 'tools/list'}))
      expect(res.status).to.equal(400)
      expect((await json(res)).error.message).to.include('initialize')
    })

    it('an unknown session id: 404 so the client re-initializes', async () => {
      const res = await post(JSON.stringify({id: 1, jsonrpc: '2.0', method: 'tools/list'}), {'mcp-session-id': 'no-such-session'})
      expect(res.status).to.equal(404)
    })

    it('a terminated session (DELETE) is gone: 404', async () => {
      const c = await connect(url, {authorization: 'Bearer tok-admin'})
      const t = c.transport as StreamableHTTPClientTransport
      const sid = t.sessionId!
      await t.terminateSession()
      await c.close()
      const res = await post(JSON.stringify({id: 1, jsonrpc: '2.0', method: 'tools/list'}), {'mcp-session-id': sid})
      expect(res.status).to.equal(404)
    })

    it("another user's session id: 403", async () => {
      const c = await open({authorization: 'Bearer tok-admin'})
      const sid = (c.transport as StreamableHTTPClientTransport).sessionId!
      const res = await post(JSON.stringify({id: 1, jsonrpc: '2.0', method: 'tools/list'}), {authorization: 'Bearer tok-viewer', 'mcp-session-id': sid})
      expect(res.status).to.equal(403)
    })

    it('a JSON-RPC request with an invalid shape gets a JSON-RPC error, not a crash', async () => {
      const c = await open({authorization: 'Bearer tok-admin'})
      const sid = (c.transport as StreamableHTTPClientTransport).sessionId!
      const res = await post(JSON.stringify({id: 7, jsonrpc: '2.0', method: 'tools/call', params: {name: 42}}), {'mcp-protocol-version': '2025-06-18', 'mcp-session-id': sid})
      const body = await json(res)
      expect(body.id).to.equal(7)
      expect(body.error.code).to.be.oneOf([-32602, -32603])
      expect(body.error.message).to.match(/invalid|expected/i)
    })

    it('a foreign Host header on a loopback bind: 403 (DNS rebinding)', async () => {
      const {request} = await import('node:http')
      const status = await new Promise<number>((resolve, reject) => {
        const r = request(url, {headers: {authorization: 'Bearer tok-admin', host: 'evil.example'}, method: 'GET'}, (res) => {
          res.resume()
          resolve(res.statusCode!)
        })
        r.on('error', reject)
        r.end()
      })
      expect(status).to.equal(403)
    })

    it('an unknown path: 404', async () => {
      expect((await fetch(new URL('/nope', url))).status).to.equal(404)
    })
  })

  it('reports the upstreams in /health', async () => {
    const h = await json(await fetch(new URL('/health', url)))
    expect(h.status).to.equal('ok')
    expect(h.upstreams.map((u: {name: string; state: string}) => `${u.name}:${u.state}`).sort()).to.deep.equal(['backup:up', 'everything:up', 'local:up'])
  })

  it('hides the tools of an upstream that goes down, answers its calls clearly, and brings them back on reconnect', async () => {
    const c = await open({authorization: 'Bearer tok-admin'})
    let changes = 0
    c.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changes++
    })
    await b.kill()
    await until(async () => !(await c.listTools()).tools.some((t) => t.name.startsWith('backup__')), 10_000, 'backup tools to disappear')
    const e = await rpcError(c.callTool({arguments: {message: 'x'}, name: 'backup__echo'}))
    expect(e.message, e.message).to.match(/server "backup" is unavailable: down \(.*connection (refused|reset)/)
    const ok = await c.callTool({arguments: {message: 'still here'}, name: 'everything__echo'})
    expect(JSON.stringify(ok.content)).to.include('still here')
    const h = await json(await fetch(new URL('/health', url)))
    expect(h.status).to.equal('degraded')
    await until(() => changes > 0, 5000, 'notifications/tools/list_changed')
    await b.restart()
    await until(async () => (await c.listTools()).tools.some((t) => t.name === 'backup__echo'), 20_000, 'backup tools to return')
    const back = await c.callTool({arguments: {message: 'back'}, name: 'backup__echo'})
    expect(JSON.stringify(back.content)).to.include('back')
  })
})
