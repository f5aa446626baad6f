import type {IncomingHttpHeaders} from 'node:http'

import type {User} from '../acl.js'

export interface AuthRequest {
  headers: IncomingHttpHeaders
  /** The TCP peer, as the socket reports it. */
  remoteAddress: string | undefined
}

export type AuthResult = {error: string; ok: false} | {ok: true; user: User}

/**
 * One link of the chain. Providers that need no I/O answer synchronously, so a bearer or
 * forwarded request is authenticated without a promise round trip.
 */
export interface AuthProvider {
  authenticate(req: AuthRequest): AuthResult | Promise<AuthResult>
  readonly name: string
}

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(headers: IncomingHttpHeaders): string | undefined {
  const h = headers.authorization
  if (!h || h.length < 8) return undefined
  if (h.slice(0, 7).toLowerCase() !== 'bearer ') return undefined
  const token = h.slice(7).trim()
  return token || undefined
}

export function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name]
  return Array.isArray(v) ? v.join(',') : v
}
