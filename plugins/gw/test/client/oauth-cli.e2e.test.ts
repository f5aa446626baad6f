import {expect} from 'chai'
import {mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {startOAuthMcpServer, type OAuthMcpFixture} from '../fixtures/oauth-mcp-server.mjs'
import {records, toolkit} from './cli.js'
import {browser, freePort, occupy} from './helpers.js'

describe('gw auth and call through the CLI against the OAuth fixture', function () {
  this.timeout(60_000)
  let server: OAuthMcpFixture
  let dir: string
  let home: string
  let port: number
  const authFile = (): string => join(home, '.config', 'toolkit', 'gw-auth.json')
  const run = (args: string[], extra: Partial<Parameters<typeof toolkit>[1]> = {}) =>
    toolkit(args, {cwd: dir, home, ...extra, env: {GW_OAUTH_CALLBACK_PORT: String(port), GW_OAUTH_TIMEOUT: '20', ...extra.env}})

  beforeEach(async () => {
    server = await startOAuthMcpServer({staticTokens: ['static-secret']})
    dir = mkdtempSync(join(tmpdir(), 'gw-oauth-cli-'))
    home = join(dir, 'home')
    mkdirSync(home)
    port = await freePort()
    writeFileSync(join(dir, 'servers.json'), JSON.stringify({gwServers: {fixture: {url: server.url}}}))
  })
  afterEach(async () => {
    await server.close()
    rmSync(dir, {force: true, recursive: true})
  })

  /** `gw auth login` without a terminal prints the URL; the test is the browser. */
  async function login(): Promise<void> {
    let opened = false
    const r = await run(['gw', 'auth', 'login', 'fixture'], {
      onStderr(text) {
        const m = /(http:\/\/127\.0\.0\.1:\d+\/authorize\?\S+)/.exec(text)
        if (m && !opened) {
          opened = true
          browser()(m[1]).catch(() => {})
        }
      },
    })
    expect(r.code, r.stderr).to.equal(0)
    expect(r.stdout).to.include('fixture: signed in with OAuth, tokens saved')
  }

  it('login prints the authorization URL without a TTY, saves tokens to ~/.config/toolkit/gw-auth.json (0600); call reuses them', async () => {
    await login()
    expect(statSync(authFile()).mode & 0o777).to.equal(0o600)
    const saved = JSON.parse(readFileSync(authFile(), 'utf8'))
    expect(saved.tokens[server.url].expires_at).to.be.a('number')
    const r = await run(['gw', 'call', 'fixture', 'whoami', '--format', 'json'])
    expect(r.code, r.stderr).to.equal(0)
    expect(records(r.stdout)[0].structuredContent).to.deep.equal({clientId: saved.clients[server.url].client_id})
    expect(server.stats.authorizations).to.equal(1)
    expect(r.stdout + r.stderr).to.not.include(saved.tokens[server.url].access_token)
  })

  it('status and servers show the state without printing secrets; logout forgets it', async () => {
    await login()
    const saved = readFileSync(authFile(), 'utf8')
    const status = await run(['gw', 'auth', 'status', '--format', 'json'])
    const [rec] = records(status.stdout)
    expect(rec).to.include({auth: 'token', name: 'fixture', registered_client: true})
    expect(status.stdout).to.not.include(JSON.parse(saved).tokens[server.url].access_token)
    const out = await run(['gw', 'auth', 'logout', 'fixture'])
    expect(out.stdout.trim()).to.equal('fixture: signed out')
    expect(JSON.parse(readFileSync(authFile(), 'utf8'))).to.deep.equal({clients: {}, tokens: {}})
    const text = await run(['gw', 'servers'])
    expect(text.stdout).to.include('not signed in')
  })

  it('without a TTY and without a token, a call fails with exit 3 and says how to sign in', async () => {
    const r = await run(['gw', 'call', 'fixture', 'whoami'])
    expect(r.code).to.equal(3)
    expect(r.stderr).to.match(/no terminal is attached to sign in.*toolkit gw auth login fixture/)
    expect(server.stats.authorizations).to.equal(0)
  })

  it('login --token-stdin saves a token the server accepts, and refuses one it rejects', async () => {
    const ok = await run(['gw', 'auth', 'login', 'fixture', '--token-stdin'], {input: 'static-secret\n'})
    expect(ok.code, ok.stderr).to.equal(0)
    expect(ok.stdout.trim()).to.equal('fixture: token accepted and saved')
    expect(JSON.parse(readFileSync(authFile(), 'utf8')).tokens[server.url].access_token).to.equal('static-secret')
    const bad = await run(['gw', 'auth', 'login', 'fixture', '--token-stdin'], {input: 'nope\n'})
    expect(bad.code).to.equal(3)
    expect(bad.stderr).to.include('rejected the given token')
    expect(JSON.parse(readFileSync(authFile(), 'utf8')).tokens[server.url].access_token, 'previous token kept').to.equal('static-secret')
  })

  it('moves an existing ~/.config/gw/auth.json to the host configuration directory once, and uses it', async () => {
    const legacy = join(home, '.config', 'gw', 'auth.json')
    mkdirSync(join(home, '.config', 'gw'), {recursive: true})
    writeFileSync(legacy, JSON.stringify({clients: {}, tokens: {[server.url]: {access_token: 'static-secret', token_type: 'Bearer'}}}), {mode: 0o600})
    const r = await run(['gw', 'call', 'fixture', 'whoami', '--format', 'json'])
    expect(r.code, r.stderr).to.equal(0)
    expect(r.stderr).to.include(`moved the gw token store from ${legacy} to ${authFile()}`)
    expect(() => statSync(legacy)).to.throw()
    expect(statSync(authFile()).mode & 0o777).to.equal(0o600)
    expect(JSON.parse(readFileSync(authFile(), 'utf8')).tokens[server.url].access_token).to.equal('static-secret')
    const again = await run(['gw', 'call', 'fixture', 'whoami'])
    expect(again.code, again.stderr).to.equal(0)
    expect(again.stderr).not.to.include('moved')
  })

  it('a tool result that is an error exits 1 with the server message, the content still printed', async () => {
    await run(['gw', 'auth', 'login', 'fixture', '--token-stdin'], {input: 'static-secret'})
    const r = await run(['gw', 'call', 'fixture', 'fail', '--format', 'json'])
    expect(r.code).to.equal(1)
    expect(r.stderr).to.include('tool "fail" on "fixture" failed: the fixture refuses')
    const [result, error] = records(r.stdout)
    expect(result).to.include({isError: true, type: 'result'})
    expect(error).to.deep.include({type: 'error'})
  })

  it('callback ports all busy: exit 1 naming the ports and GW_OAUTH_CALLBACK_PORT', async () => {
    const second = await freePort()
    const [lo, hi] = [Math.min(port, second), Math.max(port, second)]
    const blockers = await Promise.all([lo, hi].map((p) => occupy(p)))
    try {
      // A range with holes in the middle may be free; take the whole range only when it is two ports.
      const range = hi - lo === 1 ? `${lo}-${hi}` : String(lo)
      const r = await run(['gw', 'auth', 'login', 'fixture'], {env: {GW_OAUTH_CALLBACK_PORT: range}})
      expect(r.code).to.equal(1)
      expect(r.stderr).to.match(/cannot listen for the OAuth callback: localhost ports? \d+(-\d+)? (is|are all) in use; .*GW_OAUTH_CALLBACK_PORT/)
    } finally {
      for (const b of blockers) b.close()
    }
  })

  it('an invalid GW_OAUTH_CALLBACK_PORT is a usage error', async () => {
    const r = await run(['gw', 'auth', 'login', 'fixture'], {env: {GW_OAUTH_CALLBACK_PORT: '80-abc'}})
    expect(r.code).to.equal(2)
    expect(r.stderr).to.include('GW_OAUTH_CALLBACK_PORT must be a port (8090) or a range (8090-8095)')
  })

  it('login without a terminal on a server without registration: exit 3 pointing to --token-stdin', async () => {
    const closed = await startOAuthMcpServer({dcr: false})
    try {
      const cfg = join(dir, 'closed.json')
      writeFileSync(cfg, JSON.stringify({gwServers: {closed: {url: closed.url}}}))
      const r = await run(['gw', 'auth', 'login', 'closed', '--config', cfg])
      expect(r.code).to.equal(3)
      expect(r.stderr).to.include('no terminal to type a token: pipe one to `toolkit gw auth login <server> --token-stdin`')
    } finally {
      await closed.close()
    }
  })

  it('GW_AUTH_FILE moves the token store', async () => {
    const elsewhere = join(dir, 'elsewhere', 'auth.json')
    const r = await run(['gw', 'auth', 'login', 'fixture', '--token-stdin'], {env: {GW_AUTH_FILE: elsewhere}, input: 'static-secret'})
    expect(r.code, r.stderr).to.equal(0)
    expect(JSON.parse(readFileSync(elsewhere, 'utf8')).tokens[server.url].access_token).to.equal('static-secret')
    expect(() => statSync(authFile())).to.throw()
  })
})
