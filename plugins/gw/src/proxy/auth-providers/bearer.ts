import {hash, randomBytes, timingSafeEqual} from 'node:crypto'

import type {User} from '../acl.js'
import {type AuthProvider, bearerToken} from './types.js'

export class BearerConfigError extends Error {}

interface Entry {
  digest: Buffer
  user: User
}

/**
 * Static tokens: `bearer.tokens` maps a token to a subject string or `{subject, roles}`.
 * Tokens are kept only as SHA-256 digests salted with a secret drawn at start. A presented token is
 * digested the same way, looked up by digest, and the hit confirmed with timingSafeEqual: the
 * lookup's timing depends only on a digest an attacker cannot compute without the key, so
 * it leaks nothing about the configured tokens (the "double HMAC" comparison), and the cost
 * stays the same with 2 or 2,000 tokens.
 */
export function bearerProvider(raw: unknown): AuthProvider {
  const tokens = (raw as {tokens?: unknown} | undefined)?.tokens
  if (typeof tokens !== 'object' || tokens === null || Array.isArray(tokens)) {
    throw new BearerConfigError('serverAuth.bearer.tokens must be an object mapping a token to a subject or {subject, roles}')
  }
  // A secret prefix makes the digest unpredictable to a client (what the lookup needs); the
  // one-shot hash() is three times cheaper than an HMAC object per request.
  const key = randomBytes(32).toString('base64')
  const digest = (token: string): Buffer => hash('sha256', key + token, 'buffer')
  const entries: Entry[] = []
  for (const [token, value] of Object.entries(tokens)) {
    // Never echo the token itself in an error: it is a secret. Name its position instead.
    const where = `serverAuth.bearer.tokens (entry ${entries.length + 1})`
    if (!token) throw new BearerConfigError(`${where}: the token is empty`)
    let user: User
    if (typeof value === 'string' && value) {
      user = {provider: 'bearer', roles: [], subject: value}
    } else if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      const {roles = [], subject} = value as {roles?: unknown; subject?: unknown}
      if (typeof subject !== 'string' || !subject) throw new BearerConfigError(`${where}: subject must be a non-empty string`)
      if (!Array.isArray(roles) || !roles.every((r) => typeof r === 'string')) {
        throw new BearerConfigError(`${where}: roles must be an array of strings`)
      }
      user = {provider: 'bearer', roles: [...roles], subject}
    } else {
      throw new BearerConfigError(`${where}: the value must be a subject string or {subject, roles}`)
    }
    entries.push({digest: digest(token), user})
  }
  const byDigest = new Map(entries.map((e) => [e.digest.toString('base64'), e]))
  return {
    authenticate(req) {
      const token = bearerToken(req.headers)
      if (!token) return {error: 'missing bearer token', ok: false}
      const d = digest(token)
      const e = byDigest.get(d.toString('base64'))
      return e && timingSafeEqual(d, e.digest) ? {ok: true, user: e.user} : {error: 'invalid bearer token', ok: false}
    },
    name: 'bearer',
  }
}
