import {expect} from 'chai'
import type {IncomingHttpHeaders} from 'node:http'

import {buildProxyAuth} from '../../src/proxy/server-auth.js'
import type {AuthRequest, AuthResult} from '../../src/proxy/auth-providers/types.js'

const SECRET = 'x'.repeat(40)
const req = (headers: IncomingHttpHeaders, remoteAddress = '127.0.0.1'): AuthRequest => ({headers, remoteAddress})

const bearerTokens = {
  'tok-alice': {roles: ['admin', 'dev'], subject: 'alice'},
  'tok-bob': 'bob',
}

async function auth(serverAuth: unknown, r: AuthRequest, env: Record<string, string> = {}): Promise<AuthResult> {
  return buildProxyAuth({serverAuth}, {env}).chain.authenticate(r)
}

async function signJwt(claims: Record<string, unknown>, opts: {aud?: string; exp?: number; iss?: string; secret?: string} = {}): Promise<string> {
  const {SignJWT} = await import('jose')
  return new SignJWT(claims)
    .setProtectedHeader({alg: 'HS256'})
    .setIssuer(opts.iss ?? 'http://127.0.0.1:9/')
    .setAudience(opts.aud ?? 'http://127.0.0.1:9/mcp')
    .setSubject('sam')
    .setExpirationTime(opts.exp ?? Math.floor(Date.now() / 1000) + 60)
    .sign(new TextEncoder().encode(opts.secret ?? SECRET))
}

const oauthAs = {
  injectedRoles: ['oauth-user'],
  issuerUrl: 'http://127.0.0.1:9',
  jwtSecret: '${JWT}',
  redirectUriAllowlist: ['http://localhost/cb'],
  trustedSourceCidrs: ['127.0.0.0/8'],
}

describe('proxy auth providers and chain', () => {
  type Case = [name: string, serverAuth: unknown, headers: IncomingHttpHeaders, expected: {error?: string; provider?: string; roles?: string[]; subject?: string}, remote?: string]
  const cases: Case[] = [
    ['empty providers means none', {providers: []}, {}, {provider: 'none', roles: [], subject: 'anonymous'}],
    ['no serverAuth at all means none', undefined, {}, {provider: 'none', subject: 'anonymous'}],
    ['bearer: token mapped to a plain subject has no roles', {bearer: {tokens: bearerTokens}, providers: ['bearer']}, {authorization: 'Bearer tok-bob'}, {provider: 'bearer', roles: [], subject: 'bob'}],
    ['bearer: token mapped to {subject, roles}', {bearer: {tokens: bearerTokens}, providers: ['bearer']}, {authorization: 'Bearer tok-alice'}, {roles: ['admin', 'dev'], subject: 'alice'}],
    ['bearer: scheme is case-insensitive', {bearer: {tokens: bearerTokens}, providers: ['bearer']}, {authorization: 'bearer tok-bob'}, {subject: 'bob'}],
    ['bearer: wrong token rejected', {bearer: {tokens: bearerTokens}, providers: ['bearer']}, {authorization: 'Bearer tok-bo'}, {error: 'invalid bearer token'}],
    ['bearer: missing header rejected', {bearer: {tokens: bearerTokens}, providers: ['bearer']}, {}, {error: 'missing bearer token'}],
    ['bearer: Basic scheme rejected', {bearer: {tokens: bearerTokens}, providers: ['bearer']}, {authorization: 'Basic dG9rLWJvYg=='}, {error: 'missing bearer token'}],
    ['forwarded: default headers, groups trimmed and empties dropped', {providers: ['forwarded']}, {'x-forwarded-groups': ' dev, ,Ops ,,', 'x-forwarded-user': 'carol'}, {provider: 'forwarded', roles: ['dev', 'Ops'], subject: 'carol'}],
    ['forwarded: missing groups header gives no roles and no error', {providers: ['forwarded']}, {'x-forwarded-user': 'carol'}, {roles: [], subject: 'carol'}],
    ['forwarded: a user header with several values is rejected', {providers: ['forwarded']}, {'x-forwarded-user': 'mallory, alice'}, {error: 'ambiguous x-forwarded-user header (several values): the reverse proxy must replace it, not append'}],
    ['forwarded: missing user header rejected', {providers: ['forwarded']}, {'x-forwarded-groups': 'dev'}, {error: 'missing x-forwarded-user header'}],
    ['forwarded: custom header names (any case in config)', {forwarded: {groups_header: 'X-Auth-Groups', header: 'X-Auth-User'}, providers: ['forwarded']}, {'x-auth-groups': 'a', 'x-auth-user': 'dan'}, {roles: ['a'], subject: 'dan'}],
    ['forwarded: trusted proxy accepted', {forwarded: {trusted_proxies: ['10.0.0.0/8']}, providers: ['forwarded']}, {'x-forwarded-user': 'x'}, {subject: 'x'}, '::ffff:10.1.2.3'],
    ['forwarded: untrusted peer rejected', {forwarded: {trusted_proxies: ['10.0.0.0/8']}, providers: ['forwarded']}, {'x-forwarded-user': 'x'}, {error: 'forwarded identity headers are accepted only from a trusted proxy'}, '192.168.1.1'],
    ['chain: first accepting provider wins (bearer before forwarded)', {bearer: {tokens: bearerTokens}, providers: ['bearer', 'forwarded']}, {authorization: 'Bearer tok-bob', 'x-forwarded-user': 'carol'}, {provider: 'bearer', subject: 'bob'}],
    ['chain: falls through to the second provider', {bearer: {tokens: bearerTokens}, providers: ['bearer', 'forwarded']}, {'x-forwarded-user': 'carol'}, {provider: 'forwarded', subject: 'carol'}],
    ['chain: order decides when both would accept', {bearer: {tokens: bearerTokens}, providers: ['forwarded', 'bearer']}, {authorization: 'Bearer tok-bob', 'x-forwarded-user': 'carol'}, {provider: 'forwarded', subject: 'carol'}],
    ['chain: all reject gives the FIRST provider error', {bearer: {tokens: bearerTokens}, providers: ['bearer', 'forwarded']}, {}, {error: 'missing bearer token'}],
    ['chain: all reject, first is forwarded', {bearer: {tokens: bearerTokens}, providers: ['forwarded', 'bearer']}, {authorization: 'Bearer nope'}, {error: 'missing x-forwarded-user header'}],
    ['chain: none at the end accepts what others reject', {bearer: {tokens: bearerTokens}, providers: ['bearer', 'none']}, {authorization: 'Bearer nope'}, {provider: 'none'}],
    ['legacy provider string starts with no authentication', {provider: 'bearer'}, {}, {provider: 'none', subject: 'anonymous'}],
  ]
  for (const [name, serverAuth, headers, expected, remote] of cases) {
    it(name, async () => {
      const r = await auth(serverAuth, req(headers, remote))
      if (expected.error) {
        expect(r).to.deep.equal({error: expected.error, ok: false})
        return
      }
      expect(r.ok, JSON.stringify(r)).to.equal(true)
      const {user} = r as unknown as {user: Record<string, unknown>}
      for (const [k, v] of Object.entries(expected)) expect(user[k], k).to.deep.equal(v)
    })
  }

  it('bearer and oauth_as JWTs work on the same chain', async () => {
    const sa = {bearer: {tokens: bearerTokens}, oauthAs, providers: ['bearer', 'oauth_as']}
    const jwt = await signJwt({roles: ['dev']})
    const viaJwt = await auth(sa, req({authorization: `Bearer ${jwt}`}), {JWT: SECRET})
    expect(viaJwt).to.deep.equal({ok: true, user: {provider: 'oauth_as', roles: ['dev', 'oauth-user'], subject: 'sam'}})
    const viaStatic = await auth(sa, req({authorization: 'Bearer tok-bob'}), {JWT: SECRET})
    expect(viaStatic.ok && viaStatic.user.subject).to.equal('bob')
  })

  const jwtRejects: Array<[string, () => Promise<string>, string]> = [
    ['expired JWT', () => signJwt({}, {exp: Math.floor(Date.now() / 1000) - 10}), 'access token expired'],
    ['JWT signed with another secret', () => signJwt({}, {secret: 'y'.repeat(40)}), 'invalid access token'],
    ['JWT for another audience', () => signJwt({}, {aud: 'http://other/mcp'}), 'invalid access token'],
    ['JWT from another issuer', () => signJwt({}, {iss: 'http://evil'}), 'invalid access token'],
    ['tampered JWT payload', async () => {
      const [h, p, s] = (await signJwt({roles: ['viewer']})).split('.')
      const claims = JSON.parse(Buffer.from(p, 'base64url').toString())
      claims.roles = ['admin']
      return [h, Buffer.from(JSON.stringify(claims)).toString('base64url'), s].join('.')
    }, 'invalid access token'],
    ['unsigned (alg none) JWT', async () => {
      const h = Buffer.from(JSON.stringify({alg: 'none'})).toString('base64url')
      const p = Buffer.from(JSON.stringify({aud: 'http://127.0.0.1:9/mcp', exp: 9_999_999_999, iss: 'http://127.0.0.1:9/', sub: 'x'})).toString('base64url')
      return `${h}.${p}.`
    }, 'invalid access token'],
  ]
  for (const [name, make, error] of jwtRejects) {
    it(`oauth_as rejects an ${name}`, async () => {
      const r = await auth({oauthAs, providers: ['oauth_as']}, req({authorization: `Bearer ${await make()}`}), {JWT: SECRET})
      expect(r).to.deep.equal({error, ok: false})
    })
  }

  describe('config errors refuse to start', () => {
    const bad: Array<[string, unknown, RegExp, Record<string, string>?]> = [
      ['unknown provider with a suggestion', {providers: ['baerer']}, /unknown provider "baerer" \(did you mean "bearer"\?\)/],
      ['providers not an array', {providers: 'bearer'}, /providers must be an array/],
      ['bearer without tokens', {providers: ['bearer']}, /bearer.tokens must be an object/],
      ['bearer token with a bad value', {bearer: {tokens: {abc: 42}}, providers: ['bearer']}, /entry 1/],
      ['oauth_as without a secret', {oauthAs: {...oauthAs, jwtSecret: '${UNSET}'}, providers: ['oauth_as']}, /jwtSecret is unset or empty: it must be at least 32 bytes/],
      ['oauth_as with a short secret', {oauthAs, providers: ['oauth_as']}, /jwtSecret is only 31 bytes/, {JWT: 'z'.repeat(31)}],
      ['oauth_as with a bad CIDR', {oauthAs: {...oauthAs, trustedSourceCidrs: ['10.0.0.0/33']}, providers: ['oauth_as']}, /trustedSourceCidrs: "10.0.0.0\/33"/],
      ['oauth_as with an http issuer off loopback', {oauthAs: {...oauthAs, issuerUrl: 'http://example.com'}, providers: ['oauth_as']}, /must use https/],
      ['oauth_as without its section', {providers: ['oauth_as']}, /serverAuth.oauthAs is required/],
    ]
    for (const [name, sa, message, env] of bad) {
      it(name, () => expect(() => buildProxyAuth({serverAuth: sa}, {env: env ?? {JWT: SECRET}, file: '/x/servers.json'})).to.throw(message))
    }
    it('never echoes a bearer token in an error', () => {
      // The assertion sits outside the try, so a call that does not throw fails the test.
      let message: string | undefined
      try {
        buildProxyAuth({serverAuth: {bearer: {tokens: {'s3cr3t-token-value': 42}}, providers: ['bearer']}})
      } catch (error) {
        message = (error as Error).message
      }
      expect(message, 'an invalid bearer token entry must be refused').to.be.a('string')
      expect(message).to.match(/bearer/i)
      expect(message).not.to.include('s3cr3t')
    })
  })

  it('the legacy provider string produces a loud warning naming the fix', () => {
    const {providers, warnings} = buildProxyAuth({serverAuth: {provider: 'bearer'}})
    expect(providers).to.deep.equal(['none'])
    expect(warnings.join('\n')).to.match(/WITHOUT authentication.*"providers": \["bearer"\]/s)
  })
})
