import {createHash, timingSafeEqual} from 'node:crypto'

import type {User} from '../acl.js'
import {type AuthProvider, bearerToken} from './types.js'

export class BearerConfigError extends Error {}

interface Entry {
  digest: Buffer
  user: User
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest()
}

/**
 * Static tokens: `bearer.tokens` maps a token to a subject string or `{subject, roles}`.
 * Tokens are kept only as SHA-256 digests, and the presented token's digest is compared with
 * every configured digest in constant time and without an early exit, so neither the match
 * position nor a common prefix shows in the response time.
 */
export function bearerProvider(raw: unknown): AuthProvider {
  const tokens = (raw as {tokens?: unknown} | undefined)?.tokens
  if (typeof tokens !== 'object' || tokens === null || Array.isArray(tokens)) {
    throw new BearerConfigError('serverAuth.bearer.tokens must be an object mapping a token to a subject or {subject, roles}')
  }
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
  return {
    authenticate(req) {
      const token = bearerToken(req.headers)
      if (!token) return {error: 'missing bearer token', ok: false}
      const d = digest(token)
      let found: User | undefined
      for (const e of entries) {
        if (timingSafeEqual(d, e.digest) && !found) found = e.user
      }
      return found ? {ok: true, user: found} : {error: 'invalid bearer token', ok: false}
    },
    name: 'bearer',
  }
}
