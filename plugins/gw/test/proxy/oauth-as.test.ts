import type {OAuthClientProvider} from '@modelcontextprotocol/sdk/client/auth.js'
import {UnauthorizedError} from '@modelcontextprotocol/sdk/client/auth.js'
import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type {OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens} from '@modelcontextprotocol/sdk/shared/auth.js'
import {McpError} from '@modelcontextprotocol/sdk/types.js'
import {expect} from 'chai'
import {createHash, randomBytes} from 'node:crypto'
import {request} from 'node:http'

import getPort from 'get-port'

import {ACCESS_DENIED} from '../../src/proxy/aggregator.js'
import {type RunningProxy, startServe} from '../../src/proxy/serve.js'
import {StdioClientTransport} from '@modelcontextprotocol/sdk/client/stdio.js'
import {mkdtempSync, readFileSync, rmSync, statSync} from 'node:fs'
import {createRequire} from 'node:module'
import {tmpdir} from 'node:os'
import {dirname, join} from 'node:path'

import {type Everything, memoryTokenStore, startEverything, until} from './helpers.js'

const MCP_REMOTE = join(dirname(createRequire(import.meta.url).resolve('mcp-remote/package.json')), 'dist/proxy.js')

const SECRET = 'test-secret-that-is-long-enough-for-hs256!'
const REDIRECT = 'http://localhost:53682/callback'
const BROWSER = {'x-forwarded-groups': 'dev', 'x-forwarded-user': 'sam'}

/** An OAuth client provider for the SDK client whose "browser" is a fetch carrying the reverse proxy's user headers. */
class TestOAuthProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed
  lastAuthorizationUrl?: URL
  saved?: OAuthTokens
  verifier = ''
  constructor(private readonly redirect = REDIRECT) {}
  get clientMetadata(): OAuthClientMetadata {
    return {client_name: 'sdk test client', grant_types: ['authorization_code', 'refresh_token'], redirect_uris: [this.redirect], response_types: ['code'], token_endpoint_auth_method: 'none'}
  }
  get redirectUrl() {
    return this.redirect
  }
  clientInformation() {
    return this.client
  }
  codeVerifier() {
    return this.verifier
  }
  redirectToAuthorization(url: URL) {
    this.lastAuthorizationUrl = url
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info
  }
  saveCodeVerifier(v: string) {
    this.verifier = v
  }
  saveTokens(t: OAuthTokens) {
    this.saved = t
  }
  tokens() {
    return this.saved
  }
}

/** Plays the browser: GET the authorization URL with the trusted headers, return the redirect's code. */
async function followAuthorization(url: URL, headers: Record<string, string> = BROWSER): Promise<{code?: string; location: URL; status: number}> {
  const res = await fetch(url, {headers, redirect: 'manual'})
  const location = new URL(res.headers.get('location') ?? 'http://none/')
  return {code: location.searchParams.get('code') ?? undefined, location, status: res.status}
}

async function form(url: string, params: Record<string, string>): Promise<{body: Record<string, unknown>; status: number}> {
  const res = await fetch(url, {body: new URLSearchParams(params), headers: {'content-type': 'application/x-www-form-urlencoded'}, method: 'POST'})
  return {body: (await res.json()) as Record<string, unknown>, status: res.status}
}

function pkce(): {challenge: string; verifier: string} {
  const verifier = randomBytes(32).toString('base64url')
  return {challenge: createHash('sha256').update(verifier).digest('base64url'), verifier}
}

/** A raw HTTP request from a chosen local address (127.0.0.2 is loopback too, but outside 127.0.0.1/32). */
function fromAddress(url: string, localAddress: string, init: {body?: string; headers?: Record<string, string>; method?: string}): Promise<{body: string; status: number}> {
  return new Promise((resolve, reject) => {
    const r = request(url, {headers: init.headers, localAddress, method: init.method ?? 'GET'}, (res) => {
      let body = ''
      res.on('data', (d) => (body += d))
      res.on('end', () => resolve({body, status: res.statusCode!}))
    })
    r.on('error', reject)
    r.end(init.body)
  })
}

describe('gw serve --http with oauth_as (built-in authorization server)', function () {
  this.timeout(60_000)
  let upstream: Everything
  let proxy: RunningProxy
  let base: string
  let mcpUrl: string

  before(async () => {
    upstream = await startEverything()
    const port = await getPort({host: '127.0.0.1'})
    base = `http://127.0.0.1:${port}`
    proxy = await startServe({
      config: {
        file: '/virtual/servers.json',
        raw: {
          gwServers: {everything: {url: upstream.url}},
          serverAuth: {
            acl: {default: 'deny', roles: {dev: [{access: 'read', server: '*'}], 'oauth-user': [{access: '*', server: '*', tools: ['get-sum']}]}},
            bearer: {tokens: {'static-token': {roles: ['dev'], subject: 'robot'}}},
            oauthAs: {
              injectedRoles: ['oauth-user'],
              issuerUrl: base,
              jwtSecret: '${GW_JWT_SECRET}',
              redirectUriAllowlist: [REDIRECT, 'http://localhost/oauth/callback'],
              trustedSourceCidrs: ['127.0.0.1/32', '::1/128'],
            },
            providers: ['oauth_as', 'bearer'],
          },
        },
        servers: {everything: {url: upstream.url}},
      },
      env: {GW_JWT_SECRET: SECRET},
      http: {host: '127.0.0.1', port},
      log: () => {},
      store: memoryTokenStore(),
    })
    mcpUrl = proxy.url!
  })

  after(async () => {
    await proxy?.close()
    await upstream?.kill()
  })

  it('publishes RFC 8414 and RFC 9728 metadata, advertising only S256', async () => {
    const as = (await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>
    expect(as).to.deep.include({
      authorization_endpoint: `${base}/authorize`,
      code_challenge_methods_supported: ['S256'],
      issuer: `${base}/`,
      registration_endpoint: `${base}/register`,
      token_endpoint: `${base}/token`,
    })
    const prm = (await (await fetch(`${base}/.well-known/oauth-protected-resource/mcp`)).json()) as Record<string, unknown>
    expect(prm).to.deep.include({authorization_servers: [`${base}/`], resource: mcpUrl})
  })

  it('points clients at the metadata from the 401 challenge', async () => {
    const res = await fetch(mcpUrl, {body: '{}', headers: {'content-type': 'application/json'}, method: 'POST'})
    expect(res.status).to.equal(401)
    expect(res.headers.get('www-authenticate')).to.include(`resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`)
  })

  it('runs the full flow with the SDK client: registration, PKCE authorization, token, tool call, refresh', async () => {
    const provider = new TestOAuthProvider()
    const first = new Client({name: 'sdk-oauth', version: '1'})
    let transport = new StreamableHTTPClientTransport(new URL(mcpUrl), {authProvider: provider})
    let unauthorized = false
    try {
      await first.connect(transport)
    } catch (error) {
      unauthorized = error instanceof UnauthorizedError
    }
    expect(unauthorized, 'the first connect needs the user').to.equal(true)
    expect(provider.client?.client_id, 'dynamic registration').to.be.a('string')
    const authUrl = provider.lastAuthorizationUrl!
    expect(authUrl.searchParams.get('code_challenge_method')).to.equal('S256')
    const {code, location} = await followAuthorization(authUrl)
    expect(location.origin + location.pathname).to.equal(REDIRECT)
    expect(location.searchParams.get('iss')).to.equal(`${base}/`)
    await transport.finishAuth(code!)
    expect(provider.saved?.refresh_token).to.be.a('string')

    const client = new Client({name: 'sdk-oauth', version: '1'})
    transport = new StreamableHTTPClientTransport(new URL(mcpUrl), {authProvider: provider})
    await client.connect(transport)
    // groups header "dev" (read tools) plus injected "oauth-user" (get-sum, any access)
    const names = (await client.listTools()).tools.map((t) => t.name)
    expect(names).to.include.members(['everything__echo', 'everything__get-sum'])
    expect(names).not.to.include('everything__toggle-simulated-logging')
    const sum = await client.callTool({arguments: {a: 20, b: 22}, name: 'everything__get-sum'})
    expect(JSON.stringify(sum.content)).to.include('42')
    const denied = await client.callTool({arguments: {}, name: 'everything__toggle-simulated-logging'}).catch((error: McpError) => error)
    expect((denied as McpError).code).to.equal(ACCESS_DENIED)
    await client.close()

    // Refresh: the SDK client meets a 401 with a dead access token and uses the refresh token.
    const oldRefresh = provider.saved!.refresh_token!
    provider.saved = {...provider.saved!, access_token: 'expired.or.garbage'}
    const again = new Client({name: 'sdk-oauth', version: '1'})
    await again.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), {authProvider: provider}))
    expect(provider.saved.refresh_token).to.be.a('string').and.not.equal(oldRefresh)
    expect((await again.listTools()).tools.length).to.be.greaterThan(0)
    await again.close()

    // Rotation: the old refresh token is dead, and replaying it revokes the new one too.
    const replay = await form(`${base}/token`, {client_id: provider.client!.client_id, grant_type: 'refresh_token', refresh_token: oldRefresh})
    expect(replay.status).to.equal(400)
    expect(replay.body.error).to.equal('invalid_grant')
    const afterReplay = await form(`${base}/token`, {client_id: provider.client!.client_id, grant_type: 'refresh_token', refresh_token: provider.saved.refresh_token!})
    expect(afterReplay.body.error).to.equal('invalid_grant')
  })

  it('completes the flow with a third-party client (mcp-remote) and proxies its tool calls', async function () {
    this.timeout(150_000)
    const home = mkdtempSync(join(tmpdir(), 'gw-mcp-remote-'))
    const callbackPort = await getPort({host: '127.0.0.1'})
    const transport = new StdioClientTransport({
      args: [MCP_REMOTE, mcpUrl, String(callbackPort), '--allow-http'],
      command: process.execPath,
      env: {...(process.env as Record<string, string>), BROWSER: 'true', DISPLAY: '', HOME: home, MCP_REMOTE_CONFIG_DIR: join(home, '.mcp-auth')},
      stderr: 'pipe',
    })
    let log = ''
    transport.stderr!.on('data', (d) => (log += d))
    const client = new Client({name: 'via-mcp-remote', version: '1'})
    const connecting = client.connect(transport)
    try {
      await until(() => /authorize this client by visiting:\s*\n?\s*(\S+)/.test(log), 90_000, 'mcp-remote to print the authorization URL')
      const authUrl = new URL(/authorize this client by visiting:\s*\n?\s*(\S+)/.exec(log)![1])
      const {location} = await followAuthorization(authUrl)
      expect(location.port).to.equal(String(callbackPort))
      const cb = await fetch(location)
      expect(cb.status).to.equal(200)
      await connecting
      const names = (await client.listTools()).tools.map((t) => t.name)
      expect(names).to.include('everything__get-sum')
      const sum = await client.callTool({arguments: {a: 40, b: 2}, name: 'everything__get-sum'})
      expect(JSON.stringify(sum.content)).to.include('42')
    } catch (error) {
      throw new Error(`${(error as Error).message}\nmcp-remote said:\n${log}`)
    } finally {
      await client.close().catch(() => {})
      rmSync(home, {force: true, recursive: true})
    }
  })

  it('accepts static bearer tokens on the same endpoint', async () => {
    const c = new Client({name: 'bearer', version: '1'})
    await c.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), {requestInit: {headers: {authorization: 'Bearer static-token'}}}))
    expect((await c.listTools()).tools.map((t) => t.name)).to.include('everything__echo')
    await c.close()
  })

  describe('bad input', () => {
    let clientId: string
    before(async () => {
      const res = await fetch(`${base}/register`, {
        body: JSON.stringify({redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none'}),
        headers: {'content-type': 'application/json'},
        method: 'POST',
      })
      expect(res.status).to.equal(201)
      clientId = ((await res.json()) as {client_id: string}).client_id
    })

    const authorizeUrl = (challenge: string, extra: Record<string, string> = {}) =>
      new URL(`${base}/authorize?${new URLSearchParams({client_id: clientId, code_challenge: challenge, code_challenge_method: 'S256', redirect_uri: REDIRECT, response_type: 'code', state: 's1', ...extra})}`)

    it('refuses a redirect URI outside the allowlist at registration (400 invalid_redirect_uri)', async () => {
      const res = await fetch(`${base}/register`, {body: JSON.stringify({redirect_uris: ['https://evil.example/cb']}), headers: {'content-type': 'application/json'}, method: 'POST'})
      expect(res.status).to.equal(400)
      expect(await res.json()).to.deep.include({error: 'invalid_redirect_uri'})
      const none = await fetch(`${base}/register`, {body: JSON.stringify({redirect_uris: []}), headers: {'content-type': 'application/json'}, method: 'POST'})
      expect(none.status).to.equal(400)
      expect(await none.json()).to.deep.include({error: 'invalid_redirect_uri', error_description: 'redirect_uris must list at least one redirect URI'})
    })

    it('refuses registration and authorization from outside trustedSourceCidrs (403)', async () => {
      const reg = await fromAddress(`${base}/register`, '127.0.0.2', {
        body: JSON.stringify({redirect_uris: [REDIRECT]}),
        headers: {'content-type': 'application/json'},
        method: 'POST',
      })
      expect(reg.status).to.equal(403)
      expect(JSON.parse(reg.body).error).to.equal('access_denied')
      const auth = await fromAddress(authorizeUrl(pkce().challenge).href, '127.0.0.2', {headers: BROWSER})
      expect(auth.status).to.equal(403)
    })

    it('refuses authorization without the trusted user header (401)', async () => {
      const {status} = await followAuthorization(authorizeUrl(pkce().challenge), {})
      expect(status).to.equal(401)
    })

    it('refuses PKCE plain and a missing challenge (error redirect, no code)', async () => {
      const plain = await followAuthorization(authorizeUrl('abc', {code_challenge_method: 'plain'}))
      expect(plain.code).to.equal(undefined)
      expect(plain.location.searchParams.get('error')).to.equal('invalid_request')
    })

    it('a wrong PKCE verifier fails and burns the code; a reused code fails', async () => {
      const p = pkce()
      const {code} = await followAuthorization(authorizeUrl(p.challenge))
      const wrong = await form(`${base}/token`, {client_id: clientId, code: code!, code_verifier: pkce().verifier, grant_type: 'authorization_code', redirect_uri: REDIRECT})
      expect(wrong.status).to.equal(400)
      expect(wrong.body.error).to.equal('invalid_grant')
      const burnt = await form(`${base}/token`, {client_id: clientId, code: code!, code_verifier: p.verifier, grant_type: 'authorization_code', redirect_uri: REDIRECT})
      expect(burnt.body.error).to.equal('invalid_grant')

      const q = pkce()
      const second = await followAuthorization(authorizeUrl(q.challenge))
      const ok = await form(`${base}/token`, {client_id: clientId, code: second.code!, code_verifier: q.verifier, grant_type: 'authorization_code', redirect_uri: REDIRECT})
      expect(ok.status).to.equal(200)
      expect(ok.body.token_type).to.equal('Bearer')
      const reused = await form(`${base}/token`, {client_id: clientId, code: second.code!, code_verifier: q.verifier, grant_type: 'authorization_code', redirect_uri: REDIRECT})
      expect(reused.status).to.equal(400)
      expect(reused.body.error).to.equal('invalid_grant')
    })

    it('answers a tampered or foreign-signed JWT on /mcp with 401 and keeps serving', async () => {
      const p = pkce()
      const {code} = await followAuthorization(authorizeUrl(p.challenge))
      const ok = await form(`${base}/token`, {client_id: clientId, code: code!, code_verifier: p.verifier, grant_type: 'authorization_code', redirect_uri: REDIRECT})
      const [h, payload, s] = String(ok.body.access_token).split('.')
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString())
      claims.roles = ['admin']
      const tampered = [h, Buffer.from(JSON.stringify(claims)).toString('base64url'), s].join('.')
      const res = await fetch(mcpUrl, {body: '{}', headers: {authorization: `Bearer ${tampered}`, 'content-type': 'application/json'}, method: 'POST'})
      expect(res.status).to.equal(401)
      // oauth_as is the first provider, so its error is the one reported.
      expect(await res.json()).to.deep.include({error: 'invalid_token', error_description: 'invalid access token'})
      const good = new Client({name: 'jwt', version: '1'})
      await good.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), {requestInit: {headers: {authorization: `Bearer ${ok.body.access_token}`}}}))
      expect((await good.listTools()).tools.length).to.be.greaterThan(0)
      await good.close()
    })

    it('answers an expired JWT on /mcp with 401 "access token expired"', async () => {
      const {SignJWT} = await import('jose')
      const past = Math.floor(Date.now() / 1000) - 60
      const jwt = await new SignJWT({roles: ['dev']})
        .setProtectedHeader({alg: 'HS256'})
        .setIssuer(`${base}/`)
        .setAudience(mcpUrl)
        .setSubject('sam')
        .setIssuedAt(past - 3600)
        .setExpirationTime(past)
        .sign(new TextEncoder().encode(SECRET))
      const res = await fetch(mcpUrl, {body: '{}', headers: {authorization: `Bearer ${jwt}`, 'content-type': 'application/json'}, method: 'POST'})
      expect(res.status).to.equal(401)
      expect(res.headers.get('www-authenticate')).to.include('error_description="access token expired"')
    })

    it('refuses a token request for an unknown client', async () => {
      const r = await form(`${base}/token`, {client_id: 'nobody', code: 'x', code_verifier: pkce().verifier, grant_type: 'authorization_code'})
      expect(r.status).to.equal(400)
      expect(r.body.error).to.equal('invalid_client')
    })
  })

  describe('state across restarts', () => {
    it('keeps registered clients and refresh tokens in a 0600 state file (digests only) across a restart', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'gw-oauth-state-'))
      const stateFile = join(dir, 'gw', 'oauth-as-state.json')
      const port = await getPort({host: '127.0.0.1'})
      const issuer = `http://127.0.0.1:${port}`
      const start = () =>
        startServe({
          config: {
            file: undefined,
            raw: {
              gwServers: {everything: {url: upstream.url}},
              serverAuth: {
                oauthAs: {issuerUrl: issuer, jwtSecret: SECRET, redirectUriAllowlist: [REDIRECT], trustedSourceCidrs: ['127.0.0.1']},
                providers: ['oauth_as'],
              },
            },
            servers: {everything: {url: upstream.url}},
          },
          env: {},
          http: {host: '127.0.0.1', port},
          log: () => {},
          oauthStateFile: stateFile,
          store: memoryTokenStore(),
        })
      let p = await start()
      try {
        const reg = await fetch(`${issuer}/register`, {body: JSON.stringify({redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none'}), headers: {'content-type': 'application/json'}, method: 'POST'})
        const {client_id: clientId} = (await reg.json()) as {client_id: string}
        const v = pkce()
        const auth = new URL(`${issuer}/authorize?${new URLSearchParams({client_id: clientId, code_challenge: v.challenge, code_challenge_method: 'S256', redirect_uri: REDIRECT, response_type: 'code'})}`)
        const {code} = await followAuthorization(auth)
        const tokens = await form(`${issuer}/token`, {client_id: clientId, code: code!, code_verifier: v.verifier, grant_type: 'authorization_code', redirect_uri: REDIRECT})
        const refreshToken = String(tokens.body.refresh_token)
        await p.close()
        const text = readFileSync(stateFile, 'utf8')
        expect(statSync(stateFile).mode & 0o777).to.equal(0o600)
        expect(text).to.include(clientId)
        expect(text).not.to.include(refreshToken)

        p = await start()
        const refreshed = await form(`${issuer}/token`, {client_id: clientId, grant_type: 'refresh_token', refresh_token: refreshToken})
        expect(refreshed.status, JSON.stringify(refreshed.body)).to.equal(200)
        const again = await followAuthorization(auth)
        expect(again.code, 'the client is still registered').to.be.a('string')
      } finally {
        await p.close()
        rmSync(dir, {force: true, recursive: true})
      }
    })

    it('refuses to start on a corrupt state file instead of overwriting it', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'gw-oauth-state-'))
      const stateFile = join(dir, 'state.json')
      const {writeFileSync} = await import('node:fs')
      writeFileSync(stateFile, '{"clients": {', {mode: 0o600})
      try {
        let error: Error | undefined
        await startServe({
          config: {file: undefined, raw: {serverAuth: {oauthAs: {issuerUrl: 'http://127.0.0.1:1', jwtSecret: SECRET, redirectUriAllowlist: [REDIRECT], stateFile, trustedSourceCidrs: ['127.0.0.1']}, providers: ['oauth_as']}}, servers: {}},
          env: {},
          http: {host: '127.0.0.1', port: 0},
          log: () => {},
          store: memoryTokenStore(),
        }).catch((error_: Error) => (error = error_))
        expect(error?.message).to.match(/state.json: the oauth_as state file is not valid JSON/)
        expect(readFileSync(stateFile, 'utf8')).to.equal('{"clients": {')
      } finally {
        rmSync(dir, {force: true, recursive: true})
      }
    })
  })
})
