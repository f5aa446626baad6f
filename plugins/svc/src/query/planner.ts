/**
 * The planner: for one table of a statement, the ONE access path the executor takes and EXPLAIN
 * prints (id lookup, secondary-index lookup, full-text search, id-prefix listing, or a scan that
 * may stop at the LIMIT). Both call `planAccess`, so EXPLAIN cannot disagree with execution.
 */
import type {Expr} from 'pgsql-ast-parser'

import type {Engine, Json} from '../engine/types.js'

import {anyItems, evaluate, type EvalCtx, flattenChain, isConstArg, listValues, prepareAny, type RowObj} from './eval.js'
import {LiftedList} from './parse.js'
import {type Cancellable, ITEMS_PER_CHECK, pause} from './slices.js'
import {stored} from './types.js'

/** A plain filtered LIMIT query without ORDER BY stops reading once `stop` rows passed `test`. */
export interface EarlyStop {
  stop: number
  test: (row: RowObj) => boolean
}

export type AccessPath =
  | {early?: EarlyStop; kind: 'prefix'; prefix: string}
  | {early?: EarlyStop; kind: 'scan'}
  | {field: string; kind: 'index'; name: string; values: Json[]}
  | {keys: string[]; kind: 'id'}
  | {kind: 'fulltext'; query: string}

export interface PlanInput {
  alias: string
  /** Looked at while a long id list's keys are built (57014 once the statement is cancelled). */
  cancel?: Cancellable
  branch: string
  ctx: EvalCtx
  early?: EarlyStop
  engine: Engine
  /** Whether the statement has one table (unqualified `id` then means this table's id). */
  single: boolean
  table: string
  where: Expr | null | undefined
}

/** Id lists at least this long are weighed against the table's row count. */
const SCAN_OVER_KEYS_MIN = 1024

/**
 * Chooses the access path, in order of cost: id keys, a secondary index, full-text, id prefix, scan.
 * A long id list's keys are built in slices of the event loop, and only once the table is known
 * to hold more rows than the list has values (issue 24).
 */
export async function planAccess(p: PlanInput): Promise<AccessPath> {
  for (const c of splitAnd(p.where)) {
    // `x = ANY($1)` with a long array: read and made a lookup in slices, before the plan and the filter need it.
    if (c.type === 'binary' && c.op === '=' && c.right.type === 'call' && (c.right.function.name === 'any' || c.right.function.name === 'some') && !c.right.function.schema && c.right.args.length === 1) {
      await prepareAny(c.right.args[0], p.ctx, p.cancel)
    }
  }
  const ids = idCandidates(p.where, p.alias, p.single, p.ctx)
  if (ids) {
    // More values than the table has rows: reading the table is less work than looking up every
    // key, as PostgreSQL's planner picks a sequential scan; a 100,000-value IN list against a
    // small table held the event loop for everyone while its keys were built and looked up.
    if (ids.values.length >= SCAN_OVER_KEYS_MIN && (await p.engine.count({branch: p.branch, table: p.table})) < ids.values.length) return {early: p.early, kind: 'scan'}
    return {keys: await keysOf(ids, p.cancel), kind: 'id'}
  }
  const byIndex = await indexedKeys(p.engine, p.branch, p.table, p.where, p.alias, p.single, p.ctx)
  if (byIndex) return {...byIndex, kind: 'index'}
  const query = ftsQuery(p.where, p.ctx)
  if (query !== undefined) return {kind: 'fulltext', query}
  const prefix = idPrefix(p.where, p.alias, p.single, p.ctx)
  if (prefix !== undefined) return {early: p.early, kind: 'prefix', prefix}
  return {early: p.early, kind: 'scan'}
}

/** EXPLAIN's line for an access path. */
export function describeAccess(path: AccessPath, table: string, alias: string): string {
  const as = alias === table ? '' : ` ${alias}`
  const plural = (n: number, w: string): string => `${n} ${w}${n === 1 ? '' : 's'}`
  switch (path.kind) {
    case 'id': {
      return `Id Lookup on ${table}${as}  (engine get, ${plural(path.keys.length, 'key')})`
    }
    case 'index': {
      return `Index Lookup using ${path.name} on ${table}${as}  (${path.field}, ${plural(path.values.length, 'value')})`
    }
    case 'fulltext': {
      return `Full-text Index Search on ${table}`
    }
    case 'prefix': {
      return `Id Prefix Scan on ${table}  (engine list by prefix)`
    }
    case 'scan': {
      return `Table Scan on ${table}${as}${path.early ? '  (stops at the LIMIT)' : ''}`
    }
  }
}

export function splitAnd(e: Expr | null | undefined): Expr[] {
  return e ? flattenChain(e, 'AND') : []
}

export function isConst(e: Expr): boolean {
  switch (e.type) {
    case 'integer':
    case 'numeric':
    case 'string':
    case 'parameter':
    case 'null':
    case 'boolean': {
      return true
    }
    case 'cast': {
      return isConst(e.operand)
    }
    case 'list': {
      return e.expressions.every(isConst)
    }
    default: {
      return false
    }
  }
}

function refersToId(e: Expr, alias: string, single: boolean): boolean {
  return e.type === 'ref' && e.name === 'id' && (e.table ? e.table.name === alias : single)
}

/** The values an id path would fetch, before they are keys; `distinct` when duplicates are dropped. */
interface IdCandidates {
  distinct: boolean
  values: unknown[]
}

/** The values of `id = c`, `id IN (...)`, `id = ANY(...)` conjuncts, or of an OR chain of them. */
function idCandidates(where: Expr | null | undefined, alias: string, single: boolean, ctx: EvalCtx): IdCandidates | undefined {
  for (const c of splitAnd(where)) {
    if (c.type !== 'binary') continue
    if (c.op === '=') {
      const any = c.right
      if (refersToId(c.left, alias, single) && any.type === 'call' && (any.function.name === 'any' || any.function.name === 'some') && !any.function.schema && isConstArg(any.args[0])) {
        // `id = ANY($1)`: the array's items are the keys (54001 past :max-in-values, as IN lists).
        return {distinct: true, values: anyItems(any.args[0], {}, ctx) ?? []}
      }
      const other = refersToId(c.left, alias, single) ? c.right : refersToId(c.right, alias, single) ? c.left : undefined
      if (other && isConst(other)) return {distinct: false, values: [evaluate(other, {}, ctx)]}
    } else if (c.op === 'IN' && refersToId(c.left, alias, single) && isConst(c.right)) {
      return {distinct: false, values: constList(c.right, ctx)}
    } else if (c.op === 'OR') {
      // `id = 1 OR id = 2 OR ...` is an IN list.
      const values: unknown[] = []
      for (const term of flattenChain(c, 'OR')) {
        const k = term.type === 'binary' && term.op === '=' ? idCandidates(term, alias, single, ctx) : undefined
        if (!k) return undefined
        for (const v of k.values) values.push(v)
      }
      return {distinct: true, values}
    }
  }
  return undefined
}

/** A constant IN list's values; a lifted list's own array, not a 100,000-value copy of it. */
function constList(e: Expr, ctx: EvalCtx): unknown[] {
  if (e.type === 'list' && e.expressions.length === 1) {
    const v = evaluate(e.expressions[0], {}, ctx)
    if (v instanceof LiftedList) return v.values
  }
  return listValues(evaluate(e, {}, ctx))
}

/** The keys of an id path (NULLs never match), built in slices of the event loop. */
async function keysOf(ids: IdCandidates, cancel?: Cancellable): Promise<string[]> {
  const {values} = ids
  const seen = ids.distinct ? new Set<string>() : undefined
  const keys: string[] = []
  if (values.length > ITEMS_PER_CHECK) await pause(cancel)
  for (let i = 0; i < values.length; i++) {
    if (i % ITEMS_PER_CHECK === ITEMS_PER_CHECK - 1) await pause(cancel)
    const v = values[i]
    if (v === null) continue
    const k = keyText(v)
    if (seen) {
      if (seen.has(k)) continue
      seen.add(k)
    }
    keys.push(k)
  }
  return keys
}

/** A conjunct `col = const` or `col IN (...)` on a column with a secondary index: its field and values. */
async function indexedKeys(
  engine: Engine,
  branch: string,
  table: string,
  where: Expr | null | undefined,
  alias: string,
  single: boolean,
  ctx: EvalCtx,
): Promise<undefined | {field: string; name: string; values: Json[]}> {
  const conjuncts = splitAnd(where)
  if (conjuncts.length === 0) return undefined
  const column = (e: Expr): string | undefined => (e.type === 'ref' && e.name !== 'id' && e.name !== '*' && (e.table ? e.table.name === alias : single) ? e.name : undefined)
  let indexes: Awaited<ReturnType<Engine['indexes']>> | undefined
  for (const c of conjuncts) {
    if (c.type !== 'binary') continue
    let field: string | undefined
    let values: unknown[] | undefined
    if (c.op === '=') {
      field = column(c.left) ?? column(c.right)
      const other = column(c.left) ? c.right : c.left
      if (field && isConst(other)) values = [evaluate(other, {}, ctx)]
    } else if (c.op === 'IN' && isConst(c.right)) {
      field = column(c.left)
      const v = field ? evaluate(c.right, {}, ctx) : undefined
      values = listValues(v)
    }
    if (!field || !values) continue
    // Exact numerics and bigints are looked up as the JSON numbers documents hold.
    values = values.map((v) => stored(v))
    indexes ??= await engine.indexes({branch, table}).catch(() => [])
    const idx = indexes.find((i) => i.field === field && !i.error)
    if (!idx) continue
    const plain = (v: unknown): boolean =>
      v === null || v === undefined || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v)) || (typeof v === 'object' && (Array.isArray(v) || v.constructor === Object))
    // Values the index cannot represent (dates, bigints, NaN): the table scan decides.
    if (!values.every((v) => plain(v))) return undefined
    return {field, name: idx.name, values: values.filter((v) => v !== null && v !== undefined) as Json[]}
  }
  return undefined
}

/** `id LIKE 'abc%'`: the literal prefix, so the engine lists only ids that start with it. */
function idPrefix(where: Expr | null | undefined, alias: string, single: boolean, ctx: EvalCtx): string | undefined {
  for (const c of splitAnd(where)) {
    if (c.type !== 'binary' || c.op !== 'LIKE' || !refersToId(c.left, alias, single) || !isConst(c.right)) continue
    const v = evaluate(c.right, {}, ctx)
    if (typeof v !== 'string') continue
    const m = /^([^%_\\]+)%$/.exec(v)
    if (m) return m[1]
  }
  return undefined
}

export function keyText(v: unknown): string {
  return typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : JSON.stringify(v)
}

/** A `@@` conjunct's query text, when the rows can come from the full-text index. */
function ftsQuery(where: Expr | null | undefined, ctx: EvalCtx): string | undefined {
  for (const c of splitAnd(where)) {
    if (c.type === 'binary' && c.op === '@@') {
      const side = isConstish(c.right) ? c.right : isConstish(c.left) ? c.left : undefined
      if (side) {
        const v = evaluate(side, {}, ctx)
        if (typeof v === 'string') return v
      }
    }
  }
  return undefined
}

function isConstish(e: Expr): boolean {
  if (isConst(e)) return true
  return e.type === 'call' && /tsquery$/.test(e.function.name.toLowerCase()) && e.args.every(isConst)
}

