import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {expect} from 'chai'
import {type ChildProcess, execFileSync} from 'node:child_process'
import {createHash, randomBytes} from 'node:crypto'
import {mkdtempSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import getPort from 'get-port'

import {type Everything, serveCli, type ServingCli, startEverything, startRedis, stopReplicas, until} from './helpers.js'

const SECRET = 'replica-test-secret-long-enough-for-hs256!!'
const REDIRECT = 'http://localhost:53682/callback'
const USER = {'x-forwarded-groups': 'dev', 'x-forwarded-user': 'sam'}

async function form(url: string, params: Record<string, string>): Promise<{body: Record<string, unknown>; status: number}> {
  const res = await fetch(url, {body: new URLSearchParams(params), headers: {'content-type': 'application/x-www-form-urlencoded'}, method: 'POST'})
  return {body: (await res.json()) as Record<string, unknown>, status: res.status}
}

function pkce(): {challenge: string; verifier: string} {
  const verifier = randomBytes(32).toString('base64url')
  return {challenge: createHash('sha256').update(verifier).digest('base64url'), verifier}
}

for (const store of ['redis-server', 'svc'] as const) describe(`gw serve replicas sharing a Redis store (two built-CLI replicas, ${store === 'svc' ? "toolkit svc server's Redis port" : 'real redis-server'})`, function () {
  this.timeout(120_000)
  let upstream: Everything
  let dir: string
  let redisPort: number
  let redis: ChildProcess
  let a: ServingCli
  let b: ServingCli
  const base = (s: ServingCli) => new URL(s.url).origin

  const register = (s: ServingCli) =>
    fetch(`${base(s)}/register`, {
      body: JSON.stringify({grant_types: ['authorization_code', 'refresh_token'], redirect_uris: [REDIRECT], response_types: ['code'], token_endpoint_auth_method: 'none'}),
      headers: {'content-type': 'application/json'},
      method: 'POST',
    })

  /** Signs in through `authorizeAt` and redeems the code at `tokenAt`. */
  const signIn = async (clientId: string, authorizeAt: ServingCli, tokenAt: ServingCli) => {
    const p = pkce()
    const url = new URL(`${base(authorizeAt)}/authorize`)
    for (const [k, v] of Object.entries({client_id: clientId, code_challenge: p.challenge, code_challenge_method: 'S256', redirect_uri: REDIRECT, response_type: 'code', state: 's'})) url.searchParams.set(k, v)
    const res = await fetch(url, {headers: USER, redirect: 'manual'})
    expect(res.status, await res.clone().text()).to.equal(302)
    const code = new URL(res.headers.get('location')!).searchParams.get('code')!
    const t = await form(`${base(tokenAt)}/token`, {client_id: clientId, code, code_verifier: p.verifier, grant_type: 'authorization_code', redirect_uri: REDIRECT})
    expect(t.status, JSON.stringify(t.body)).to.equal(200)
    return t.body as {access_token: string; refresh_token: string}
  }
  const refresh = (s: ServingCli, clientId: string, token: string) => form(`${base(s)}/token`, {client_id: clientId, grant_type: 'refresh_token', refresh_token: token})

  before(async () => {
    upstream = await startEverything()
    dir = mkdtempSync(join(tmpdir(), 'gw-replicas-'))
    redisPort = await getPort({host: '127.0.0.1'})
    redis = await startRedis(redisPort, dir, store)
    const file = join(dir, 'servers.json')
    writeFileSync(
      file,
      JSON.stringify({
        gwServers: {everything: {url: upstream.url}},
        serverAuth: {
          acl: {default: 'deny', roles: {dev: [{access: 'read', server: '*'}]}},
          oauthAs: {issuerUrl: 'http://localhost:9', jwtSecret: '${GW_JWT}', redirectUriAllowlist: ['http://localhost/callback'], trustedSourceCidrs: ['127.0.0.1/32']},
          bearer: {tokens: {'tok-s': {roles: ['dev'], subject: 's'}, 'tok-u1': 'u1', 'tok-u2': 'u2', 'tok-u3': 'u3'}},
          providers: ['oauth_as', 'bearer'],
          store: {prefix: 'replica-test:', url: `redis://127.0.0.1:${redisPort}/0`},
        },
      }),
    )
    const env = {...process.env, GW_JWT: SECRET, HOME: dir, NO_COLOR: '1', TOOLKIT_CONFIG_DIR: join(dir, 'toolkit'), XDG_CONFIG_HOME: join(dir, 'xdg')}
    ;[a, b] = await Promise.all([serveCli(['--port', '0', '--config', file, '--rate-limit', '5', '--max-sessions-per-user', '2'], env),
      serveCli(['--port', '0', '--config', file, '--rate-limit', '5', '--max-sessions-per-user', '2'], env),])
  })

  after(() => stopReplicas([a, b], redis, upstream, dir))

  it('a client registered through A signs in through B, redeems at A, and uses the token on B', async () => {
    const reg = await register(a)
    expect(reg.status).to.equal(201)
    const clientId = ((await reg.json()) as {client_id: string}).client_id
    const tokens = await signIn(clientId, b, a)
    const client = new Client({name: 'replica-test', version: '1'})
    await client.connect(new StreamableHTTPClientTransport(new URL(b.url), {requestInit: {headers: {authorization: `Bearer ${tokens.access_token}`}}}))
    expect((await client.listTools()).tools.map((t) => t.name)).to.include('everything__echo')
    await client.close()
  })

  it('refreshes through B a token issued by A; the rotated token replayed at A revokes the family on both', async () => {
    const clientId = ((await (await register(a)).json()) as {client_id: string}).client_id
    const first = await signIn(clientId, a, a)
    const second = await refresh(b, clientId, first.refresh_token)
    expect(second.status, JSON.stringify(second.body)).to.equal(200)
    const replay = await refresh(a, clientId, first.refresh_token)
    expect(replay.status).to.equal(400)
    expect(replay.body.error).to.equal('invalid_grant')
    // The replay revoked the family: the live refresh token is refused by either replica.
    const afterReplay = await refresh(b, clientId, String(second.body.refresh_token))
    expect(afterReplay.body.error).to.equal('invalid_grant')
  })

  it('a refresh token revoked through A is refused by B', async () => {
    const clientId = ((await (await register(b)).json()) as {client_id: string}).client_id
    const tokens = await signIn(clientId, b, b)
    const revoked = await form(`${base(a)}/revoke`, {client_id: clientId, token: tokens.refresh_token})
    expect(revoked.status).to.equal(200)
    const r = await refresh(b, clientId, tokens.refresh_token)
    expect(r.body.error).to.equal('invalid_grant')
  })

  it('redeems one refresh token once when both replicas get it at the same moment', async () => {
    const clientId = ((await (await register(a)).json()) as {client_id: string}).client_id
    const tokens = await signIn(clientId, a, b)
    const results = await Promise.all([refresh(a, clientId, tokens.refresh_token), refresh(b, clientId, tokens.refresh_token)])
    expect(results.map((r) => r.status).sort()).to.deep.equal([200, 400])
  })

  it("counts a user's requests over both replicas: past the shared window, both answer 429", async () => {
    const post = (s: ServingCli, token: string) =>
      fetch(s.url, {body: '{}', headers: {authorization: `Bearer ${token}`, 'content-type': 'application/json'}, method: 'POST'})
    // Each replica alone allows a burst of 10 (--rate-limit 5); together 9 + 9 exceed the shared 10.
    // A fresh user per attempt, in case an attempt straddles two one-second windows.
    let refused: Response | undefined
    let ended: Response | undefined
    for (const token of ['tok-u1', 'tok-u2', 'tok-u3']) {
      await Promise.all([...Array.from({length: 9}, () => post(a, token)), ...Array.from({length: 9}, () => post(b, token))])
      await new Promise((r) => setTimeout(r, 250))
      const next = await Promise.all([post(a, token), post(b, token)])
      refused = next.find((r) => r.status === 429)
      // Ending a session is never refused for rate (it would only keep the session open longer).
      ended = await fetch(a.url, {headers: {authorization: `Bearer ${token}`, 'mcp-session-id': 'no-such-session'}, method: 'DELETE'})
      if (refused) break
    }
    expect(ended!.status).to.not.equal(429)
    expect(refused, 'a 429 once the shared window is full').to.not.equal(undefined)
    expect(refused!.headers.get('retry-after')).to.equal('1')
    expect(((await refused!.json()) as {error: {message: string}}).error.message).to.match(/too many requests for "u\d"/)
  })

  it("counts a user's open sessions over both replicas (--max-sessions-per-user 2): the third gets 429 from either", async () => {
    const open = async (s: ServingCli) => {
      const transport = new StreamableHTTPClientTransport(new URL(s.url), {requestInit: {headers: {authorization: 'Bearer tok-s'}}})
      const c = new Client({name: 'sessions-test', version: '1'})
      await c.connect(transport)
      return {c, transport}
    }
    const first = await open(a)
    const second = await open(b)
    const third = await open(a).catch((error: unknown) => error)
    expect(String(third)).to.match(/429|too many open sessions/)
    // Ending one session (DELETE) on B makes room on A.
    await second.transport.terminateSession()
    await second.c.close()
    let again: Awaited<ReturnType<typeof open>> | undefined
    await until(async () => {
      again = await open(a).catch(() => undefined)
      return again !== undefined
    }, 10_000, 'a session after one ended on the other replica')
    for (const s of [first, again!]) {
      await s.transport.terminateSession()
      await s.c.close()
    }
  })

  // Not about the store: run once.
  if (store === 'redis-server') describe('a configuration the proxy cannot run: exit 2 and the reason', () => {
    const refused = async (serverAuth: Record<string, unknown>, servers: Record<string, unknown> = {everything: {url: upstream.url}}) => {
      const file = join(dir, `bad-${Math.random().toString(36).slice(2)}.json`)
      writeFileSync(file, JSON.stringify({gwServers: servers, serverAuth}))
      const env = {...process.env, HOME: dir, NO_COLOR: '1', TOOLKIT_CONFIG_DIR: join(dir, 'toolkit'), XDG_CONFIG_HOME: join(dir, 'xdg')}
      const error = (await serveCli(['--port', '0', '--config', file], env).then(
        (s) => {
          s.child.kill('SIGKILL')
          throw new Error('the proxy started')
        },
        (e: unknown) => e,
      )) as {code: number; stderr: string}
      expect(error.code).to.equal(2)
      return error.stderr
    }

    it('a store that is not a redis:// URL', async () => {
      expect(await refused({store: {url: 'http://127.0.0.1:6379'}})).to.include('serverAuth.store: "url" must start with redis:// or rediss://')
    })

    it('a store nobody answers at', async () => {
      const port = await getPort({host: '127.0.0.1'})
      expect(await refused({store: {url: `redis://:hunter2-password@127.0.0.1:${port}`}}))
        .to.include('cannot reach the shared store')
        .and.not.include('hunter2-password')
    })

    it('an idleTimeout that is not a number of seconds', async () => {
      expect(await refused({}, {local: {args: ['x'], command: 'node', idleTimeout: '5m'}})).to.include('gwServers.local.idleTimeout must be a number of seconds')
    })
  })

  // redis-server only: svc's Redis port has no maxmemory to set.
  if (store === 'redis-server') {
    it('answers 503, not 500, when the store refuses a command while its connection stays up (out of memory)', async () => {
      const cli = (...args: string[]) => execFileSync('redis-cli', ['-p', String(redisPort), ...args], {encoding: 'utf8'})
      cli('CONFIG', 'SET', 'maxmemory-policy', 'noeviction')
      cli('CONFIG', 'SET', 'maxmemory', '1')
      try {
        const refused = await register(a)
        expect(refused.status).to.equal(503)
        const body = (await refused.json()) as Record<string, unknown>
        expect(body).to.deep.include({error: 'temporarily_unavailable'})
        expect(String(body.error_description)).to.include('shared store')
      } finally {
        cli('CONFIG', 'SET', 'maxmemory', '0')
      }
      expect((await register(a)).status).to.equal(201)
    })
  }

  it('answers 503 with a clear error while the store is down, and recovers when it returns', async () => {
    const clientId = ((await (await register(a)).json()) as {client_id: string}).client_id
    const tokens = await signIn(clientId, a, a)
    await new Promise<void>((resolve) => {
      redis.once('exit', () => resolve())
      redis.kill('SIGKILL')
    })
    await until(async () => (await register(b)).status === 503, 15_000, '503 from B')
    const down = await refresh(a, clientId, tokens.refresh_token)
    expect(down.status).to.equal(503)
    expect(down.body).to.deep.include({error: 'temporarily_unavailable'})
    expect(String(down.body.error_description)).to.include('shared store')
    // Both replicas stay up and keep serving what needs no store (health).
    expect((await fetch(`${base(b)}/health`)).status).to.equal(200)
    redis = await startRedis(redisPort, dir, store)
    await until(async () => (await refresh(b, clientId, tokens.refresh_token)).status === 200, 20_000, 'a refresh after the store returned')
    await until(async () => a.stderr().includes('shared store'), 10_000, "A's log line about the shared store")
    expect(a.stderr()).not.to.include(SECRET)
  })
})
