import {expect} from 'chai'
import {mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {startOAuthMcpServer, type OAuthMcpFixture} from '../fixtures/oauth-mcp-server.mjs'
import {serveCli} from '../proxy/helpers.js'
import {type RunResult, toolkit} from './cli.js'
import {browser, freePort} from './helpers.js'
import {filesUnder} from '../../../../packages/kit/test/helpers/files-under.js'

const TOOLS_ONLY = fileURLToPath(new URL('../fixtures/tools-only-server.mjs', import.meta.url))
const STATIC = 'Static-Bearer-9c1e7b44'
const WRONG = 'Wrong-Bearer-0d3f5a61'
const UPSTREAM_KEY = 'Upstream-Api-Key-5be2c9'

// Issue 20: tokens gw holds (OAuth access and refresh tokens, a static bearer token and an API key
// given in servers.json, a wrong token refused by the server) never reach stdout, stderr, error
// messages, --format json output, the audit log or any file except the token store, which is 0600.
describe('gw never prints or writes the tokens it holds (built CLI, OAuth fixture, stdio upstream)', function () {
  this.timeout(180_000)
  let server: OAuthMcpFixture
  let dir: string
  let home: string
  let port: number
  const outputs: RunResult[] = []
  const authFile = (): string => join(home, '.config', 'toolkit', 'gw-auth.json')
  const run = async (args: string[], extra: Partial<Parameters<typeof toolkit>[1]> = {}): Promise<RunResult> => {
    const r = await toolkit(args, {cwd: dir, home, ...extra, env: {GW_OAUTH_CALLBACK_PORT: String(port), GW_OAUTH_TIMEOUT: '20', ...extra.env}})
    outputs.push(r)
    return r
  }

  before(async () => {
    // Access tokens live 2 s, so the commands below also refresh them (and send the refresh token).
    server = await startOAuthMcpServer({accessTtl: 2, staticTokens: [STATIC]})
    dir = mkdtempSync(join(tmpdir(), 'gw-secrets-'))
    home = join(dir, 'home')
    mkdirSync(home)
    port = await freePort()
    writeFileSync(
      join(dir, 'servers.json'),
      JSON.stringify({
        gwServers: {
          fixture: {url: server.url},
          local: {args: [TOOLS_ONLY], command: process.execPath, env: {API_KEY: UPSTREAM_KEY}},
          static: {headers: {Authorization: `Bearer ${STATIC}`}, url: server.url},
          wrong: {headers: {Authorization: `Bearer ${WRONG}`}, url: server.url},
        },
        serve: {rateLimit: 0},
      }),
    )
  })

  after(async () => {
    await server.close()
    rmSync(dir, {force: true, recursive: true})
  })

  it('keeps every token out of what the commands print and write; the token store is 0600', async () => {
    let opened = false
    const login = await run(['gw', 'auth', 'login', 'fixture'], {
      onStderr(text) {
        const m = /(http:\/\/127\.0\.0\.1:\d+\/authorize\?\S+)/.exec(text)
        if (m && !opened) {
          opened = true
          browser()(m[1]).catch(() => {})
        }
      },
    })
    expect(login.code, login.stderr).to.equal(0)
    const first = JSON.parse(readFileSync(authFile(), 'utf8')).tokens[server.url] as {access_token: string; refresh_token: string}
    expect(first.refresh_token, 'the fixture issues refresh tokens: the test would prove less').to.be.a('string')

    // Each command once, in the format where it shows the most (records carry every field).
    await run(['gw', 'servers', '--format', 'json'])
    await run(['gw', 'auth', 'status'])
    await run(['gw', 'tools', 'fixture', '--format', 'json'])
    expect((await run(['gw', 'call', 'static', 'whoami', '--format', 'json'])).code).to.equal(0)
    await run(['gw', 'call', 'fixture', 'no-such-tool'])
    expect((await run(['gw', 'call', 'wrong', 'whoami', '--format', 'json'])).code, 'a refused token').to.not.equal(0)
    await run(['gw', 'call', 'local', 'ping'])
    await new Promise((r) => setTimeout(r, 2100))
    expect((await run(['gw', 'call', 'fixture', 'whoami', '--format', 'json'])).code).to.equal(0)
    expect(server.stats.refreshes, 'the expired access token was refreshed').to.be.greaterThan(0)

    // The proxy, with an audit log, calling the upstreams that hold the tokens.
    const audit = join(dir, 'audit.log')
    const s = await serveCli(['--port', '0', '--config', join(dir, 'servers.json'), '--audit-log', audit], {...process.env, HOME: home, TOOLKIT_CONFIG_DIR: join(home, '.config', 'toolkit'), XDG_CONFIG_HOME: join(home, '.config')})
    const {Client} = await import('@modelcontextprotocol/sdk/client/index.js')
    const {StreamableHTTPClientTransport} = await import('@modelcontextprotocol/sdk/client/streamableHttp.js')
    const client = new Client({name: 'secrets', version: '1'})
    await client.connect(new StreamableHTTPClientTransport(new URL(s.url)))
    const names = (await client.listTools()).tools.map((t) => t.name)
    for (const name of names.filter((n) => /whoami|ping/.test(n))) await client.callTool({arguments: {}, name}).catch((error: Error) => outputs.push({code: 1, stderr: error.message, stdout: ''}))
    await client.close()
    s.child.kill('SIGTERM')
    await new Promise((r) => s.child.once('exit', r))
    outputs.push({code: 0, stderr: s.stderr(), stdout: ''})

    const stored = JSON.parse(readFileSync(authFile(), 'utf8')).tokens[server.url] as undefined | {access_token: string; refresh_token: string}
    const secrets = [first.access_token, first.refresh_token, stored?.access_token, stored?.refresh_token, STATIC, WRONG, UPSTREAM_KEY].filter((x): x is string => typeof x === 'string')
    const printed = outputs.map((o) => `${o.stdout}\n${o.stderr}`).join('\n')
    expect(printed).to.include('whoami')
    for (const secret of secrets) expect(printed, `a token was printed`).to.not.include(secret)
    expect(statSync(authFile()).mode & 0o777).to.equal(0o600)
    for (const f of [...filesUnder(home), audit]) {
      if (f === authFile()) continue
      const text = readFileSync(f, 'utf8')
      for (const secret of secrets) expect(text.includes(secret), `a token found in ${f}`).to.equal(false)
    }
  })
})
