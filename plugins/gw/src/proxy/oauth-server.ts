import type {IncomingMessage, ServerResponse} from 'node:http'

import type {OAuthServerProvider} from '@modelcontextprotocol/sdk/server/auth/provider.js'
import type {OAuthClientInformationFull, OAuthTokens} from '@modelcontextprotocol/sdk/shared/auth.js'

import {loadState, stateWriter} from './oauth-state.js'
import {type Registration, RegistrationGuard, sourceAddress} from './registrations.js'
import {type OAuthAsOptions, pkceMatches, randomToken, redirectUriAllowed, sha256, trustedUser} from './auth-providers/oauth-as.js'

interface CodeGrant {
  challenge: string
  clientId: string
  expiresAt: number
  redirectUri: string
  roles: string[]
  scopes: string[]
  subject: string
}

interface RefreshGrant {
  clientId: string
  expiresAt: number
  family: string
  roles: string[]
  scopes: string[]
  subject: string
}

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
export async function createAuthorizationServer(o: OAuthAsOptions, log?: (message: string) => void): Promise<AuthorizationServer> {
  const [{mcpAuthRouter}, {createMcpExpressApp}, errors, jose] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/auth/router.js'),
    import('@modelcontextprotocol/sdk/server/express.js'),
    import('@modelcontextprotocol/sdk/server/auth/errors.js'),
    import('jose'),
  ])
  const clients = new Map<string, OAuthClientInformationFull>()
  const codes = new Map<string, CodeGrant>()
  /** By SHA-256 of the token, so a memory dump does not hand out live refresh tokens. */
  const refresh = new Map<string, RefreshGrant>()
  /** Rotated-away refresh tokens: presenting one again revokes its whole family (RFC 9700 4.14.2). */
  const rotated = new Map<string, {expiresAt: number; family: string}>()
  /** When and from where each client registered, and whether it ever signed in (flood control). */
  const registrations = new Map<string, Registration>()
  const guard = new RegistrationGuard(o.registration)
  const now = () => Math.floor(Date.now() / 1000)
  if (o.stateFile) {
    const saved = await loadState(o.stateFile)
    for (const [k, v] of Object.entries(saved.refresh)) refresh.set(k, v as RefreshGrant)
    for (const [k, v] of Object.entries(saved.rotated)) rotated.set(k, v as {expiresAt: number; family: string})
    const granted = new Set([...refresh.values()].map((g) => g.clientId))
    for (const [k, v] of Object.entries(saved.clients)) {
      // A file from before registrations were tracked: a client with a grant is in use; others start their unused time now.
      const r = (saved.registrations?.[k] as Registration | undefined) ?? {at: now(), source: 'unknown', used: granted.has(k)}
      if (guard.expired(r)) continue
      clients.set(k, v as OAuthClientInformationFull)
      registrations.set(k, r)
      guard.restore(r)
    }
  }
  const writer = o.stateFile
    ? stateWriter(
        o.stateFile,
        () => ({clients: Object.fromEntries(clients), refresh: Object.fromEntries(refresh), registrations: Object.fromEntries(registrations), rotated: Object.fromEntries(rotated)}),
        log,
      )
    : undefined
  const changed = () => writer?.schedule()
  const forget = (id: string) => {
    const r = registrations.get(id)
    if (r) guard.released(r)
    registrations.delete(id)
    clients.delete(id)
  }

  const sweep = setInterval(() => {
    const t = now()
    const before = refresh.size + rotated.size
    for (const [k, v] of codes) if (v.expiresAt <= t) codes.delete(k)
    for (const [k, v] of refresh) if (v.expiresAt <= t) refresh.delete(k)
    for (const [k, v] of rotated) if (v.expiresAt <= t) rotated.delete(k)
    const clientsBefore = clients.size
    for (const [k, r] of registrations) if (guard.expired(r)) forget(k)
    guard.sweep()
    if (refresh.size + rotated.size !== before || clients.size !== clientsBefore) changed()
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
    refresh.set(sha256(refreshToken).toString('base64url'), {clientId, expiresAt: now() + o.refreshTokenTtlSeconds, family, roles, scopes, subject})
    changed()
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
        changed()
      }
      codes.set(code, {
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
      const grant = codes.get(code)
      if (!grant) throw new errors.InvalidGrantError('invalid or expired authorization code')
      return grant.challenge
    },

    clientsStore: {
      getClient: async (id) => clients.get(id),
      async registerClient(client) {
        const bad = client.redirect_uris.filter((u) => !redirectUriAllowed(String(u), o.redirectUriAllowlist))
        if (bad.length > 0) {
          throw new errors.CustomOAuthError('invalid_redirect_uri', `redirect_uri not allowed by this server: ${bad.join(', ')}`)
        }
        if (clients.size >= o.maxClients) {
          // Full: the oldest registration that never signed in makes room (Map keeps insertion order).
          const idle = [...registrations].find(([, r]) => !r.used)
          if (!idle) throw new errors.TemporarilyUnavailableError('too many registered clients')
          forget(idle[0])
        }
        const full = client as OAuthClientInformationFull
        clients.set(full.client_id, full)
        changed()
        return full
      },
    },

    async exchangeAuthorizationCode(client, code, verifier, redirectUri, resource) {
      const grant = codes.get(code)
      // Single use whatever happens next: a wrong verifier burns the code too.
      codes.delete(code)
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
      const grant = refresh.get(key)
      if (!grant) {
        const reused = rotated.get(key)
        if (reused) {
          for (const [k, v] of refresh) if (v.family === reused.family) refresh.delete(k)
          rotated.delete(key)
          changed()
        }
        throw new errors.InvalidGrantError('invalid, expired or already used refresh token')
      }
      if (grant.clientId !== client.client_id) throw new errors.InvalidGrantError('refresh token was issued to another client')
      refresh.delete(key)
      changed()
      if (grant.expiresAt <= now()) throw new errors.InvalidGrantError('refresh token expired')
      rotated.set(key, {expiresAt: grant.expiresAt, family: grant.family})
      const wanted = scopes && scopes.length > 0 ? scopes : grant.scopes
      if (wanted.some((s) => !grant.scopes.includes(s))) throw new errors.InvalidScopeError('a refresh cannot widen the granted scopes')
      return issue(client.client_id, grant.subject, grant.roles, wanted, grant.family)
    },

    async revokeToken(client, request) {
      const key = sha256(request.token).toString('base64url')
      const grant = refresh.get(key)
      if (grant && grant.clientId === client.client_id) {
        refresh.delete(key)
        changed()
      }
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
  app.use('/authorize', gate(true))
  app.use('/register', gate(false), (req: IncomingMessage, res: ServerResponse, next: () => void) => {
    if (req.method !== 'POST') return next()
    const source = sourceAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], o.trustedSource)
    const admission = guard.admit(source)
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
          if (typeof id === 'string' && clients.has(id)) {
            const r: Registration = {at: now(), source, used: false}
            registrations.set(id, r)
            guard.registered(r)
            changed()
          }
        } catch {
          // Not the JSON the SDK sends: nothing to note.
        }
      }
      return end(chunk, ...rest)
    }
    next()
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
      await writer?.flush()
    },
    handle(req, res, next) {
      // express's app is a plain (req, res, next) function.
      ;(app as unknown as (req: IncomingMessage, res: ServerResponse, next: () => void) => void)(req, res, next)
    },
  }
}
