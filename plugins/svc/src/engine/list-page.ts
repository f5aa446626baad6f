import type {BranchState} from './branch-state.js'
import {EngineError} from './errors.js'
import {lowerBound} from './sorted.js'
import type {ListOptions} from './types.js'

export function clampLimit(v: unknown, def: number, max: number): number {
  if (v === undefined || v === null) return def
  const n = Math.floor(Number(v))
  if (!Number.isFinite(n) || n < 1) throw new EngineError('invalid_argument', `limit must be a positive integer, got ${JSON.stringify(v)}`)
  return Math.min(n, max)
}

/**
 * The ids of one listing page of `b`, in id order: by table and prefix, after the cursor, at most
 * `limit`. Documents expired at `now` (epoch ms; 0 = ignore expiry) are left out. Used for the
 * current state of a branch and for a branch as it stood at a commit (`list` with `asOf`).
 */
export function pageIds(b: BranchState, options: ListOptions, now: number): {ids: string[]; nextCursor?: string} {
  const limit = clampLimit(options.limit, 100, 10_000)
  let table = options.table
  let prefix = options.prefix ?? ''
  if (table === undefined && prefix.includes(':')) table = prefix.slice(0, prefix.indexOf(':'))
  if (table !== undefined && !prefix.startsWith(`${table}:`)) prefix = `${table}:${prefix}`
  const tables = table === undefined ? [...b.tables.keys()].sort() : [table]
  const out: string[] = []
  for (const t of tables) {
    const entry = b.tables.get(t)
    if (!entry) continue
    entry.sorted ??= [...entry.ids].sort()
    const sorted = entry.sorted
    let i = lowerBound(sorted, options.cursor !== undefined && options.cursor >= prefix ? options.cursor : prefix)
    if (options.cursor !== undefined && sorted[i] === options.cursor) i++
    for (; i < sorted.length && out.length <= limit; i++) {
      if (!sorted[i].startsWith(prefix)) break
      if (now !== 0 && b.expiring.has(sorted[i]) && b.docs.get(sorted[i])!.expiresAt! <= now) continue
      out.push(sorted[i])
    }
    if (out.length > limit) break
  }
  return out.length > limit ? {ids: out.slice(0, limit), nextCursor: out[limit - 1]} : {ids: out}
}
