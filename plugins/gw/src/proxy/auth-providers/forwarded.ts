import {compileCidrs} from '../cidr.js'
import {type AuthProvider, headerValue} from './types.js'

export class ForwardedConfigError extends Error {}

export interface ForwardedOptions {
  groupsHeader: string
  header: string
  /** When set, only requests whose TCP peer is in this list are trusted. */
  trustedProxies?: (address: string | undefined) => boolean
}

/** Comma-separated, trimmed, empty entries dropped; case is kept (role matching is case-sensitive). */
export function parseGroups(value: string | undefined): string[] {
  if (!value) return []
  return value.split(',').map((s) => s.trim()).filter(Boolean)
}

export function forwardedOptions(raw: unknown): ForwardedOptions {
  const cfg = (raw ?? {}) as Record<string, unknown>
  if (typeof cfg !== 'object' || Array.isArray(cfg)) throw new ForwardedConfigError('serverAuth.forwarded must be an object')
  const header = cfg.header ?? 'x-forwarded-user'
  const groupsHeader = cfg.groups_header ?? 'x-forwarded-groups'
  if (typeof header !== 'string' || !header) throw new ForwardedConfigError('serverAuth.forwarded.header must be a header name')
  if (typeof groupsHeader !== 'string' || !groupsHeader) throw new ForwardedConfigError('serverAuth.forwarded.groups_header must be a header name')
  let trustedProxies: ForwardedOptions['trustedProxies']
  if (cfg.trusted_proxies !== undefined) {
    if (!Array.isArray(cfg.trusted_proxies)) throw new ForwardedConfigError('serverAuth.forwarded.trusted_proxies must be an array of addresses or CIDR ranges')
    trustedProxies = compileCidrs(cfg.trusted_proxies as string[], 'serverAuth.forwarded.trusted_proxies')
  }
  // Node lower-cases incoming header names; config may use any case.
  return {groupsHeader: groupsHeader.toLowerCase(), header: header.toLowerCase(), trustedProxies}
}

/**
 * Trusts a reverse proxy's user header (and optional groups header). Safe only when the proxy
 * strips these headers from client requests; `trusted_proxies` narrows it to known peers.
 */
export function forwardedProvider(raw: unknown): AuthProvider {
  const o = forwardedOptions(raw)
  return {
    authenticate(req) {
      if (o.trustedProxies && !o.trustedProxies(req.remoteAddress)) {
        return {error: 'forwarded identity headers are accepted only from a trusted proxy', ok: false}
      }
      const subject = headerValue(req.headers, o.header)?.trim()
      if (!subject) return {error: `missing ${o.header} header`, ok: false}
      // Two user headers (a client's own plus the proxy's appended one) reach us joined by a comma.
      if (subject.includes(',')) return {error: `ambiguous ${o.header} header (several values): the reverse proxy must replace it, not append`, ok: false}
      return {ok: true, user: {provider: 'forwarded', roles: parseGroups(headerValue(req.headers, o.groupsHeader)), subject}}
    },
    name: 'forwarded',
  }
}
