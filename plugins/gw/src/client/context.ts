import type {TokenStore} from '@toolkit/kit'

import {closest, UsageError} from '@toolkit/kit'
import {dirname, join} from 'node:path'

import {gwConfigDir, type ServerEntry, type ServersConfig, serversConfigCandidates} from './servers-file.js'
import type {ConnectOptions} from './connect.js'

/** Everything a gw client operation needs, built once by the command. */
export interface GwContext extends Omit<ConnectOptions, 'tokenStore'> {
  config: ServersConfig
  env: Record<string, string | undefined>
  log: (msg: string) => void
  store: TokenStore
}

/**
 * `GW_AUTH_FILE`, else `gw-auth.json` in the host's configuration directory (`~/.config/toolkit`,
 * docs/plugins.md), where every plugin keeps its credentials. Without a host directory (library
 * use), the former place `~/.config/gw/auth.json`.
 */
export function authFilePath(env: Record<string, string | undefined> = process.env, hostConfigDir?: string): string {
  if (env.GW_AUTH_FILE) return env.GW_AUTH_FILE
  return hostConfigDir ? join(hostConfigDir, 'gw-auth.json') : legacyAuthFile(env)
}

/** Where gw kept its token store before it moved to the host's configuration directory. */
export const legacyAuthFile = (env: Record<string, string | undefined> = process.env): string => join(gwConfigDir(env), 'auth.json')

/**
 * The one-time move of `~/.config/gw/auth.json` to its new place: done when the new file does not
 * exist yet and the old one does; a rename, so two processes starting at once cannot both move
 * it (the loser finds it gone). Returns the old path when this process moved it.
 */
export async function moveLegacyAuthFile(target: string, env: Record<string, string | undefined> = process.env): Promise<string | undefined> {
  const legacy = legacyAuthFile(env)
  if (env.GW_AUTH_FILE || legacy === target) return undefined
  const {access, chmod, copyFile, mkdir, rename, unlink} = await import('node:fs/promises')
  const exists = (f: string) => access(f).then(() => true, () => false)
  if ((await exists(target)) || !(await exists(legacy))) return undefined
  await mkdir(dirname(target), {mode: 0o700, recursive: true})
  try {
    await rename(legacy, target)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT') return undefined
    if (code !== 'EXDEV') throw error
    // Another file system: copy (exclusive, so a concurrent mover cannot be overwritten), then remove.
    await copyFile(legacy, target, (await import('node:fs')).constants.COPYFILE_EXCL)
    await unlink(legacy)
  }
  await chmod(target, 0o600)
  return legacy
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
