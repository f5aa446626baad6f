import type {TokenStore} from '@toolkit/kit'

import {closest, UsageError} from '@toolkit/kit'
import {join} from 'node:path'

import {gwConfigDir, type ServerEntry, type ServersConfig, serversConfigCandidates} from './config.js'
import type {ConnectOptions} from './connect.js'

/** Everything a gw client operation needs, built once by the command. */
export interface GwContext extends Omit<ConnectOptions, 'tokenStore'> {
  config: ServersConfig
  env: Record<string, string | undefined>
  log: (msg: string) => void
  store: TokenStore
}

/** `GW_AUTH_FILE`, else `~/.config/gw/auth.json` (XDG_CONFIG_HOME honoured). */
export function authFilePath(env: Record<string, string | undefined> = process.env): string {
  return env.GW_AUTH_FILE || join(gwConfigDir(env), 'auth.json')
}

/** A person can answer: stdin and stderr are terminals and CI is not set. */
export function isInteractive(env: Record<string, string | undefined> = process.env): boolean {
  return Boolean(process.stdin.isTTY && process.stderr.isTTY) && !env.CI
}

export function findServer(ctx: Pick<GwContext, 'config' | 'env'>, name: string): ServerEntry {
  const entry = Object.hasOwn(ctx.config.servers, name) ? ctx.config.servers[name] : undefined
  if (entry) return entry
  const names = Object.keys(ctx.config.servers)
  if (!ctx.config.file) {
    const where = serversConfigCandidates({env: ctx.env}).join(', ')
    throw new UsageError(`unknown server "${name}": no servers.json found (looked in ${where}); see docs/gw.md`, 'unknown_server')
  }
  const guess = closest(name, names)
  const hint = guess ? `; did you mean "${guess}"?` : names.length > 0 ? ` (configured: ${names.join(', ')})` : ' (no servers configured)'
  throw new UsageError(`unknown server "${name}" in ${ctx.config.file}${hint}`, 'unknown_server')
}

/** Connects to a configured server by name and runs `use`, always closing the session. */
export async function withServer<T>(ctx: GwContext, name: string, use: (c: import('./connect.js').Connection) => Promise<T>): Promise<T> {
  const entry = findServer(ctx, name)
  const {connectServer, describeSessionError} = await import('./connect.js')
  const connection = await connectServer(name, entry, {...ctx, tokenStore: ctx.store})
  try {
    return await use(connection)
  } catch (error) {
    throw describeSessionError(name, error)
  } finally {
    await connection.close().catch(() => {})
  }
}
