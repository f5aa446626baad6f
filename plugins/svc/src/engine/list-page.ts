import {type BranchState, sortedTableIds} from './branch-state.js'
import {EngineError} from './errors.js'
import {lowerBound} from './sorted.js'
import type {ListOptions} from './types.js'

export function clampLimit(v: unknown, def: number, max: number): number {
  if (v === undefined || v === null) return def
  const n = Math.floor(Number(v))
  if (!Number.isFinite(n) || n < 1) throw new EngineError('invalid_argument', `limit must be a positive integer, got ${JSON.stringify(v)}`)
  return Math.min(n, max)
}

/** The smallest string above every string that starts with `prefix` (undefined: none, as for ''). */
function prefixEnd(prefix: string): string | undefined {
  let p = prefix
  while (p.length > 0 && p.charCodeAt(p.length - 1) === 0xffff) p = p.slice(0, -1)
  return p.length === 0 ? undefined : p.slice(0, -1) + String.fromCharCode(p.charCodeAt(p.length - 1) + 1)
}

/**
 * The ids of one listing page of `b`, in id order (`order: 'desc'` from the last id down): by
 * table and prefix, after the cursor, at most `limit`. Documents expired at `now` (epoch ms; 0 =
 * ignore expiry) are left out. Used for the current state of a branch and for a branch as it
 * stood at a commit (`list` with `asOf`).
 */
export function pageIds(b: BranchState, options: ListOptions, now: number): {ids: string[]; nextCursor?: string} {
  const limit = clampLimit(options.limit, 100, 10_000)
  const order = options.order ?? 'asc'
  if (order !== 'asc' && order !== 'desc') throw new EngineError('invalid_argument', `order must be asc or desc, got ${JSON.stringify(order)}`)
  let table = options.table
  let prefix = options.prefix ?? ''
  if (table === undefined && prefix.includes(':')) table = prefix.slice(0, prefix.indexOf(':'))
  if (table !== undefined && !prefix.startsWith(`${table}:`)) prefix = `${table}:${prefix}`
  const tables = table === undefined ? [...b.tables.keys()].sort() : [table]
  if (order === 'desc') tables.reverse()
  const {cursor} = options
  const expired = (id: string): boolean => now !== 0 && b.expiring.has(id) && b.docs.get(id)!.expiresAt! <= now
  const out: string[] = []
  for (const t of tables) {
    if (!b.tables.has(t)) continue
    const sorted = sortedTableIds(b, t)
    if (order === 'asc') {
      let i = lowerBound(sorted, cursor !== undefined && cursor >= prefix ? cursor : prefix)
      if (cursor !== undefined && sorted[i] === cursor) i++
      for (; i < sorted.length && out.length <= limit; i++) {
        if (!sorted[i].startsWith(prefix)) break
        if (!expired(sorted[i])) out.push(sorted[i])
      }
    } else {
      // From the last id of the prefix (or the last one below the cursor) down.
      const end = prefixEnd(prefix)
      const below = cursor !== undefined && (end === undefined || cursor < end) ? cursor : end
      for (let i = (below === undefined ? sorted.length : lowerBound(sorted, below)) - 1; i >= 0 && out.length <= limit; i--) {
        if (!sorted[i].startsWith(prefix)) break
        if (!expired(sorted[i])) out.push(sorted[i])
      }
    }
    if (out.length > limit) break
  }
  return out.length > limit ? {ids: out.slice(0, limit), nextCursor: out[limit - 1]} : {ids: out}
}
