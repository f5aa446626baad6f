import {expect} from 'chai'
import type {ChildProcess} from 'node:child_process'
import {mkdtempSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import getPort from 'get-port'

import {type Everything, serveCli, type ServingCli, startEverything, startRedis, stopReplicas} from './helpers.js'

const REDIRECT = 'http://localhost:53682/callback'

/**
 * The limits that used to be per replica, counted in the shared store: two built-CLI replicas and
 * a real redis-server. Each replica alone would let every request below through.
 */
describe('gw serve replicas: per-address and /register limits counted over all replicas (real redis-server)', function () {
  this.timeout(120_000)
  let upstream: Everything
  let dir: string
  let redis: ChildProcess
  let a: ServingCli
  let b: ServingCli
  const base = (s: ServingCli) => new URL(s.url).origin
  // The trusted reverse proxy (loopback) says which client it forwards: one source per test.
  const register = (s: ServingCli, source: string) =>
    fetch(`${base(s)}/register`, {
      body: JSON.stringify({grant_types: ['authorization_code'], redirect_uris: [REDIRECT], response_types: ['code'], token_endpoint_auth_method: 'none'}),
      headers: {'content-type': 'application/json', 'x-forwarded-for': source},
      method: 'POST',
    })
  const clientId = async (r: Response) => ((await r.json()) as {client_id: string}).client_id
  /** A sign-in at /authorize: the registration is used from then on. */
  const authorize = async (s: ServingCli, id: string) => {
    const url = new URL(`${base(s)}/authorize`)
    for (const [k, v] of Object.entries({client_id: id, code_challenge: 'x'.repeat(43), code_challenge_method: 'S256', redirect_uri: REDIRECT, response_type: 'code'})) url.searchParams.set(k, v)
    const res = await fetch(url, {headers: {'x-forwarded-user': 'sam'}, redirect: 'manual'})
    expect(res.status, await res.text()).to.equal(302)
  }
  /** Not across a minute boundary: the per-minute window would start again half-way. */
  const sameMinute = async () => {
    const left = 60 - (Date.now() / 1000) % 60
    if (left < 15) await new Promise((r) => setTimeout(r, left * 1000 + 200))
  }

  before(async () => {
    upstream = await startEverything()
    dir = mkdtempSync(join(tmpdir(), 'gw-replica-limits-'))
    const redisPort = await getPort({host: '127.0.0.1'})
    redis = await startRedis(redisPort, dir)
    const file = join(dir, 'servers.json')
    writeFileSync(
      file,
      JSON.stringify({
        gwServers: {everything: {url: upstream.url}},
        serverAuth: {
          acl: {default: 'allow'},
          bearer: {tokens: {'tok-u': 'u'}},
          oauthAs: {
            issuerUrl: 'http://localhost:9',
            jwtSecret: '${GW_JWT}',
            maxUnusedClientsPerSource: 3,
            redirectUriAllowlist: ['http://localhost/callback'],
            registrationsPerMinutePerSource: 5,
            trustedSourceCidrs: ['127.0.0.1/32'],
          },
          providers: ['oauth_as', 'bearer'],
          store: {prefix: 'limits-test:', url: `redis://127.0.0.1:${redisPort}/0`},
        },
      }),
    )
    const env = {...process.env, GW_JWT: 'limits-test-secret-long-enough-for-hs256!!', HOME: dir, NO_COLOR: '1', TOOLKIT_CONFIG_DIR: join(dir, 'toolkit'), XDG_CONFIG_HOME: join(dir, 'xdg')}
    const args = ['--port', '0', '--config', file, '--rate-limit-address', '5', '--rate-limit', '0']
    ;[a, b] = await Promise.all([serveCli(args, env), serveCli(args, env)])
  })

  after(() => stopReplicas([a, b], redis, upstream, dir))

  it('counts never-used registrations of a source over both replicas; a sign-in through the other replica frees a place', async () => {
    await sameMinute()
    const source = '198.51.100.1'
    const first = await register(a, source)
    expect(first.status).to.equal(201)
    expect((await register(a, source)).status).to.equal(201)
    const third = await register(b, source)
    expect(third.status).to.equal(201)
    // A has 2 and B has 1 unused registration of this source: each alone is under 3.
    const refused = await register(b, source)
    expect(refused.status).to.equal(429)
    expect(refused.headers.get('retry-after')).to.match(/^\d+$/)
    expect(((await refused.json()) as {error_description: string}).error_description).to.include('3 registrations that were never used')
    // Another source is not affected.
    expect((await register(b, '198.51.100.2')).status).to.equal(201)
    // The client registered through A signs in through B: the place is free on every replica.
    await authorize(b, await clientId(first))
    expect((await register(a, source)).status).to.equal(201)
  })

  it('counts registrations per source and minute over both replicas', async () => {
    await sameMinute()
    const source = '198.51.100.3'
    for (let i = 0; i < 5; i++) {
      const s = i % 2 === 0 ? a : b
      const r = await register(s, source)
      expect(r.status, `registration ${i + 1}`).to.equal(201)
      await authorize(s, await clientId(r))
    }
    // 3 through A and 2 through B: each replica alone allows 5 a minute.
    const sixth = await register(b, source)
    expect(sixth.status).to.equal(429)
    expect(((await sixth.json()) as {error_description: string}).error_description).to.include('too many registrations from this address')
    expect(Number(sixth.headers.get('retry-after'))).to.be.within(1, 60)
  })

  it("counts an address's requests over both replicas (--rate-limit-address 5): past the shared window, both answer 429", async () => {
    const post = (s: ServingCli) => fetch(s.url, {body: '{}', headers: {authorization: 'Bearer tok-u', 'content-type': 'application/json'}, method: 'POST'})
    // Each replica alone allows a burst of 10; together 8 + 8 exceed the shared 10 a second.
    let refused: Response | undefined
    for (let attempt = 0; attempt < 3 && !refused; attempt++) {
      await new Promise((r) => setTimeout(r, 2100))
      await Promise.all([...Array.from({length: 8}, () => post(a)), ...Array.from({length: 8}, () => post(b))])
      await new Promise((r) => setTimeout(r, 250))
      refused = (await Promise.all([post(a), post(b)])).find((r) => r.status === 429)
    }
    expect(refused, 'a 429 once the shared window is full').to.not.equal(undefined)
    expect(refused!.headers.get('retry-after')).to.equal('1')
    expect(((await refused!.json()) as {error: {message: string}}).error.message).to.equal('too many requests from this address')
    // The window passes: the address is served again.
    await new Promise((r) => setTimeout(r, 2100))
    expect((await post(a)).status).to.not.equal(429)
  })
})
