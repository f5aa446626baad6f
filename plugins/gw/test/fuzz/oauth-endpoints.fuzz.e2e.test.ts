import {expect} from 'chai'
import fc from 'fast-check'
import type {ChildProcess} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {request} from 'node:http'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import getPort from 'get-port'

import {serveCli} from '../proxy/helpers.js'
import {FUZZ_SEED, fuzzRuns, fuzzTimeout} from './runs.js'

const TOOLS_ONLY = fileURLToPath(new URL('../fixtures/tools-only-server.mjs', import.meta.url))
const REDIRECT = 'http://localhost:53682/callback'
const SECRET = 'fuzz-secret-that-is-long-enough-for-hs256!'

interface Answer {
  body: string
  headers: Record<string, string | string[] | undefined>
  status: number
}

/** A POST from a chosen loopback address (127.0.0.2 is a second client address). */
function post(url: string, body: Buffer | string, contentType: string | undefined, localAddress = '127.0.0.1'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, number | string> = {'content-length': Buffer.byteLength(body)}
    if (contentType !== undefined) headers['content-type'] = contentType
    const r = request(url, {headers, localAddress, method: 'POST'}, (res) => {
      let text = ''
      res.on('data', (d: Buffer) => (text += d.toString()))
      res.on('end', () => resolve({body: text, headers: res.headers, status: res.statusCode ?? 0}))
    })
    r.on('error', reject)
    r.end(body)
  })
}

/**
 * Every answer of an OAuth endpoint: not a 5xx, and an error is an RFC 6749 JSON error object.
 * (Bodies express's parser refuses, malformed or non-object JSON and bodies past its 100 kB, are
 * answered 404 "no route for POST /register" today, not 400/413: left for gw-finish, docs/reliability.md.)
 */
function checkOAuthAnswer(a: Answer, sent: string): void {
  expect(a.status, `${a.status} for ${sent.slice(0, 200)}: ${a.body.slice(0, 200)}`).to.be.below(500)
  // The endpoint exists whatever the body: a body the parser refuses is a 400 or 413, never "no route".
  expect(a.status, `${a.status} for ${sent.slice(0, 200)}: ${a.body.slice(0, 200)}`).to.not.equal(404)
  if (a.status >= 400) {
    const parsed = JSON.parse(a.body) as {error?: unknown}
    expect(parsed.error, `no error code in ${a.body.slice(0, 200)}`).to.be.a('string')
  }
}

async function startAs(dir: string, oauthAs: Record<string, unknown>): Promise<{base: string; child: ChildProcess}> {
  const port = await getPort({host: '127.0.0.1'})
  const base = `http://127.0.0.1:${port}`
  const config = join(dir, 'servers.json')
  writeFileSync(
    config,
    JSON.stringify({
      gwServers: {tools: {args: [TOOLS_ONLY], command: process.execPath}},
      serverAuth: {
        acl: {default: 'deny', roles: {'oauth-user': [{access: '*', server: '*'}]}},
        oauthAs: {injectedRoles: ['oauth-user'], issuerUrl: base, jwtSecret: '${GW_JWT_SECRET}', redirectUriAllowlist: [REDIRECT], trustedSourceCidrs: ['127.0.0.0/8'], ...oauthAs},
        providers: ['oauth_as'],
      },
    }),
  )
  const env = {...process.env, GW_JWT_SECRET: SECRET, HOME: dir, TOOLKIT_CONFIG_DIR: join(dir, 'cfg'), XDG_CONFIG_HOME: join(dir, 'xdg')}
  let child: ChildProcess | undefined
  await serveCli(['--port', String(port), '--config', config], env, (c) => (child = c))
  return {base, child: child!}
}

const validRegistration = {client_name: 'fuzz', grant_types: ['authorization_code', 'refresh_token'], redirect_uris: [REDIRECT], response_types: ['code'], token_endpoint_auth_method: 'none'}

// Issue 20: the proxy's own authorization server (serverAuth.oauthAs) answers random and mutated
// /register and /token requests with a 4xx and an RFC 6749 error object, never a 5xx, a crash or a
// token; registration is rate-limited per address.
describe('gw serve oauth_as: random and mutated /register and /token requests (built CLI, raw HTTP)', function () {
  this.timeout(fuzzTimeout(180_000))
  const dirs: string[] = []
  const children: ChildProcess[] = []
  const tmp = () => {
    const d = mkdtempSync(join(tmpdir(), 'gw-fuzz-oauth-'))
    dirs.push(d)
    return d
  }

  after(() => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL')
    for (const d of dirs) rmSync(d, {force: true, recursive: true})
  })

  describe('fuzzing (registration limits raised above the fuzzer\'s pace)', () => {
    let base = ''
    let child: ChildProcess
    before(async () => {
      ;({base, child} = await startAs(tmp(), {maxUnusedClientsPerSource: 1_000_000, registrationsPerMinutePerSource: 1_000_000, tokenRequestsPerMinutePerSource: 1_000_000}))
      children.push(child)
    })

    const stillServing = async (): Promise<string> => {
      expect(child.exitCode, 'gw serve exited').to.equal(null)
      const r = await post(`${base}/register`, JSON.stringify(validRegistration), 'application/json')
      expect(r.status, r.body).to.equal(201)
      return (JSON.parse(r.body) as {client_id: string}).client_id
    }

    it('/register: random JSON, mutated client metadata, wrong content types and huge bodies get 201 or a 4xx with an error code', async () => {
      const statuses: Record<string, number> = {}
      const mutated = fc.record(
        {
          client_name: fc.oneof(fc.string(), fc.string({maxLength: 5000, minLength: 3000}), fc.integer(), fc.constant(null)),
          grant_types: fc.oneof(fc.constant(['authorization_code']), fc.array(fc.string(), {maxLength: 3}), fc.string(), fc.constant(null)),
          redirect_uris: fc.oneof(fc.constant([REDIRECT]), fc.array(fc.webUrl(), {maxLength: 3}), fc.array(fc.string(), {maxLength: 3}), fc.string(), fc.integer(), fc.constant([])),
          response_types: fc.oneof(fc.constant(['code']), fc.array(fc.string(), {maxLength: 2}), fc.boolean()),
          scope: fc.oneof(fc.string(), fc.constant('mcp'), fc.integer()),
          token_endpoint_auth_method: fc.oneof(fc.constantFrom('none', 'client_secret_post', 'client_secret_basic', 'private_key_jwt'), fc.string()),
        },
        {requiredKeys: []},
      )
      const body = fc.oneof(
        mutated.map((m) => ({text: JSON.stringify(m), type: 'application/json' as string | undefined})),
        fc.jsonValue({maxDepth: 4}).map((v) => ({text: JSON.stringify(v), type: 'application/json' as string | undefined})),
        fc.string().map((t) => ({text: t, type: 'application/json' as string | undefined})),
        fc.nat({max: 20_000}).map((n) => ({text: '['.repeat(n) + ']'.repeat(n), type: 'application/json' as string | undefined})),
        mutated.map((m) => ({text: new URLSearchParams(Object.entries(m).map(([k, v]): [string, string] => [k, String(v)])).toString(), type: 'application/x-www-form-urlencoded' as string | undefined})),
        fc.constantFrom(undefined, 'text/plain', 'application/xml', 'application/json; charset=latin1').map((type) => ({text: JSON.stringify(validRegistration), type})),
        fc.constant({text: JSON.stringify({...validRegistration, client_name: 'x'.repeat(3_000_000)}), type: 'application/json' as string | undefined}),
      )
      await fc.assert(
        fc.asyncProperty(body, async ({text, type}) => {
          const r = await post(`${base}/register`, text, type)
          checkOAuthAnswer(r, text)
          statuses[r.status] = (statuses[r.status] ?? 0) + 1
          if (r.status === 201) {
            const client = JSON.parse(r.body) as {client_id?: unknown; redirect_uris?: string[]}
            expect(client.client_id).to.be.a('string')
            // Only allowlisted redirect URIs are ever registered, and at least one.
            expect(client.redirect_uris!.filter((u) => u !== REDIRECT), r.body).to.deep.equal([])
            expect(client.redirect_uris, r.body).to.not.be.empty
          }
        }),
        {numRuns: fuzzRuns(150), seed: FUZZ_SEED},
      )
      if (process.env.FUZZ_REPORT) console.log('oauth /register', statuses)
      await stillServing()
    })

    it('/token: random and mutated grant requests never get a token, only a 4xx with an error code', async () => {
      const clientId = await stillServing()
      const statuses: Record<string, number> = {}
      const params = fc.record(
        {
          client_id: fc.oneof(fc.constant(clientId), fc.uuid(), fc.string()),
          client_secret: fc.string(),
          code: fc.oneof(fc.string(), fc.base64String({maxLength: 64}), fc.string({maxLength: 20_000, minLength: 10_000})),
          code_verifier: fc.oneof(fc.string(), fc.base64String({maxLength: 128})),
          grant_type: fc.oneof(fc.constantFrom('authorization_code', 'refresh_token', 'client_credentials', 'password', 'urn:ietf:params:oauth:grant-type:device_code'), fc.string()),
          redirect_uri: fc.oneof(fc.constant(REDIRECT), fc.webUrl(), fc.string()),
          refresh_token: fc.oneof(fc.string(), fc.base64String({maxLength: 128})),
          resource: fc.oneof(fc.constant(`${base}/mcp`), fc.webUrl(), fc.string()),
        },
        {requiredKeys: []},
      )
      const body = fc.oneof(
        params.map((p) => ({text: new URLSearchParams(p).toString(), type: 'application/x-www-form-urlencoded' as string | undefined})),
        params.map((p) => ({text: JSON.stringify(p), type: 'application/json' as string | undefined})),
        fc.string().map((t) => ({text: t, type: 'application/x-www-form-urlencoded' as string | undefined})),
        fc.uint8Array({maxLength: 300}).map((b) => ({text: Buffer.from(b).toString('latin1'), type: undefined as string | undefined})),
        fc.constant({text: `grant_type=authorization_code&code=${'c'.repeat(3_000_000)}`, type: 'application/x-www-form-urlencoded' as string | undefined}),
      )
      await fc.assert(
        fc.asyncProperty(body, async ({text, type}) => {
          const r = await post(`${base}/token`, text, type)
          checkOAuthAnswer(r, text)
          expect(r.status, `a token for ${text.slice(0, 200)}`).to.be.at.least(400)
          expect(r.body).to.not.include('access_token')
          statuses[r.status] = (statuses[r.status] ?? 0) + 1
        }),
        {numRuns: fuzzRuns(150), seed: FUZZ_SEED},
      )
      if (process.env.FUZZ_REPORT) console.log('oauth /token', statuses)
      await stillServing()
    })
  })

  describe('rates (default limits)', () => {
    let base = ''
    before(async () => {
      const started = await startAs(tmp(), {})
      base = started.base
      children.push(started.child)
    })

    it('/register: past registrationsPerMinutePerSource (10) one address gets 429 with Retry-After and an error code; another address still registers', async () => {
      const answers: Answer[] = []
      for (let i = 0; i < 12; i++) answers.push(await post(`${base}/register`, JSON.stringify(validRegistration), 'application/json'))
      expect(answers.slice(0, 10).map((a) => a.status)).to.deep.equal(Array.from({length: 10}, () => 201))
      for (const a of answers.slice(10)) {
        expect(a.status).to.equal(429)
        expect(Number(a.headers['retry-after'])).to.be.greaterThan(0)
        expect((JSON.parse(a.body) as {error: string}).error).to.equal('temporarily_unavailable')
      }
      expect((await post(`${base}/register`, JSON.stringify(validRegistration), 'application/json', '127.0.0.2')).status).to.equal(201)
    })

    it('/token: past tokenRequestsPerMinutePerSource (60) a flood of bad grants from one address gets 429 with Retry-After while another address is answered', async () => {
      const answers: Answer[] = []
      for (let i = 0; i < 70; i++) answers.push(await post(`${base}/token`, `grant_type=authorization_code&code=guess${i}&code_verifier=x&client_id=nobody`, 'application/x-www-form-urlencoded'))
      expect(answers.slice(0, 60).map((a) => a.status)).to.not.include(429)
      for (const a of answers.slice(61)) {
        expect(a.status).to.equal(429)
        expect(Number(a.headers['retry-after'])).to.be.greaterThan(0)
        expect((JSON.parse(a.body) as {error: string}).error).to.equal('temporarily_unavailable')
      }
      expect((await post(`${base}/token`, 'grant_type=authorization_code&code=x&client_id=nobody', 'application/x-www-form-urlencoded', '127.0.0.2')).status).to.not.equal(429)
    })
  })
})
