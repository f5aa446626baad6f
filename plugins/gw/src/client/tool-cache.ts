import type {Tool} from '@modelcontextprotocol/sdk/types.js'

import {createHash} from 'node:crypto'
import {writeFileAtomic} from '@toolkit/kit'
import {mkdir, readFile} from 'node:fs/promises'
import {homedir} from 'node:os'
import {dirname, join} from 'node:path'

/** One hour: schemas rarely change, and a stale entry is re-checked before it can refuse a call. */
export const DEFAULT_TOOL_CACHE_TTL_S = 3600

interface CacheFile {
  fetched_at: number
  server: string
  tools: Tool[]
}

export function toolCacheTtl(env: Record<string, string | undefined>): number {
  const raw = env.GW_TOOLS_CACHE_TTL
  const n = raw === undefined || raw === '' ? DEFAULT_TOOL_CACHE_TTL_S : Number(raw)
  return Number.isFinite(n) && n >= 0 ? n : DEFAULT_TOOL_CACHE_TTL_S
}

/** `$XDG_CACHE_HOME/gw/tools/<hash of the server key>.json` (default `~/.cache`). */
export function toolCacheFile(serverKey: string, env: Record<string, string | undefined>): string {
  const base = env.XDG_CACHE_HOME || join(env.HOME || homedir(), '.cache')
  return join(base, 'gw', 'tools', `${createHash('sha256').update(serverKey).digest('hex').slice(0, 24)}.json`)
}

/** The cached tool list of a server, or undefined when absent, stale, unreadable or disabled. */
export async function readToolCache(serverKey: string, env: Record<string, string | undefined>, now = Date.now()): Promise<Tool[] | undefined> {
  const ttl = toolCacheTtl(env)
  if (ttl === 0) return undefined
  try {
    const data = JSON.parse(await readFile(toolCacheFile(serverKey, env), 'utf8')) as CacheFile
    if (data.server !== serverKey || !Array.isArray(data.tools) || typeof data.fetched_at !== 'number') return undefined
    return now - data.fetched_at <= ttl * 1000 ? data.tools : undefined
  } catch {
    return undefined
  }
}

/** Best effort: a cache that cannot be written only costs the next call one round trip. */
export async function writeToolCache(serverKey: string, tools: Tool[], env: Record<string, string | undefined>): Promise<void> {
  if (toolCacheTtl(env) === 0) return
  const file = toolCacheFile(serverKey, env)
  try {
    await mkdir(dirname(file), {mode: 0o700, recursive: true})
    // A cache: no fsync, a lost one costs one round trip.
    await writeFileAtomic(file, JSON.stringify({fetched_at: Date.now(), server: serverKey, tools} satisfies CacheFile), {fsync: false, mode: 0o600})
  } catch {
    // ignored on purpose
  }
}
