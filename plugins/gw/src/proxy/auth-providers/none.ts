import type {AuthProvider} from './types.js'

const ANONYMOUS = Object.freeze({provider: 'none', roles: Object.freeze([]) as readonly string[], subject: 'anonymous'})

/** Accepts every request as the anonymous user, with no roles. */
export function noneProvider(): AuthProvider {
  return {authenticate: () => ({ok: true, user: ANONYMOUS}), name: 'none'}
}
