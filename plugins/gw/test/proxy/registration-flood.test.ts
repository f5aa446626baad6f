import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {expect} from 'chai'
import {type ChildProcess, spawn} from 'node:child_process'
import {randomBytes} from 'node:crypto'
import {mkdtempSync, readFileSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {Agent, request} from 'node:http'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import getPort from 'get-port'

import {authorizationUrl} from '../client/oauth-as-sign-in.js'
import {type Everything, RUN_JS, startEverything} from './helpers.js'

const SECRET = 'registration-flood-secret-long-enough-hs256!'
const REDIRECT = 'http://localhost:7777/callback'
/** docs/gw-proxy.md: the state file holds at most maxClients registrations of about 0.5 KB. */
const STATE_BOUND_AFTER_FLOOD = 64 * 1024

interface Reply {
  body: string
  headers: Record<string, string | string[] | undefined>
  status: number
}

/** One HTTP request from a chosen loopback address (127.0.0.0/8 is all loopback on Linux). */
function from(localAddress: string, agent: Agent | undefined, url: string, init: {body?: string; headers?: Record<string, string>; method?: string} = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const r = request(url, {agent, headers: init.headers, localAddress, method: init.method ?? 'GET'}, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (d) => (body += d))
      res.on('end', () => resolve({body, headers: res.headers, status: res.statusCode!}))
    })
    r.on('error', reject)
    r.end(init.body)
  })
}

const registration = JSON.stringify({grant_types: ['authorization_code', 'refresh_token'], redirect_uris: [REDIRECT], response_types: ['code'], token_endpoint_auth_method: 'none'})

describe('gw serve oauth_as: a registration flood from one address (built CLI)', function () {
  this.timeout(300_000)
  let upstream: Everything
  let dir: string
  let base: string
  let port: number
  let config: string
  let stateFile: string
  let child: ChildProcess | undefined

  const start = async () => {
    const c = spawn(process.execPath, [RUN_JS, 'gw', 'serve', '--http', '--port', String(port), '--format', 'json', '--config', config], {
      env: {...process.env, HOME: dir, XDG_CONFIG_HOME: join(dir, 'xdg')},
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    child = c
    await new Promise<void>((resolve, reject) => {
      let err = ''
      c.stderr!.on('data', (d) => (err += d))
      c.stdout!.once('data', () => resolve())
      c.once('exit', (code) => reject(new Error(`gw serve exited ${code}: ${err}`)))
    })
  }
  /** servers.json with the built-in authorization server, `oauthAs` settings on top of the test's. */
  const writeConfig = (oauthAs: Record<string, unknown>) =>
    writeFileSync(
      config,
      JSON.stringify({
        gwServers: {everything: {url: upstream.url}},
        serverAuth: {
          acl: {default: 'allow'},
          oauthAs: {issuerUrl: base, jwtSecret: SECRET, redirectUriAllowlist: [REDIRECT], trustedSourceCidrs: ['127.0.0.0/8'], ...oauthAs},
          providers: ['oauth_as'],
        },
      }),
    )
  const stop = async () => {
    const c = child!
    await new Promise((resolve) => {
      c.once('exit', resolve)
      c.kill('SIGTERM')
    })
  }

  before(async () => {
    upstream = await startEverything()
    dir = mkdtempSync(join(tmpdir(), 'gw-reg-flood-'))
    port = await getPort({host: '127.0.0.1'})
    base = `http://127.0.0.1:${port}`
    stateFile = join(dir, 'oauth-state.json')
    config = join(dir, 'servers.json')
    writeConfig({stateFile})
    await start()
  })

  after(async () => {
    if (child?.exitCode === null) child.kill('SIGKILL')
    await upstream?.kill()
    rmSync(dir, {force: true, recursive: true})
  })

  it('10,050 registrations from one address get 429 + Retry-After past the limit; after a restart another address registers and signs in', async () => {
    const agent = new Agent({keepAlive: true, maxSockets: 16})
    const counts = new Map<number, number>()
    let retryAfter: string | undefined
    let next = 0
    const flood = async () => {
      while (next < 10_050) {
        next++
        const r = await from('127.0.0.1', agent, `${base}/register`, {body: registration, headers: {'content-type': 'application/json'}, method: 'POST'})
        counts.set(r.status, (counts.get(r.status) ?? 0) + 1)
        if (r.status === 429) retryAfter ??= String(r.headers['retry-after'])
      }
    }
    const workers = Array.from({length: 16}, flood)
    // Meanwhile another address registers as if nothing happened.
    const other = await from('127.0.0.2', undefined, `${base}/register`, {body: registration, headers: {'content-type': 'application/json'}, method: 'POST'})
    await Promise.all(workers)
    agent.destroy()
    expect(other.status, other.body).to.equal(201)
    expect([...counts.keys()].sort()).to.deep.equal([201, 429])
    expect(counts.get(201)).to.be.at.most(30)
    expect(counts.get(429)).to.be.at.least(10_000)
    expect(Number(retryAfter)).to.be.greaterThan(0)

    await stop()
    expect(statSync(stateFile).size).to.be.below(STATE_BOUND_AFTER_FLOOD)
    await start()

    // A third address registers and signs in through the restarted proxy.
    const reg = await from('127.0.0.3', undefined, `${base}/register`, {body: registration, headers: {'content-type': 'application/json'}, method: 'POST'})
    expect(reg.status, reg.body).to.equal(201)
    const clientId = (JSON.parse(reg.body) as {client_id: string}).client_id
    const verifier = randomBytes(32).toString('base64url')
    const redirect = await from('127.0.0.3', undefined, authorizationUrl(base, clientId, REDIRECT, verifier).href, {headers: {'x-forwarded-user': 'newcomer'}})
    expect(redirect.status, redirect.body).to.equal(302)
    const code = new URL(String(redirect.headers.location)).searchParams.get('code')!
    const token = await fetch(new URL('/token', base), {
      body: new URLSearchParams({client_id: clientId, code, code_verifier: verifier, grant_type: 'authorization_code', redirect_uri: REDIRECT}),
      method: 'POST',
    })
    expect(token.status).to.equal(200)
    const {access_token: accessToken} = (await token.json()) as {access_token: string}
    const client = new Client({name: 'newcomer', version: '1'})
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {requestInit: {headers: {authorization: `Bearer ${accessToken}`}}}))
    expect((await client.listTools()).tools.map((t) => t.name)).to.include('everything__echo')
    await client.close()
    await stop()
    const state = JSON.parse(readFileSync(stateFile, 'utf8')) as {registrations: Record<string, {source: string; used: boolean}>}
    expect(state.registrations[clientId]).to.deep.include({source: '127.0.0.3', used: true})
  })

  it('the registry is bounded in total (the oldest unused registration makes room) and unused registrations expire', async () => {
    if (child?.exitCode === null) await stop()
    const bounded = join(dir, 'bounded-state.json')
    writeConfig({maxClients: 3, stateFile: bounded, unusedClientTtlSeconds: 2})
    await start()
    const register = async (address: string) => {
      const r = await from(address, undefined, `${base}/register`, {body: registration, headers: {'content-type': 'application/json'}, method: 'POST'})
      return {body: r.body, id: r.status === 201 ? (JSON.parse(r.body) as {client_id: string}).client_id : undefined, status: r.status}
    }
    /** Starts a sign-in: 302 with a code for a known client (which marks it used), 400 for a forgotten one. */
    const signIn = async (clientId: string) => {
      const authorize = new URL('/authorize', base)
      for (const [k, v] of Object.entries({client_id: clientId, code_challenge: 'x'.repeat(43), code_challenge_method: 'S256', redirect_uri: REDIRECT, response_type: 'code'}))
        authorize.searchParams.set(k, v)
      return (await from('127.0.0.9', undefined, authorize.href, {headers: {'x-forwarded-user': 'ada'}})).status
    }
    const a = await register('127.0.0.2')
    expect(await signIn(a.id!)).to.equal(302)
    // Unused registrations expire (checked at start and every minute): f never signs in.
    const f = await register('127.0.0.7')
    expect(f.status, f.body).to.equal(201)
    await stop()
    const registeredAt = (JSON.parse(readFileSync(bounded, 'utf8')) as {registrations: Record<string, {at: number}>}).registrations[f.id!].at
    // Past the 2 s time to live, by the clock the server reads.
    while (Date.now() / 1000 < registeredAt + 2.5) await new Promise((r) => setTimeout(r, 250))
    await start()
    expect(await signIn(f.id!)).to.equal(400)
    expect(await signIn(a.id!)).to.equal(302)

    const b = await register('127.0.0.3')
    const c = await register('127.0.0.4')
    // Full (3): the fourth pushes out b, the oldest that never signed in, never a, which did.
    const d = await register('127.0.0.5')
    expect([b.status, c.status, d.status]).to.deep.equal([201, 201, 201])
    expect(await signIn(b.id!)).to.equal(400)
    expect(await signIn(c.id!)).to.equal(302)
    expect(await signIn(d.id!)).to.equal(302)
    // Full of clients in use: a new one is refused, the ones in use are kept.
    const e = await register('127.0.0.6')
    expect(e.status, e.body).to.not.equal(201)
    expect(e.body).to.include('temporarily_unavailable')
    expect(await signIn(a.id!)).to.equal(302)
    await stop()
    const left = JSON.parse(readFileSync(bounded, 'utf8')) as {clients: Record<string, unknown>}
    expect(Object.keys(left.clients)).to.have.members([a.id, c.id, d.id])
  })
})
