import type {IncomingMessage, ServerResponse} from 'node:http'

import type {OAuthServerProvider} from '@modelcontextprotocol/sdk/server/auth/provider.js'
import type {OAuthClientInformationFull, OAuthTokens} from '@modelcontextprotocol/sdk/shared/auth.js'

import {type AsStore, MemoryAsStore, RegistryFullError} from './as-store.js'
import {TokenBuckets} from './limits.js'
import {type Registration, RegistrationGuard, sourceAddress} from './registrations.js'
import type {SharedRegistrationLimits} from './shared-registrations.js'
import {type OAuthAsOptions, pkceMatches, randomToken, redirectUriAllowed, sha256, trustedUser} from './auth-providers/oauth-as.js'

export interface AuthorizationServer {
  close(): Promise<void>
  /** Answers the OAuth routes; calls `next` for anything else. */
  handle(req: IncomingMessage, res: ServerResponse, next: () => void): void
}

type AuthorizeResponse = Parameters<OAuthServerProvider['authorize']>[2]

/**
 * The built-in OAuth 2.0 authorization server (`oauth_as`). The SDK's auth router does the
 * protocol plumbing (RFC 8414 and RFC 9728 metadata, RFC 7591 registration, parameter
 * validation, error shapes); this module supplies the policy: redirect URIs from the operator's
 * allowlist, /authorize and /register only from `trustedSourceCidrs`, the user taken from the
 * trusted reverse proxy's headers, PKCE S256 checked here so a failed attempt still burns the
 * code, single-use codes, HS256 JWT access tokens and rotating refresh tokens.
 *
 * Registered clients and refresh-token grants are saved to `stateFile` (mode 0600; refresh
 * tokens only as digests) so a restart does not make every connector register and sign in
 * again; codes live only in memory (they last a minute).
 */
export async function createAuthorizationServer(
  o: OAuthAsOptions,
  log?: (message: string) => void,
  shared?: AsStore,
  /** The /register flood limits counted over all replicas (with a shared store). */
  sharedLimits?: SharedRegistrationLimits,
): Promise<AuthorizationServer> {
  const [{mcpAuthRouter}, {createMcpExpressApp}, errors, jose] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/auth/router.js'),
    import('@modelcontextprotocol/sdk/server/express.js'),
    import('@modelcontextprotocol/sdk/server/auth/errors.js'),
    import('jose'),
  ])
  /** This replica's registrations that were never used, for the per-source flood limits. */
  const registrations = new Map<string, Registration>()
  const guard = new RegistrationGuard(o.registration)
  const tokenTries = new TokenBuckets(o.tokenRequestsPerMinutePerSource / 60, o.tokenRequestsPerMinutePerSource)
  const now = () => Math.floor(Date.now() / 1000)
  const memory = shared ? undefined : await MemoryAsStore.open(o.stateFile, o.maxClients, (r) => guard.expired(r), log)
  const store: AsStore = shared ?? memory!
  if (memory) {
    for (const [k, r] of memory.registrations) {
      registrations.set(k, r)
      guard.restore(r)
    }
  }
  const release = (id: string) => {
    const r = registrations.get(id)
    if (r) guard.released(r)
    registrations.delete(id)
  }

  const sweep = setInterval(() => {
    if (memory) for (const id of memory.sweep((r) => guard.expired(r))) release(id)
    for (const [k, r] of registrations) if (guard.expired(r)) release(k)
    guard.sweep()
    tokenTries.sweep()
  }, 60_000)
  sweep.unref()

  const issue = async (clientId: string, subject: string, roles: string[], scopes: string[], family: string): Promise<OAuthTokens> => {
    const accessToken = await new jose.SignJWT({client_id: clientId, roles, scope: scopes.join(' ')})
      .setProtectedHeader({alg: 'HS256', typ: 'at+jwt'})
      .setIssuer(o.issuer)
      .setAudience(o.resource)
      .setSubject(subject)
      .setIssuedAt()
      .setJti(randomToken())
      .setExpirationTime(now() + o.accessTokenTtlSeconds)
      .sign(o.jwtSecret)
    const refreshToken = randomToken()
    await store.putRefresh(sha256(refreshToken).toString('base64url'), {clientId, expiresAt: now() + o.refreshTokenTtlSeconds, family, roles, scopes, subject})
    return {
      access_token: accessToken,
      expires_in: o.accessTokenTtlSeconds,
      refresh_token: refreshToken,
      scope: scopes.join(' ') || undefined,
      token_type: 'Bearer',
    }
  }

  const checkResource = (resource: URL | undefined) => {
    if (resource && resource.href.replace(/\/+$/, '') !== o.resource) {
      throw new errors.InvalidTargetError(`this server only issues tokens for ${o.resource}`)
    }
  }

  const provider: OAuthServerProvider = {
    async authorize(client, params, res: AuthorizeResponse) {
      checkResource(params.resource)
      const user = (res as {locals: {gwUser?: {roles: string[]; subject: string}}}).locals.gwUser
      if (!user) throw new errors.AccessDeniedError('no trusted user')
      const code = randomToken()
      const r = registrations.get(client.client_id)
      if (r && !r.used) {
        guard.released(r)
        r.used = true
      }
      await store.markUsed(client.client_id)
      await sharedLimits?.used(client.client_id)
      await store.putCode(code, {
        challenge: params.codeChallenge,
        clientId: client.client_id,
        expiresAt: now() + o.codeTtlSeconds,
        redirectUri: params.redirectUri,
        roles: user.roles,
        scopes: params.scopes ?? [],
        subject: user.subject,
      })
      const target = new URL(params.redirectUri)
      target.searchParams.set('code', code)
      if (params.state !== undefined) target.searchParams.set('state', params.state)
      // RFC 9207: lets the client check the code came from the server it started with.
      target.searchParams.set('iss', o.issuer)
      res.redirect(302, target.href)
    },

    async challengeForAuthorizationCode(_client, code) {
      // Read without taking: exchangeAuthorizationCode takes it (skipLocalPkceValidation makes the SDK not call this).
      const grant = await store.takeCode(code)
      if (grant) await store.putCode(code, grant)
      if (!grant) throw new errors.InvalidGrantError('invalid or expired authorization code')
      return grant.challenge
    },

    clientsStore: {
      getClient: (id) => store.getClient(id),
      async registerClient(client) {
        // Every flow this server offers redirects with a code: a client without a redirect URI could never finish one.
        if (client.redirect_uris.length === 0) throw new errors.CustomOAuthError('invalid_redirect_uri', 'redirect_uris must list at least one redirect URI')
        const bad = client.redirect_uris.filter((u) => !redirectUriAllowed(String(u), o.redirectUriAllowlist))
        if (bad.length > 0) {
          throw new errors.CustomOAuthError('invalid_redirect_uri', `redirect_uri not allowed by this server: ${bad.join(', ')}`)
        }
        const full = client as OAuthClientInformationFull
        // The source is filled in as the 201 leaves (the /register middleware knows the request).
        const r: Registration = {at: now(), source: 'unknown', used: false}
        try {
          for (const id of await store.registerClient(full, r)) release(id)
        } catch (error) {
          if (error instanceof RegistryFullError) throw new errors.TemporarilyUnavailableError('too many registered clients')
          throw error
        }
        registrations.set(full.client_id, r)
        return full
      },
    },

    async exchangeAuthorizationCode(client, code, verifier, redirectUri, resource) {
      // Single use whatever happens next (taken atomically, on every replica): a wrong verifier burns the code too.
      const grant = await store.takeCode(code)
      if (!grant || grant.expiresAt <= now() || grant.clientId !== client.client_id) {
        throw new errors.InvalidGrantError('invalid, expired or already used authorization code')
      }
      if (!verifier || !pkceMatches(verifier, grant.challenge)) throw new errors.InvalidGrantError('code_verifier does not match the code_challenge')
      if (redirectUri !== undefined && redirectUri !== grant.redirectUri) throw new errors.InvalidGrantError('redirect_uri does not match the authorization request')
      checkResource(resource)
      return issue(client.client_id, grant.subject, grant.roles, grant.scopes, randomToken())
    },

    async exchangeRefreshToken(client, token, scopes, resource) {
      checkResource(resource)
      const key = sha256(token).toString('base64url')
      // Taken atomically: of two replicas redeeming the same token at once, one gets the grant.
      const grant = await store.takeRefresh(key)
      if (!grant) {
        const family = await store.takeRotated(key)
        if (family) await store.revokeFamily(family, now() + o.refreshTokenTtlSeconds)
        throw new errors.InvalidGrantError('invalid, expired or already used refresh token')
      }
      if (grant.clientId !== client.client_id) {
        await store.putRefresh(key, grant)
        throw new errors.InvalidGrantError('refresh token was issued to another client')
      }
      if (grant.expiresAt <= now() || (await store.familyRevoked(grant.family))) throw new errors.InvalidGrantError('invalid, expired or already used refresh token')
      await store.putRotated(key, grant.family, grant.expiresAt)
      const wanted = scopes && scopes.length > 0 ? scopes : grant.scopes
      if (wanted.some((s) => !grant.scopes.includes(s))) throw new errors.InvalidScopeError('a refresh cannot widen the granted scopes')
      return issue(client.client_id, grant.subject, grant.roles, wanted, grant.family)
    },

    async revokeToken(client, request) {
      const key = sha256(request.token).toString('base64url')
      const grant = await store.getRefresh(key)
      if (grant && grant.clientId === client.client_id) await store.deleteRefresh(key)
    },

    skipLocalPkceValidation: true,

    async verifyAccessToken(token) {
      const {payload} = await jose.jwtVerify(token, o.jwtSecret, {algorithms: ['HS256'], audience: o.resource, issuer: o.issuer})
      return {clientId: String(payload.client_id ?? ''), expiresAt: payload.exp, scopes: String(payload.scope ?? '').split(' ').filter(Boolean), token}
    },
  }

  // Host-header (DNS rebinding) checks are done by the front handler for loopback binds, so the
  // app is created with a name that turns the SDK's own check off.
  const app = createMcpExpressApp({host: 'gw-proxy'})
  app.disable('x-powered-by')
  const gate = (needUser: boolean) => (req: IncomingMessage, res: ServerResponse & {locals: Record<string, unknown>}, next: () => void) => {
    const deny = (status: number, error: string, description: string) => {
      res.statusCode = status
      res.setHeader('content-type', 'application/json')
      res.setHeader('cache-control', 'no-store')
      res.end(JSON.stringify({error, error_description: description}))
    }
    if (!o.trustedSource(req.socket.remoteAddress)) {
      return deny(403, 'access_denied', `${new URL(req.url ?? '/', 'http://x').pathname} is only answered for requests from oauthAs.trustedSourceCidrs`)
    }
    if (needUser) {
      const user = trustedUser(req.headers, o)
      if (!user) return deny(401, 'access_denied', `missing ${o.userHeader} header from the trusted reverse proxy`)
      res.locals.gwUser = user
    }
    next()
  }
  // A shared store that cannot be reached: every OAuth route says so (503) instead of failing half-way.
  const storeDown = (res: ServerResponse): void => {
    res.writeHead(503, {'cache-control': 'no-store', 'content-type': 'application/json', 'retry-after': '5'})
    res.end(JSON.stringify({error: 'temporarily_unavailable', error_description: 'the shared store of the authorization server is unavailable; try again shortly'}))
  }
  app.use((req: IncomingMessage, res: ServerResponse, next: () => void) => {
    if ((req.url ?? '').startsWith('/.well-known/')) return next()
    if (!store.available()) return storeDown(res)
    // The store can fail while a request is under way: it went down before this replica's
    // client saw the connection close, or it refuses commands (out of memory, a read-only
    // replica). The SDK's handlers answer any error they do not know with 500, so a 500 answered
    // after a store command failed is the store's 503.
    const failuresBefore = store.failures()
    const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse
    ;(res as {end: unknown}).end = (...args: unknown[]) => {
      if (res.statusCode === 500 && !res.headersSent && (!store.available() || store.failures() > failuresBefore)) {
        ;(res as {end: unknown}).end = end
        for (const name of res.getHeaderNames()) res.removeHeader(name)
        storeDown(res)
        return res
      }
      return end(...args)
    }
    next()
  })
  app.use('/authorize', gate(true))
  app.use('/register', gate(false), async (req: IncomingMessage, res: ServerResponse, next: () => void) => {
    if (req.method !== 'POST') return next()
    const source = sourceAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], o.trustedSource)
    let admission = guard.admit(source)
    if (admission.ok && sharedLimits) admission = (await sharedLimits.admit(source)) ?? admission
    if (!admission.ok) {
      res.writeHead(429, {'cache-control': 'no-store', 'content-type': 'application/json', 'retry-after': String(admission.retryAfterSeconds)})
      res.end(JSON.stringify({error: 'temporarily_unavailable', error_description: `${admission.reason}; try again in ${admission.retryAfterSeconds} s`}))
      return
    }
    // The SDK's handler answers 201 with the new client: note where it came from.
    const end = res.end.bind(res) as (chunk?: unknown, ...rest: unknown[]) => ServerResponse
    ;(res as {end: unknown}).end = (chunk?: unknown, ...rest: unknown[]) => {
      if (res.statusCode === 201 && chunk) {
        try {
          const id = (JSON.parse(String(chunk)) as {client_id?: unknown}).client_id
          const r = typeof id === 'string' ? registrations.get(id) : undefined
          if (r && r.source === 'unknown') {
            // The same object the memory store keeps: its next save has the source.
            r.source = source
            guard.registered(r)
            sharedLimits?.registered(id as string, source)
          }
        } catch {
          // Not the JSON the SDK sends: nothing to note.
        }
      }
      return end(chunk, ...rest)
    }
    next()
  })
  // The SDK's own limiter keys on express's req.ip, which does not know the trusted proxy list;
  // the token endpoint is limited here by the same source address as /register instead.
  app.use('/token', (req: IncomingMessage, res: ServerResponse, next: () => void) => {
    if (req.method !== 'POST') return next()
    const wait = tokenTries.take(sourceAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], o.trustedSource))
    if (wait === 0) return next()
    res.writeHead(429, {'cache-control': 'no-store', 'content-type': 'application/json', 'retry-after': String(wait)})
    res.end(JSON.stringify({error: 'temporarily_unavailable', error_description: `too many token requests from this address; try again in ${wait} s`}))
  })
  const noLimit = {rateLimit: false as const}
  app.use(
    mcpAuthRouter({
      authorizationOptions: noLimit,
      clientRegistrationOptions: noLimit,
      issuerUrl: new URL(o.issuer),
      provider,
      resourceName: 'toolkit gw proxy',
      resourceServerUrl: new URL(o.resource),
      revocationOptions: noLimit,
      scopesSupported: o.scopesSupported,
      tokenOptions: noLimit,
    }),
  )
  return {
    async close() {
      clearInterval(sweep)
      // A shared store belongs to the proxy (serve.ts), which closes it.
      await memory?.close()
    },
    handle(req, res, next) {
      // express's app is a plain (req, res, next) function; it passes on the body parser's errors
      // (bad JSON or form data, a body over its limit), which are the client's: answer them here.
      ;(app as unknown as (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void)(req, res, (error?: unknown) => {
        if (error === undefined) return next()
        const status = (error as {status?: unknown}).status
        const client = typeof status === 'number' && status >= 400 && status < 500
        if (res.headersSent) return res.end()
        res.writeHead(client ? status : 500, {'cache-control': 'no-store', 'content-type': 'application/json'})
        const description = status === 413 ? 'request body too large' : client ? 'request body is not valid JSON or form data' : 'internal error'
        res.end(JSON.stringify({error: client ? 'invalid_request' : 'server_error', error_description: description}))
      })
    },
  }
}
