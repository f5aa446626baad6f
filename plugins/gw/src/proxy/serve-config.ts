import type {Config} from '@oclif/core'

import {type ConfigLayer, type ConfigRequest, type ConfigValue, InputError, loadConfig, UsageError} from '@toolkit/kit'

import {keyLine, type ServersConfig} from '../client/servers-file.js'

/**
 * `gw serve`'s settings, read through toolkit's config hook: defaults < toolkit's config files
 * (`gw` section) < the `"serve"` object of servers.json < TOOLKIT_GW_* < flags, so `toolkit
 * config show gw` explains each value. '' means "not set".
 */
export const GW_SERVE_SETTINGS = {
  auditLog: '',
  connectTimeout: 15,
  /** A request's headers must arrive within this (slowloris); kit's net-limits. */
  headerTimeoutMs: 30_000,
  healthInterval: 15,
  host: '127.0.0.1',
  /** A connection with no request in flight is closed after this; 0: never. kit's net-limits. */
  idleTimeoutMs: 600_000,
  insecure: false,
  maxBody: 4 * 1024 * 1024,
  /** Connections at once; one more is answered 503. */
  maxConnections: 1000,
  maxSessions: 10_000,
  maxSessionsPerUser: 100,
  port: 8080,
  rateLimit: 200,
  rateLimitAddress: 500,
  sessionIdle: 1800,
}
export type GwServeSettings = typeof GW_SERVE_SETTINGS

// Least value of each number (a port may also be 0: any free port).
const MIN: Partial<Record<keyof GwServeSettings, number>> = {connectTimeout: 1, headerTimeoutMs: 100, healthInterval: 1, idleTimeoutMs: 0, maxBody: 1024, maxConnections: 1, maxSessions: 1, maxSessionsPerUser: 1, port: 0, rateLimit: 0, rateLimitAddress: 0, sessionIdle: 1}

/** The `"serve"` object of servers.json as one layer, its values checked against the defaults. */
export function serveLayer(servers: ServersConfig): ConfigLayer | undefined {
  const serve = servers.raw.serve
  if (serve === undefined || servers.file === undefined) return undefined
  const file = servers.file
  const text = servers.text ?? ''
  if (typeof serve !== 'object' || serve === null || Array.isArray(serve)) throw new InputError('"serve" must be an object of gw serve settings', {code: 'config_invalid', file, line: keyLine(text, 'serve')})
  const values: Record<string, ConfigValue> = {}
  const lines: Record<string, number> = {}
  for (const [key, value] of Object.entries(serve)) {
    const line = keyLine(text, key)
    if (!(key in GW_SERVE_SETTINGS)) throw new InputError(`unknown key "serve.${key}" (known: ${Object.keys(GW_SERVE_SETTINGS).join(', ')})`, {code: 'config_invalid', file, line})
    values[key] = value as ConfigValue
    if (line !== undefined) lines[key] = line
  }
  return {file, lines, values}
}

export function serveConfigRequest(servers: ServersConfig, flags: Partial<GwServeSettings> = {}): ConfigRequest<GwServeSettings> {
  const layer = serveLayer(servers)
  return {defaults: GW_SERVE_SETTINGS, flags, layers: layer ? [layer] : [], namespace: 'gw'}
}

/** Merged settings for `gw serve`; a number out of range is refused naming where it came from. */
export async function loadServeSettings(config: Config, servers: ServersConfig, flags: Partial<GwServeSettings>): Promise<GwServeSettings> {
  const {sources, values} = await loadConfig(config, serveConfigRequest(servers, flags))
  for (const [key, min] of Object.entries(MIN) as Array<[keyof GwServeSettings, number]>) {
    const v = values[key] as number
    const max = key === 'port' ? 65_535 : Number.MAX_SAFE_INTEGER
    if (!Number.isInteger(v) || v < min || v > max) throw new UsageError(`${sources[key]}: ${key} must be an integer from ${min}${key === 'port' ? ' to 65535' : ''}, got ${v}`, 'invalid_config')
  }
  return values
}
