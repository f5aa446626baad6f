import {InputError} from '@toolkit/kit'

import {type ServersConfig, substituteEnv} from '../client/config.js'
import type {SharedStoreOptions} from './as-store-redis.js'

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * `serverAuth.store`: where replicas of `gw serve` share the authorization server's state and the
 * per-user limits. Absent means in-process (one machine: `oauthAs.stateFile` keeps the state).
 * `{"url": "redis://127.0.0.1:6379/0", "prefix": "gw:"}`; `${NAME}` in the URL is filled from the
 * environment (a password belongs there, not in the file).
 */
export function sharedStoreOptions(config: ServersConfig, env: Record<string, string | undefined>): SharedStoreOptions | undefined {
  const sa = config.raw.serverAuth
  const raw = isObject(sa) ? sa.store : undefined
  if (raw === undefined) return undefined
  const fail = (message: string): never => {
    throw new InputError(`serverAuth.store: ${message}`, {code: 'config_invalid', file: config.file})
  }
  if (!isObject(raw)) return fail('must be an object {"url": "redis://host:port", "prefix": "gw:"}')
  if (typeof raw.url !== 'string' || raw.url === '') return fail('"url" is required, e.g. "redis://127.0.0.1:6379/0"')
  const url = substituteEnv(raw.url, env)
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return fail('"url" is not a URL (redis://host:port[/db])')
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') fail(`"url" must start with redis:// or rediss://, not ${parsed.protocol}//`)
  if (raw.prefix !== undefined && (typeof raw.prefix !== 'string' || raw.prefix === '')) fail('"prefix" must be a non-empty string')
  return {prefix: (raw.prefix as string | undefined) ?? 'gw:', url}
}
