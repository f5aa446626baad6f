import {createHash, randomBytes, timingSafeEqual} from 'node:crypto'

import {compileCidrs} from '../cidr.js'
import type {RegistrationLimits} from '../registrations.js'
import {parseGroups} from './forwarded.js'
import {type AuthProvider, bearerToken, headerValue} from './types.js'

export class OAuthAsConfigError extends Error {}

export interface OAuthAsOptions {
  accessTokenTtlSeconds: number
  codeTtlSeconds: number
  groupsHeader: string
  injectedRoles: string[]
  /** Exactly as the RFC 8414 metadata publishes it (`https://host/` for a root issuer): JWT `iss` and RFC 9207 `iss`. */
  issuer: string
  jwtSecret: Uint8Array
  /** Registered clients at most; when full, the oldest never-used registration makes room. */
  maxClients: number
  registration: RegistrationLimits
  redirectUriAllowlist: string[]
  refreshTokenTtlSeconds: number
  /** The protected resource (the MCP endpoint): `<issuer without trailing slash>/mcp`, the JWT audience. */
  resource: string
  scopesSupported: string[]
  /** Where registered clients and refresh tokens survive restarts; undefined keeps them in memory only. */
  stateFile: string | undefined
  /** Per source address (this replica): codes and refresh tokens cannot be guessed, but a flood of tries is still cut short. */
  tokenRequestsPerMinutePerSource: number
  trustedSource: (address: string | undefined) => boolean
  userHeader: string
}

function strings(v: unknown, where: string, required: boolean): string[] {
  if (v === undefined && !required) return []
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new OAuthAsConfigError(`${where} must be an array of strings`)
  if (required && v.length === 0) throw new OAuthAsConfigError(`${where} must list at least one entry`)
  return v as string[]
}

/** A positive whole number (seconds, or a count, as `where` says). */
function seconds(v: unknown, where: string, fallback: number): number {
  if (v === undefined) return fallback
  if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) throw new OAuthAsConfigError(`${where} must be a positive whole number${where.endsWith('Seconds') ? ' of seconds' : ''}`)
  return v
}

/** Validates `serverAuth.oauthAs`. A missing or short `jwtSecret` is fatal: the proxy refuses to start. */
export function oauthAsOptions(raw: unknown, defaults: {stateFile?: string} = {}): OAuthAsOptions {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new OAuthAsConfigError('serverAuth.oauthAs is required when providers include "oauth_as"')
  }
  const c = raw as Record<string, unknown>
  if (typeof c.issuerUrl !== 'string' || !URL.canParse(c.issuerUrl)) throw new OAuthAsConfigError('serverAuth.oauthAs.issuerUrl must be an absolute URL')
  const issuerUrl = new URL(c.issuerUrl)
  if (issuerUrl.search || issuerUrl.hash) throw new OAuthAsConfigError('serverAuth.oauthAs.issuerUrl must not have a query or fragment')
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(issuerUrl.hostname)
  if (issuerUrl.protocol !== 'https:' && !(loopback && issuerUrl.protocol === 'http:')) {
    throw new OAuthAsConfigError('serverAuth.oauthAs.issuerUrl must use https (plain http only on localhost)')
  }
  const secret = typeof c.jwtSecret === 'string' ? Buffer.from(c.jwtSecret, 'utf8') : undefined
  if (!secret || secret.length < 32) {
    throw new OAuthAsConfigError(
      `serverAuth.oauthAs.jwtSecret is ${secret?.length ? `only ${secret.length} bytes` : 'unset or empty'}: it must be at least 32 bytes (for example "jwtSecret": "\${GW_JWT_SECRET}" with GW_JWT_SECRET=$(openssl rand -base64 48))`,
    )
  }
  const issuer = issuerUrl.href
  const allow = strings(c.redirectUriAllowlist, 'serverAuth.oauthAs.redirectUriAllowlist', true)
  for (const u of allow) if (!URL.canParse(u)) throw new OAuthAsConfigError(`serverAuth.oauthAs.redirectUriAllowlist: ${JSON.stringify(u)} is not a URL`)
  return {
    accessTokenTtlSeconds: seconds(c.accessTokenTtlSeconds, 'serverAuth.oauthAs.accessTokenTtlSeconds', 3600),
    codeTtlSeconds: seconds(c.authorizationCodeTtlSeconds, 'serverAuth.oauthAs.authorizationCodeTtlSeconds', 60),
    groupsHeader: (typeof c.trustedGroupsHeader === 'string' ? c.trustedGroupsHeader : 'x-forwarded-groups').toLowerCase(),
    injectedRoles: strings(c.injectedRoles, 'serverAuth.oauthAs.injectedRoles', false),
    issuer,
    jwtSecret: new Uint8Array(secret),
    maxClients: seconds(c.maxClients, 'serverAuth.oauthAs.maxClients', 10_000),
    registration: {
      perMinutePerSource: seconds(c.registrationsPerMinutePerSource, 'serverAuth.oauthAs.registrationsPerMinutePerSource', 10),
      unusedPerSource: seconds(c.maxUnusedClientsPerSource, 'serverAuth.oauthAs.maxUnusedClientsPerSource', 100),
      unusedTtlSeconds: seconds(c.unusedClientTtlSeconds, 'serverAuth.oauthAs.unusedClientTtlSeconds', 86_400),
    },
    redirectUriAllowlist: allow,
    refreshTokenTtlSeconds: seconds(c.refreshTokenTtlSeconds, 'serverAuth.oauthAs.refreshTokenTtlSeconds', 30 * 24 * 3600),
    resource: `${issuer.replace(/\/+$/, '')}/mcp`,
    stateFile: stateFile(c.stateFile, defaults.stateFile),
    tokenRequestsPerMinutePerSource: seconds(c.tokenRequestsPerMinutePerSource, 'serverAuth.oauthAs.tokenRequestsPerMinutePerSource', 60),
    scopesSupported: c.scopesSupported === undefined ? ['mcp'] : strings(c.scopesSupported, 'serverAuth.oauthAs.scopesSupported', true),
    trustedSource: compileCidrs(strings(c.trustedSourceCidrs, 'serverAuth.oauthAs.trustedSourceCidrs', true), 'serverAuth.oauthAs.trustedSourceCidrs'),
    userHeader: (typeof c.trustedUserHeader === 'string' ? c.trustedUserHeader : 'x-forwarded-user').toLowerCase(),
  }
}

function stateFile(v: unknown, fallback: string | undefined): string | undefined {
  if (v === undefined) return fallback
  if (v === '' || v === false) return undefined
  if (typeof v !== 'string') throw new OAuthAsConfigError('serverAuth.oauthAs.stateFile must be a file path, or "" to keep the state in memory only')
  return v
}

/** Redirect URI allowlist: exact match, and for loopback URIs any port (RFC 8252 section 7.3). */
export function redirectUriAllowed(uri: string, allowlist: readonly string[]): boolean {
  if (allowlist.includes(uri)) return true
  let u: URL
  try {
    u = new URL(uri)
  } catch {
    return false
  }
  const loop = (h: string) => h === 'localhost' || h === '127.0.0.1' || h === '[::1]'
  if (!loop(u.hostname)) return false
  return allowlist.some((a) => {
    const r = URL.canParse(a) ? new URL(a) : undefined
    return r !== undefined && loop(r.hostname) && r.hostname === u.hostname && r.protocol === u.protocol && r.pathname === u.pathname && r.search === u.search
  })
}

export const randomToken = (): string => randomBytes(32).toString('base64url')
export const sha256 = (s: string): Buffer => createHash('sha256').update(s).digest()

export function pkceMatches(verifier: string, challenge: string): boolean {
  // RFC 7636: 43-128 characters from the unreserved set.
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) return false
  const computed = Buffer.from(createHash('sha256').update(verifier).digest('base64url'))
  const expected = Buffer.from(challenge)
  return computed.length === expected.length && timingSafeEqual(computed, expected)
}

/** The trusted user of an /authorize request, set by the reverse proxy in front. */
export function trustedUser(headers: Parameters<typeof headerValue>[0], o: OAuthAsOptions): undefined | {roles: string[]; subject: string} {
  const subject = headerValue(headers, o.userHeader)?.trim()
  // Several values (joined by a comma) mean a client's own header slipped through: trust none.
  if (!subject || subject.includes(',')) return undefined
  return {roles: parseGroups(headerValue(headers, o.groupsHeader)), subject}
}

/**
 * Verifies the JWT access tokens the built-in authorization server issued: HS256 only, this
 * issuer, this resource as audience, not expired. `injectedRoles` are added at verification, so
 * changing them in the config applies to tokens already issued.
 */
export function oauthAsProvider(o: OAuthAsOptions): AuthProvider {
  let jose: typeof import('jose') | undefined
  return {
    async authenticate(req) {
      const token = bearerToken(req.headers)
      if (!token) return {error: 'missing bearer token', ok: false}
      jose ??= await import('jose')
      try {
        const {payload} = await jose.jwtVerify(token, o.jwtSecret, {algorithms: ['HS256'], audience: o.resource, issuer: o.issuer})
        if (typeof payload.sub !== 'string' || !payload.sub) return {error: 'access token has no subject', ok: false}
        const claimed = Array.isArray(payload.roles) ? payload.roles.filter((r): r is string => typeof r === 'string') : []
        const roles = [...new Set([...claimed, ...o.injectedRoles])]
        return {ok: true, user: {provider: 'oauth_as', roles, subject: payload.sub}}
      } catch (error) {
        const code = (error as {code?: string}).code
        return {error: code === 'ERR_JWT_EXPIRED' ? 'access token expired' : 'invalid access token', ok: false}
      }
    },
    name: 'oauth_as',
  }
}
