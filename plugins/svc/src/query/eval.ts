/** Expression evaluation for the SQL subset: three-valued logic, PostgreSQL-like coercions. */
import type {Expr, ExprCall} from 'pgsql-ast-parser'

import {parseArrayText, parseArrayTextSliced} from './array-text.js'
import type {CatalogSnapshot} from './catalog-snapshot.js'

import {catalogFunction, NOT_CATALOG, regclassOid} from './catalog-functions.js'
import * as D from './datetime.js'
import {compareDatetime, datetimeArith, datetimeFunction, datetimeNegate, extract, isDatetimeFunction} from './datetime-sql.js'
import {SqlError, unsupported} from './errors.js'
import {parseJsonbExact} from './jsonb-input.js'
import {SET_FUNCTIONS} from './set-functions.js'
import {type Cancellable, pause} from './slices.js'
import {toCharDatetime} from './to-char.js'
import {toCharNumber} from './to-char-number.js'
import {DEFAULT_MAX_IN_VALUES, DISTINCT_SCHEMA, LiftedList, NOT_DISTINCT_SCHEMA, tooManyValues} from './parse.js'
import {ARRAY_ELEMENT, arrayOid, castColumnName, coerce, inferOid, OID, oidOfTypeName, toDatetime, typed, typeName} from './types.js'
import * as V from './values.js'

export type RowObj = Record<string, unknown>
/** One row of a FROM clause: the object of each source, by alias (null on the outer side of a LEFT JOIN). */
export type Row = Record<string, RowObj | null>

export interface SourceInfo {
  alias: string
  /** Declared columns (CREATE TABLE), or undefined for a schemaless table. */
  columns?: string[]
  /** Declared column types by name. */
  oids?: Record<string, number>
  /** In a subquery, the fields a schemaless source's rows hold (other names refer to the enclosing query). */
  known?: Set<string>
}

export interface SessionInfo {
  /** The catalog snapshot of the running statement, for the catalog functions (catalog-functions.ts). */
  catalog?: () => CatalogSnapshot | undefined
  database: string
  /** `:max-in-values` (parse.ts's default when absent): also caps an `= ANY(array)` list. */
  maxInValues?: number
  /** The transaction's start in microseconds: now() and current_timestamp, fixed for the transaction. */
  now?: bigint
  schema: string
  user: string
  version: string
}

/** What a subquery answered: its columns' types and its rows. */
export interface SubqueryResult {
  columns?: Array<{name: string; oid: number}>
  rows: unknown[][]
}

/**
 * A subquery of the statement, prepared before the statement runs (the evaluator is synchronous,
 * reading tables is not): an uncorrelated one holds its answer, a correlated one is run again for
 * each row of the enclosing query over tables it has already read.
 */
export interface Subquery {
  result?: SubqueryResult
  run?: (row: Row, ctx: EvalCtx) => SubqueryResult
}

/** The enclosing query of a subquery: its current row and context, for outer references. */
export interface OuterScope {
  ctx: EvalCtx
  row: Row
}

/** Thrown while probing a subquery when it refers to the enclosing query (it is then correlated). */
export class CorrelatedReference extends Error {}

/** The AST node types a subquery has where an expression is expected. */
export const SUBQUERY_TYPES = new Set(['select', 'union', 'union all', 'values', 'with', 'with recursive'])

export function isSubquery(e: unknown): boolean {
  return Boolean(e) && typeof e === 'object' && SUBQUERY_TYPES.has((e as {type?: string}).type ?? '')
}

export interface EvalCtx {
  /**
   * The enclosing query, for a subquery's outer references; 'probe' while finding out whether a
   * subquery is correlated (an outer reference then throws CorrelatedReference).
   */
  outer?: 'probe' | OuterScope
  /** The statement's subqueries, prepared (see Subquery). */
  subqueries?: Map<object, Subquery>
  /** Rows of the current group, when evaluating aggregates. */
  group?: Row[]
  /** Output values by alias, for ORDER BY on a select-list alias. */
  outputs?: Map<string, unknown>
  params: unknown[]
  session: SessionInfo
  sources: SourceInfo[]
  /** Set when the rows already come from the full-text index, so `@@` predicates hold. */
  ftsFromIndex?: boolean
  /** The current values of the select list's set-returning calls (see select-set-functions.ts). */
  setValues?: Map<object, unknown>
}

export const AGGREGATES = new Set(['count', 'sum', 'avg', 'min', 'max', 'string_agg', 'array_agg', 'bool_and', 'bool_or', 'json_agg', 'jsonb_agg'])

export function isAggregate(e: Expr | null | undefined): boolean {
  if (!e || typeof e !== 'object') return false
  if (e.type === 'call') {
    if (AGGREGATES.has(e.function.name.toLowerCase()) && (!e.function.schema || e.function.schema === 'pg_catalog')) return true
    return e.args.some(isAggregate)
  }
  if (e.type === 'binary') return isAggregate(e.left) || isAggregate(e.right)
  if (e.type === 'unary' || e.type === 'cast') return isAggregate(e.operand)
  if (e.type === 'case') return e.whens.some((w) => isAggregate(w.when) || isAggregate(w.value)) || isAggregate(e.else)
  return false
}

export function param(ctx: EvalCtx, name: string): unknown {
  const n = Number(name.slice(1))
  if (!Number.isInteger(n) || n < 1 || n > ctx.params.length) {
    throw new SqlError('08P01', `there is no parameter ${name}`)
  }
  return ctx.params[n - 1]
}

export function resolveRef(row: Row, table: string | undefined, name: string, ctx: EvalCtx): unknown {
  if (table) {
    if (!(table in row) && !ctx.sources.some((s) => s.alias === table)) {
      if (ctx.outer) return outerRef(table, name, ctx)
      throw new SqlError('42P01', `missing FROM-clause entry for table "${table}"`)
    }
    const obj = row[table]
    if (!obj) return null
    const src = ctx.sources.find((s) => s.alias === table)
    if (!(name in obj) && src?.columns && !src.columns.includes(name)) {
      throw new SqlError('42703', `column ${table}.${name} does not exist`)
    }
    return obj[name] ?? null
  }
  if (ctx.sources.length > 1 && ctx.sources.filter((s) => s.columns?.includes(name)).length > 1) {
    throw new SqlError('42702', `column reference "${name}" is ambiguous`)
  }
  for (const s of ctx.sources) {
    const obj = row[s.alias]
    if (obj && name in obj) return obj[name] ?? null
  }
  if (ctx.outputs?.has(name)) return ctx.outputs.get(name)
  // PostgreSQL binds a name to the innermost query that has such a column.
  if (ctx.outer && !ctx.sources.some((s) => s.columns?.includes(name) || s.known?.has(name))) return outerRef(undefined, name, ctx)
  if (ctx.sources.length > 0 && ctx.sources.every((s) => s.columns && !s.columns.includes(name))) {
    throw new SqlError('42703', `column "${name}" does not exist`)
  }
  if (ctx.sources.length === 0) throw new SqlError('42703', `column "${name}" does not exist`)
  return null
}

function outerRef(table: string | undefined, name: string, ctx: EvalCtx): unknown {
  const outer = ctx.outer
  if (outer === 'probe') throw new CorrelatedReference(name)
  return resolveRef((outer as OuterScope).row, table, name, (outer as OuterScope).ctx)
}

/** A subquery's answer for this row. */
export function subqueryResult(e: Expr, row: Row, ctx: EvalCtx): SubqueryResult {
  const sub = ctx.subqueries?.get(e)
  if (!sub) throw unsupported('a subquery in this position')
  return sub.result ?? (sub.run as NonNullable<Subquery['run']>)(row, ctx)
}

/** The values of a one-column subquery (IN, ANY, ALL). */
function subqueryColumn(e: Expr, row: Row, ctx: EvalCtx): unknown[] {
  const r = subqueryResult(e, row, ctx)
  if ((r.columns?.length ?? 1) > 1) throw new SqlError('42601', 'subquery has too many columns')
  return r.rows.map((x) => x[0] ?? null)
}

function num(v: unknown, what = 'numeric'): number {
  if (typeof v === 'number') return v
  if (V.isNumeric(v)) return V.toNumber(v)
  if (typeof v === 'boolean') return v ? 1 : 0
  if (typeof v === 'string' && v.trim() !== '' && !Number.isNaN(Number(v))) return Number(v)
  throw new SqlError('22P02', `invalid input syntax for type ${what}: "${typeof v === 'string' ? v : JSON.stringify(v)}"`)
}

/** Comparison with PostgreSQL's implicit coercions: a numeric string compares as a number. */
export function compare(a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : Number.isNaN(a) || Number.isNaN(b) ? V.compareNumeric(a, b) : 0
  if ((typeof a === 'object' && a !== null) || (typeof b === 'object' && b !== null)) {
    const c = compareDatetime(a, b)
    if (c !== undefined) return c
  }
  if (V.isNumeric(a) || V.isNumeric(b)) {
    const p = V.promote(a, b) as {a: unknown; b: unknown}
    return V.compareNumeric(p.a, p.b)
  }
  if (typeof a === 'boolean' || typeof b === 'boolean') {
    const x = coerce(a, 16) as boolean
    const y = coerce(b, 16) as boolean
    return x === y ? 0 : x ? 1 : -1
  }
  const x = typeof a === 'string' ? a : JSON.stringify(a)
  const y = typeof b === 'string' ? b : JSON.stringify(b)
  return x < y ? -1 : x > y ? 1 : 0
}

function likeToRe(pattern: string, ci: boolean): RegExp {
  let re = '^'
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]
    if (c === '\\' && i + 1 < pattern.length) re += escapeRe(pattern[++i])
    else if (c === '%') re += '.*'
    else if (c === '_') re += '.'
    else re += escapeRe(c)
  }
  return new RegExp(re + '$', ci ? 'is' : 's')
}

function escapeRe(c: string): string {
  return c.replaceAll(/[.*+?^${}()|[\]\\/]/g, '\\$&')
}

function text(v: unknown): string {
  return typeof v === 'string' ? v : v instanceof V.BpChar ? v.text : V.textOf(v)
}

function truthy(v: unknown): boolean | null {
  if (v === null || v === undefined) return null
  if (typeof v === 'boolean') return v
  return coerce(v, 16) as boolean
}

/** Words of a full-text query, used when a `@@` predicate is evaluated row by row. */
export function ftsTerms(q: string): string[] {
  return q
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w && !['and', 'or', 'not'].includes(w))
}

export function evaluate(e: Expr, row: Row, ctx: EvalCtx): unknown {
  switch (e.type) {
    case 'numeric': {
      return V.Numeric.parse(String(e.value))
    }
    case 'integer':
    case 'string':
    case 'boolean': {
      return e.value
    }
    case 'null': {
      return null
    }
    case 'constant': {
      return e.value
    }
    case 'parameter': {
      return param(ctx, e.name)
    }
    case 'ref': {
      if (e.name === '*') throw new SqlError('42601', 'a bare * is only allowed in the select list or count(*)')
      return resolveRef(row, e.table?.name, e.name, ctx)
    }
    case 'array': {
      const items = e.expressions.map((x) => evaluate(x, row, ctx))
      return new V.PgArray(items, elementOidOf(items))
    }
    case 'array select': {
      // ARRAY(subquery): the subquery's one column as an array (empty, not NULL, for no rows).
      const r = subqueryResult(e.select, row, ctx)
      if ((r.columns?.length ?? 1) > 1) throw new SqlError('42601', 'subquery must return only one column')
      const items = r.rows.map((x) => x[0] ?? null)
      return new V.PgArray(items, r.columns?.[0]?.oid ?? elementOidOf(items))
    }
    case 'arrayIndex': {
      const a = evaluate(e.array, row, ctx)
      const i = evaluate(e.index, row, ctx)
      if (a === null || i === null) return null
      const items = a instanceof V.PgArray ? a.items : Array.isArray(a) ? a : undefined
      if (!items) throw new SqlError('42804', `cannot subscript type ${V.typeNameOf(a)} because it does not support subscripting`)
      return items[Number(V.toNumber(numberArg(i))) - 1] ?? null
    }
    case 'list': {
      const out: unknown[] = []
      for (const x of e.expressions) {
        const v = evaluate(x, row, ctx)
        // A long IN list of literals arrives as one lifted parameter (parse.ts): spread it.
        if (v instanceof LiftedList) for (const item of v.values) out.push(item)
        else out.push(v)
      }
      return out
    }
    case 'unary': {
      const v = evaluate(e.operand, row, ctx)
      switch (e.op) {
        case 'NOT': {
          const t = truthy(v)
          return t === null ? null : !t
        }
        case '-': {
          if (v === null) return null
          if (D.isDatetime(v)) return datetimeNegate(v)
          return V.isNumeric(v) ? V.negate(v) : V.negate(V.promote(v, 0)?.a)
        }
        case '+': {
          return v === null ? null : V.isNumeric(v) ? v : V.promote(v, 0)?.a
        }
        case 'IS NULL': {
          return v === null || v === undefined
        }
        case 'IS NOT NULL': {
          return v !== null && v !== undefined
        }
        case 'IS TRUE': {
          return truthy(v) === true
        }
        case 'IS FALSE': {
          return truthy(v) === false
        }
        case 'IS NOT TRUE': {
          return truthy(v) !== true
        }
        case 'IS NOT FALSE': {
          return truthy(v) !== false
        }
      }
      break
    }
    case 'binary': {
      if (e.opSchema === DISTINCT_SCHEMA || e.opSchema === NOT_DISTINCT_SCHEMA) {
        const a = evaluate(e.left, row, ctx)
        const b = evaluate(e.right, row, ctx)
        // IS DISTINCT FROM: NULL is a value like any other, the answer is never NULL.
        const distinct = a === null || b === null ? a !== b : compare(a, b) !== 0
        return e.opSchema === DISTINCT_SCHEMA ? distinct : !distinct
      }
      return binary(e.op, e.left, e.right, row, ctx)
    }
    case 'ternary': {
      const v = evaluate(e.value, row, ctx)
      const lo = evaluate(e.lo, row, ctx)
      const hi = evaluate(e.hi, row, ctx)
      if (v === null || lo === null || hi === null) return null
      const inside = compare(v, lo) >= 0 && compare(v, hi) <= 0
      return e.op === 'BETWEEN' ? inside : !inside
    }
    case 'cast': {
      const v = evaluate(e.operand, row, ctx)
      if (e.to.kind === 'array') return castToArray(v, e.to.arrayOf.kind === 'array' ? 'text' : e.to.arrayOf.name)
      if (typeof v === 'string' && e.to.name.toLowerCase() === 'regclass') return regclassOid(v, ctx.session) ?? v
      return castTo(v, e.to.name, e.to.config)
    }
    case 'case': {
      const base = e.value ? evaluate(e.value, row, ctx) : undefined
      for (const w of e.whens) {
        if (e.value) {
          const c = evaluate(w.when, row, ctx)
          if (base !== null && c !== null && compare(base, c) === 0) return evaluate(w.value, row, ctx)
        } else if (truthy(evaluate(w.when, row, ctx)) === true) return evaluate(w.value, row, ctx)
      }
      return e.else ? evaluate(e.else, row, ctx) : null
    }
    case 'member': {
      let v = evaluate(e.operand, row, ctx)
      if (v instanceof V.JsonText || v instanceof V.Jsonb) v = v.value
      if (typeof v === 'string') {
        try {
          v = JSON.parse(v)
        } catch {
          return null
        }
      }
      if (v === null || typeof v !== 'object') return null
      const out = (v as Record<string | number, unknown>)[e.member]
      if (out === undefined) return null
      if (e.op === '->>') return out === null ? null : text(out)
      // `->` gives jsonb: a scalar keeps its JSON form ("x" with quotes, null as null).
      return out !== null && typeof out === 'object' && !(out instanceof V.Numeric) ? out : new V.Jsonb(out)
    }
    case 'keyword': {
      switch (e.keyword) {
        case 'current_schema': {
          return ctx.session.schema
        }
        case 'current_user':
        case 'session_user':
        case 'user':
        case 'current_role': {
          return ctx.session.user
        }
        case 'current_catalog': {
          return ctx.session.database
        }
        case 'current_timestamp':
        case 'localtimestamp': {
          return new D.PgTimestamp(nowOf(ctx), e.keyword === 'current_timestamp')
        }
        case 'current_date': {
          return D.toDate(new D.PgTimestamp(nowOf(ctx), true))
        }
        default: {
          throw unsupported(`keyword ${e.keyword}`)
        }
      }
    }
    case 'call': {
      return call(e, row, ctx)
    }
    case 'select':
    case 'union':
    case 'union all':
    case 'values':
    case 'with':
    case 'with recursive': {
      const r = subqueryResult(e, row, ctx)
      if ((r.columns?.length ?? 1) > 1) throw new SqlError('42601', 'subquery must return only one column')
      if (r.rows.length > 1) throw new SqlError('21000', 'more than one row returned by a subquery used as an expression')
      return r.rows[0]?.[0] ?? null
    }
    case 'extract': {
      const from = evaluate(e.from, row, ctx)
      if (untypedText(e.from, from)) throw new SqlError('42725', 'function pg_catalog.extract(unknown, unknown) is not unique')
      return extract(e.field.name, from)
    }
    default: {
      break
    }
  }
  throw unsupported(`expression of kind ${e.type}`)
}

/**
 * The operands of a chain of one boolean operator (`a OR b OR c ...`), found without recursion:
 * the parser nests them thousands deep, which must not exhaust the stack.
 */
export function flattenChain(e: Expr, op: 'AND' | 'OR'): Expr[] {
  const out: Expr[] = []
  const stack: Expr[] = [e]
  while (stack.length > 0) {
    const x = stack.pop() as Expr
    if (x.type === 'binary' && x.op === op) stack.push(x.right, x.left)
    else out.push(x)
  }
  return out
}

/** The values of an IN list: `IN ($1)` with a lifted list (parse.ts) parses as the bare parameter. */
export function listValues(v: unknown): unknown[] {
  if (v instanceof LiftedList) return v.values
  return Array.isArray(v) ? v : [v]
}

/** A constant IN list's values, with sets for the common all-numbers and all-strings cases. */
interface InLookup {
  items: unknown[]
  numbers?: Set<number>
  sawNull: boolean
  strings?: Set<string>
}

const IN_FAST_MIN = 16
const inLookups = new WeakMap<unknown[], Map<Expr, InLookup>>()

function inLookup(r: Expr, row: Row, ctx: EvalCtx): InLookup {
  // Only constant lists are cached, so the cache is asked first: checking a 3,000-value list for
  // constancy on every row cost as much as the lookup it saves.
  let byExpr = inLookups.get(ctx.params)
  const hit = byExpr?.get(r)
  if (hit) return hit
  const constant = r.type === 'parameter' || (r.type === 'list' && r.expressions.every((x) => x.type === 'parameter' || x.type === 'integer' || x.type === 'numeric' || x.type === 'string' || x.type === 'null'))
  // A lifted list is used as it is: spreading it into a list's value copied 100,000 items in one turn.
  const only = r.type === 'list' && r.expressions.length === 1 ? evaluate(r.expressions[0], row, ctx) : undefined
  const value = only instanceof LiftedList ? only : evaluate(r, row, ctx)
  const items = listValues(value)
  // A lifted literal list brings its set, built a slice at a time while it was lifted (parse.ts).
  const built = constant && value instanceof LiftedList && items.length >= IN_FAST_MIN && (value.numbers ?? value.strings)
  const lookup: InLookup = built ? {items, numbers: value.numbers, sawNull: false, strings: value.strings} : {items, sawNull: items.includes(null)}
  if (constant && items.length >= IN_FAST_MIN) {
    if (!built) {
      const present = items.filter((x) => x !== null)
      if (present.every((x) => typeof x === 'number' && Number.isFinite(x))) lookup.numbers = new Set(present as number[])
      else if (present.every((x) => typeof x === 'string')) lookup.strings = new Set(present as string[])
    }
    if (!byExpr) {
      byExpr = new Map()
      inLookups.set(ctx.params, byExpr)
    }
    byExpr.set(r, lookup)
  }
  return lookup
}

/**
 * A boolean chain's terms, flattened once per statement rather than once per row. A long OR chain
 * of `col = constant` on one column is `col IN (...)` and is looked up as one (issue 24: a
 * 3,000-term chain filtering 3,000 rows was 4.5M evaluations in one turn of the event loop).
 */
interface BoolChain {
  sameRef?: {list: Expr; ref: Expr}
  terms: Expr[]
}

const boolChains = new WeakMap<Expr, BoolChain>()

function boolChain(op: 'AND' | 'OR', l: Expr, r: Expr): BoolChain {
  // The left operand is unique to its binary node, so it keys the chain.
  let chain = boolChains.get(l)
  if (chain) return chain
  const terms = flattenChain({left: l, op, right: r, type: 'binary'}, op)
  chain = {terms}
  if (op === 'OR' && terms.length >= IN_FAST_MIN) {
    const constant = (x: Expr): boolean => x.type === 'parameter' || x.type === 'integer' || x.type === 'numeric' || x.type === 'string'
    const key = (x: Expr): string | undefined => (x.type === 'ref' ? `${x.table?.name ?? ''}.${x.name}` : undefined)
    let ref: Expr | undefined
    const values: Expr[] = []
    for (const t of terms) {
      if (t.type !== 'binary' || t.op !== '=') break
      const [col, value] = key(t.left) !== undefined && constant(t.right) ? [t.left, t.right] : key(t.right) !== undefined && constant(t.left) ? [t.right, t.left] : []
      if (!col || !value || (ref && key(ref) !== key(col))) break
      ref = col
      values.push(value)
    }
    if (ref && values.length === terms.length) chain.sameRef = {list: {expressions: values, type: 'list'}, ref}
  }
  boolChains.set(l, chain)
  return chain
}

/** IN-list equality; a value of another kind (a schemaless field's boolean against numbers) is just not equal. */
function sameValue(a: unknown, b: unknown): boolean {
  try {
    return compare(a, b) === 0
  } catch (error) {
    if (error instanceof SqlError && (error.code === '22P02' || error.code === '42883')) return false
    throw error
  }
}

function inList(op: string, a: unknown, lookup: InLookup): unknown {
  if (a === null) return null
  let found: boolean | undefined
  if (lookup.numbers) {
    const n = typeof a === 'number' ? a : typeof a === 'string' && a.trim() !== '' ? Number(a) : Number.NaN
    if (!Number.isNaN(n)) found = lookup.numbers.has(n)
  } else if (lookup.strings && typeof a === 'string') found = lookup.strings.has(a)
  if (found === undefined) {
    found = false
    for (const it of lookup.items) {
      if (it !== null && sameValue(a, it)) {
        found = true
        break
      }
    }
  }
  if (found) return op === 'IN'
  return lookup.sawNull ? null : op !== 'IN'
}

function binary(op: string, l: Expr, r: Expr, row: Row, ctx: EvalCtx): unknown {
  if (op === 'AND' || op === 'OR') {
    const chain = boolChain(op, l, r)
    if (chain.sameRef) {
      const a = evaluate(chain.sameRef.ref, row, ctx)
      return a === null ? null : inList('IN', a, inLookup(chain.sameRef.list, row, ctx))
    }
    // Three-valued logic over the whole chain, left to right, stopping at the deciding value.
    const decide = op === 'OR'
    let sawNull = false
    for (const x of chain.terms) {
      const v = truthy(evaluate(x, row, ctx))
      if (v === decide) return decide
      if (v === null) sawNull = true
    }
    return sawNull ? null : !decide
  }
  if (op === '@@') {
    if (ctx.ftsFromIndex) return true
    const a = evaluate(l, row, ctx)
    const b = evaluate(r, row, ctx)
    if (a === null || b === null) return null
    const hay = text(a).toLowerCase()
    return ftsTerms(text(b)).every((t) => hay.includes(t))
  }
  if (r.type === 'call' && (r.function.name === 'any' || r.function.name === 'all' || r.function.name === 'some') && !r.function.schema && COMPARISONS.has(op)) {
    if (isSubquery(r.args[0])) {
      const a = evaluate(l, row, ctx)
      const items = subqueryColumn(r.args[0], row, ctx)
      // Over no rows ANY is false and ALL true, even for NULL.
      if (items.length === 0) return r.function.name === 'all'
      return anyAll(op, a, new V.PgArray(items, elementOidOf(items)), r.function.name === 'all')
    }
    if (op === '=' && r.function.name !== 'all' && isConstArg(r.args[0])) {
      // `x = ANY($1)` with a constant array is an IN list: its items are read once per statement, not per row.
      const a = evaluate(l, row, ctx)
      return a === null ? null : anyLookup(r.args[0], a, row, ctx)
    }
    return anyAll(op, evaluate(l, row, ctx), evaluate(r.args[0], row, ctx), r.function.name === 'all')
  }
  const a = evaluate(l, row, ctx)
  if ((op === 'IN' || op === 'NOT IN') && isSubquery(r)) {
    const items = subqueryColumn(r, row, ctx)
    // x IN (empty subquery) is false even when x is NULL.
    if (items.length === 0) return op === 'NOT IN'
    if (a === null) return null
    return inList(op, a, {items, sawNull: items.includes(null)})
  }
  if (op === 'IN' || op === 'NOT IN') {
    if (a === null) return null
    return inList(op, a, inLookup(r, row, ctx))
  }
  const b = evaluate(r, row, ctx)
  // NULL || array and array || NULL are the array (array_cat ignores a NULL side).
  if (op === '||' && (a instanceof V.PgArray || b instanceof V.PgArray) && (a === null || b === null)) return a ?? b
  if (a === null || a === undefined || b === null || b === undefined) return null
  if (COMPARISONS.has(op)) {
    try {
      return comparison(op, a, b)
    } catch (error) {
      // A schemaless column may hold a string in one document and numbers in others: that
      // document's comparison is NULL (it does not match), the statement goes on.
      if (error instanceof SqlError && (error.code === '22P02' || error.code === '42883') && (schemaless(l, ctx) || schemaless(r, ctx))) return null
      throw error
    }
  }
  switch (op) {
    case '=': {
      return compare(a, b) === 0
    }
    case '!=':
    case '<>': {
      return compare(a, b) !== 0
    }
    case '<': {
      return compare(a, b) < 0
    }
    case '<=': {
      return compare(a, b) <= 0
    }
    case '>': {
      return compare(a, b) > 0
    }
    case '>=': {
      return compare(a, b) >= 0
    }
    case 'LIKE':
    case 'NOT LIKE':
    case 'ILIKE':
    case 'NOT ILIKE': {
      const m = likeToRe(text(b), op.includes('ILIKE')).test(text(a))
      return op.startsWith('NOT') ? !m : m
    }
    case '~':
    case '~*':
    case '!~':
    case '!~*': {
      let re: RegExp
      try {
        re = new RegExp(text(b), op.includes('*') ? 'i' : '')
      } catch {
        throw new SqlError('2201B', `invalid regular expression: ${text(b)}`)
      }
      const m = re.test(text(a))
      return op.startsWith('!') ? !m : m
    }
    case '||': {
      // array || array, array || element, element || array: PostgreSQL's array concatenation.
      if (a instanceof V.PgArray) return new V.PgArray(b instanceof V.PgArray ? [...a.items, ...b.items] : [...a.items, b], a.elementOid)
      if (b instanceof V.PgArray) return new V.PgArray([a, ...b.items], b.elementOid)
      return text(a) + text(b)
    }
    case '+':
    case '-':
    case '*':
    case '/':
    case '%': {
      if (typeof a === 'number' && typeof b === 'number' && op === '+' && Number.isInteger(a) && Number.isInteger(b)) {
        const s = a + b
        if (s >= -2_147_483_648 && s <= 2_147_483_647 && a >= -2_147_483_648 && a <= 2_147_483_647 && b >= -2_147_483_648 && b <= 2_147_483_647) return s
      }
      if (typeof a === 'object' || typeof b === 'object') {
        const dt = datetimeArith(op, a, b)
        if (dt !== undefined) return dt
      }
      if (typeof a === 'boolean' || typeof b === 'boolean') throw new SqlError('42883', `operator does not exist: ${V.typeNameOf(a)} ${op} ${V.typeNameOf(b)}`)
      if (!V.isNumeric(a) && !V.isNumeric(b)) throw new SqlError('42725', `operator is not unique: unknown ${op} unknown`)
      return V.arith(op, a, b)
    }
    case '^': {
      return new V.Float8(num(a) ** num(b))
    }
    case '@>':
    case '<@':
    case '&&': {
      return arrayContainment(op, a, b)
    }
    default: {
      throw unsupported(`operator ${op}`)
    }
  }
}

const COMPARISONS = new Set(['=', '!=', '<>', '<', '<=', '>', '>='])

/**
 * Array `@>` (contains), `<@` (is contained by) and `&&` (overlaps): elements compare by value and a
 * NULL element equals nothing, as in PostgreSQL. A text operand is read as an array literal;
 * jsonb containment is not implemented (0A000, never a wrong answer).
 */
function arrayContainment(op: string, a: unknown, b: unknown): boolean {
  const items = (v: unknown): unknown[] => {
    if (v instanceof V.PgArray) return v.items
    if (typeof v === 'string') return parseArrayText(v)
    throw unsupported(`operator ${op} on ${V.typeNameOf(v)}`)
  }
  const left = items(a)
  const right = items(b)
  const has = (list: unknown[], x: unknown): boolean => x !== null && list.some((y) => y !== null && compare(x, y) === 0)
  if (op === '&&') return left.some((x) => has(right, x))
  const [outer, inner] = op === '@>' ? [left, right] : [right, left]
  return inner.every((x) => has(outer, x))
}

function comparison(op: string, a: unknown, b: unknown): boolean {
  const c = compare(a, b)
  switch (op) {
    case '=': {
      return c === 0
    }
    case '<': {
      return c < 0
    }
    case '<=': {
      return c <= 0
    }
    case '>': {
      return c > 0
    }
    case '>=': {
      return c >= 0
    }
    default: {
      return c !== 0
    }
  }
}

/** Whether an operand is a column of a table without CREATE TABLE (its values' types vary per document). */
function schemaless(e: Expr, ctx: EvalCtx): boolean {
  if (e.type !== 'ref') return false
  const src = e.table ? ctx.sources.find((s) => s.alias === e.table?.name) : ctx.sources.find((s) => !s.columns || s.columns.includes(e.name))
  return Boolean(src && !src.columns)
}

/** A cast, with the type modifiers PostgreSQL applies: numeric(p,s) rounds to s, varchar(n) cuts, char(n) pads. */
export function castTo(v: unknown, name: string, config?: number[] | null): unknown {
  const to = name.toLowerCase()
  if (to === 'regclass' || to === 'regnamespace') return v
  if (isTimeOfDayType(to)) throw unsupported(`the ${to} type`)
  const oid = oidOfTypeName(to)
  if (v === null || v === undefined) return null
  if (oid === OID.regtype) return new V.RegType(text(v))
  if (oid === OID.json) {
    if (v instanceof V.JsonText) return v
    const t = text(v)
    return new V.JsonText(typeof v === 'string' ? t : V.jsonbText(v), coerce(t, OID.json))
  }
  if (oid === OID.jsonb) {
    const j = coerce(v, OID.jsonb)
    // Text read as jsonb keeps its numbers' digits and scale ('1.50'::jsonb is 1.50).
    const exact = typeof v === 'string' || v instanceof V.JsonText ? parseJsonbExact(text(v)) : j
    return exact !== null && typeof exact === 'object' && !(exact instanceof V.Numeric) ? exact : new V.Jsonb(exact)
  }
  if (oid === OID.bpchar) {
    const t = text(v).replace(/ +$/, '')
    const n = config?.[0] ?? 1
    const chars = [...t]
    return chars.length > n ? new V.BpChar(chars.slice(0, n).join(''), chars.slice(0, n).join('')) : new V.BpChar(t, t + ' '.repeat(n - chars.length))
  }
  if (oid === OID.date || oid === OID.timestamptz || oid === OID.timestamp || oid === OID.interval) {
    const dt = toDatetime(v, oid)
    return dt instanceof D.PgInterval && config?.length ? D.roundInterval(dt, config[0]) : dt
  }
  let out = typed(coerce(v, oid), oid)
  if (oid === OID.numeric && config?.length && out instanceof V.Numeric) {
    const scale = config[1] ?? 0
    out = new V.Numeric(out.v.decimalPlaces(scale, V.Dec.ROUND_HALF_UP), scale)
    if ((out as V.Numeric).v.abs().gte(new V.Dec(10).pow(config[0] - scale))) {
      throw new SqlError('22003', 'numeric field overflow', {detail: `A field with precision ${config[0]}, scale ${scale} must round to an absolute value less than 10^${config[0] - scale}.`})
    }
  }
  if (typeof out === 'string' && (oid === OID.varchar || oid === OID.bpchar)) {
    const n = config?.[0] ?? (oid === OID.bpchar ? 1 : undefined)
    if (n !== undefined) {
      const chars = [...out]
      out = chars.length > n ? chars.slice(0, n).join('') : oid === OID.bpchar ? out + ' '.repeat(n - chars.length) : out
    }
  }
  return out
}

/** upper/lower per character, as PostgreSQL's libc does: `ß` stays one letter. */
function caseMap(s: string, up: boolean): string {
  let out = ''
  for (const c of s) {
    const m = up ? c.toUpperCase() : c.toLowerCase()
    out += [...m].length === 1 ? m : c
  }
  return out
}

function call(e: ExprCall, row: Row, ctx: EvalCtx): unknown {
  const name = e.function.name.toLowerCase()
  // psql qualifies them (`pg_catalog.count(*)`).
  if (AGGREGATES.has(name) && (!e.function.schema || e.function.schema === 'pg_catalog')) return aggregate(name, e, ctx)
  if (e.over) throw unsupported('window functions are not supported')
  const args = () => e.args.map((a) => evaluate(a, row, ctx))
  if (name === 'exists' && !e.function.schema && e.args.length === 1 && isSubquery(e.args[0])) return subqueryResult(e.args[0], row, ctx).rows.length > 0
  switch (name) {
    case 'lower': {
      const [v] = args()
      return v === null ? null : caseMap(text(v), false)
    }
    case 'upper': {
      const [v] = args()
      return v === null ? null : caseMap(text(v), true)
    }
    case 'length':
    case 'char_length':
    case 'character_length': {
      const [v] = args()
      return v === null ? null : [...text(v)].length
    }
    case 'coalesce': {
      for (const a of e.args) {
        const v = evaluate(a, row, ctx)
        if (v !== null && v !== undefined) return v
      }
      return null
    }
    case 'nullif': {
      const [a, b] = args()
      return a !== null && b !== null && compare(a, b) === 0 ? null : a
    }
    case 'concat': {
      return args()
        .filter((v) => v !== null)
        .map(text)
        .join('')
    }
    case 'abs': {
      const [v] = args()
      return v === null ? null : V.abs(numberArg(v))
    }
    case 'round': {
      const [v, d] = args()
      if (v === null || d === null) return null
      return V.round(numberArg(v), d === undefined ? undefined : num(d))
    }
    case 'floor':
    case 'ceil':
    case 'ceiling': {
      const [v] = args()
      return v === null ? null : V.floorCeil(numberArg(v), name !== 'floor')
    }
    case 'trim':
    case 'btrim': {
      const [v, chars] = args()
      if (v === null || chars === null) return null
      if (chars === undefined) return text(v).replace(/^ +| +$/g, '')
      const set = new Set(text(chars))
      const cs = [...text(v)]
      let i = 0
      let j = cs.length
      while (i < j && set.has(cs[i])) i++
      while (j > i && set.has(cs[j - 1])) j--
      return cs.slice(i, j).join('')
    }
    case 'to_char': {
      const [v, f] = args()
      if (v === null || f === null || v === undefined || f === undefined) return null
      // PostgreSQL formats no infinite date or timestamp: NULL.
      if (v instanceof D.PgDate || v instanceof D.PgTimestamp) return v.finite ? toCharDatetime(v, text(f)) : null
      if (typeof v === 'number' || typeof v === 'bigint' || v instanceof V.Numeric || v instanceof V.Int8 || v instanceof V.Float8) return toCharNumber(v, text(f))
      throw unsupported(`to_char of ${V.typeNameOf(v)} (numbers, dates and timestamps only)`)
    }
    case 'pg_typeof': {
      const a0 = e.args[0]
      const declared = a0?.type === 'ref' ? declaredType(a0, ctx) : undefined
      const v = args()[0]
      return new V.RegType(declared ?? (a0?.type === 'string' || a0?.type === 'parameter' ? (typeof v === 'string' ? 'unknown' : V.typeNameOf(v)) : V.typeNameOf(v)))
    }
    case 'replace': {
      const [v, f, t] = args()
      return v === null ? null : text(v).replaceAll(text(f), text(t))
    }
    case 'substr':
    case 'substring': {
      const [v, from, len] = args()
      if (v === null) return null
      if (from === null || len === null) return null
      const chars = [...text(v)]
      // PostgreSQL counts from 1; a start before 1 still consumes length (substring('hello', 0, 3) is 'he').
      const first = num(from)
      if (len !== undefined && num(len) < 0) throw new SqlError('22011', 'negative substring length not allowed')
      const end = len === undefined ? chars.length : first + num(len) - 1
      return chars.slice(Math.max(0, first - 1), Math.max(0, end)).join('')
    }
    case 'now':
    case 'transaction_timestamp': {
      return new D.PgTimestamp(nowOf(ctx), true)
    }
    case 'statement_timestamp':
    case 'clock_timestamp': {
      return new D.PgTimestamp(D.currentUs(), true)
    }
    case 'version': {
      return `PostgreSQL 15.0 (toolkit svc ${ctx.session.version}) on Node.js ${process.version}`
    }
    case 'current_schema': {
      return ctx.session.schema
    }
    case 'current_database': {
      return ctx.session.database
    }
    case 'current_user':
    case 'session_user': {
      return ctx.session.user
    }
    case 'pg_backend_pid': {
      return process.pid
    }
    case 'to_tsquery':
    case 'plainto_tsquery':
    case 'websearch_to_tsquery':
    case 'phraseto_tsquery':
    case 'to_tsvector': {
      const a = args()
      return a.at(-1) ?? null
    }
    case 'json_build_object':
    case 'jsonb_build_object': {
      const a = args()
      if (a.length % 2 !== 0) throw new SqlError('22023', 'argument list must have even number of elements')
      const o: Record<string, unknown> = {}
      const parts: string[] = []
      for (let i = 0; i + 1 < a.length; i += 2) {
        if (a[i] === null) throw new SqlError('22023', 'null value not allowed for object key')
        o[text(a[i])] = jsonValue(a[i + 1])
        parts.push(`${JSON.stringify(text(a[i]))} : ${V.jsonText(a[i + 1])}`)
      }
      // json keeps the built text (`{"a" : 1}`); jsonb is the value, printed sorted.
      return name === 'json_build_object' ? new V.JsonText(`{${parts.join(', ')}}`, o) : o
    }
    case 'to_json': {
      const v = args()[0]
      return v === null ? null : new V.JsonText(V.jsonText(v), jsonValue(v))
    }
    case 'to_jsonb': {
      const v = args()[0]
      if (v === null) return null
      const j = jsonValue(v)
      return j !== null && typeof j === 'object' && !(j instanceof V.Numeric) ? j : new V.Jsonb(j)
    }
    case 'gen_random_uuid': {
      return globalThis.crypto.randomUUID()
    }
    case 'array_length': {
      const [a, dim] = args()
      if (a === null || dim === null) return null
      const items = arrayItems(a, name)
      return Number(V.toNumber(numberArg(dim))) === 1 && items.length > 0 ? items.length : null
    }
    case 'cardinality': {
      const [a] = args()
      return a === null ? null : arrayItems(a, name).length
    }
    case 'array_to_string': {
      const [a, sep, nullText] = args()
      if (a === null || sep === null) return null
      return arrayItems(a, name)
        .filter((x) => x !== null || (nullText !== undefined && nullText !== null))
        .map((x) => (x === null ? text(nullText) : text(x)))
        .join(text(sep))
    }
    case 'array_lower':
    case 'array_upper': {
      const [a, dim] = args()
      if (a === null || dim === null) return null
      const items = arrayItems(a, name)
      if (Number(V.toNumber(numberArg(dim))) !== 1 || items.length === 0) return null
      return name === 'array_lower' ? 1 : items.length
    }
    case 'array_position': {
      const [a, x] = args()
      if (a === null) return null
      const i = arrayItems(a, name).findIndex((y) => (x === null ? y === null : y !== null && sameValue(y, x)))
      return i < 0 ? null : i + 1
    }
    default: {
      if (isDatetimeFunction(name)) {
        // An untyped literal where a date, timestamp or interval goes fits several overloads.
        const which = name === 'age' || name.startsWith('justify') ? 0 : 1
        const vals = args()
        if ((name === 'date_trunc' || name === 'date_part' || name === 'age') && untypedText(e.args[which], vals[which])) {
          throw new SqlError('42725', `function ${name}(${e.args.map(() => 'unknown').join(', ')}) is not unique`)
        }
        return datetimeFunction(name, vals, () => nowOf(ctx))
      }
      if (ctx.setValues?.has(e)) return ctx.setValues.get(e)
      const fromCatalog = catalogFunction(name, args, ctx.session)
      if (fromCatalog !== NOT_CATALOG) return fromCatalog
      if (SET_FUNCTIONS.has(name)) throw new SqlError('0A000', `set-returning function ${name}() is not allowed here`, {hint: 'in the select list at the top of a SELECT, or in FROM'})
      throw new SqlError('42883', `function ${name}() does not exist`, {hint: 'see docs/svc-sql.md for the supported functions'})
    }
  }
}

function aggregate(name: string, e: ExprCall, ctx: EvalCtx): unknown {
  if (!ctx.group) throw new SqlError('42803', `aggregate functions are not allowed here`)
  let rows = ctx.group
  const inner: EvalCtx = {...ctx, group: undefined}
  if (e.filter) {
    const f = e.filter
    rows = rows.filter((r) => evaluate(f, r, inner) === true)
  }
  const star = e.args.length === 0 || (e.args[0].type === 'ref' && e.args[0].name === '*')
  if (name === 'count' && star) return new V.Int8(BigInt(rows.length))
  if (star) throw new SqlError('42883', `function ${name}(*) does not exist`)
  if (e.args.length === 0) throw new SqlError('42883', `function ${name}() does not exist`)
  if (e.orderBy?.length) rows = orderRows(rows, e.orderBy, inner)
  const all = rows.map((r) => evaluate(e.args[0], r, inner))
  let vals = all.filter((v) => v !== null && v !== undefined)
  if (e.distinct === 'distinct') {
    const seen = new Set<string>()
    vals = vals.filter((v) => {
      const k = JSON.stringify(v)
      if (seen.has(k)) return false
      seen.add(k)
      return true
    })
  }
  switch (name) {
    case 'count': {
      return new V.Int8(BigInt(vals.length))
    }
    case 'sum':
    case 'avg': {
      if (vals.length > 0 && vals.every((v) => v instanceof D.PgInterval)) {
        const total = (vals as D.PgInterval[]).reduce((t, v) => D.intervalAdd(t, v))
        return name === 'sum' ? total : D.intervalDiv(total, vals.length)
      }
      if (vals.some((v) => typeof v === 'string' || typeof v === 'boolean')) {
        throw new SqlError('42883', `function ${name}(${V.typeNameOf(vals.find((v) => !V.isNumeric(v)))}) does not exist`)
      }
      return name === 'sum' ? V.sum(vals) : V.avg(vals)
    }
    case 'min': {
      return vals.length === 0 ? null : vals.reduce((m, v) => (compareMixed(v, m) < 0 ? v : m))
    }
    case 'max': {
      return vals.length === 0 ? null : vals.reduce((m, v) => (compareMixed(v, m) > 0 ? v : m))
    }
    case 'string_agg': {
      const sep = e.args[1] ? text(evaluate(e.args[1], rows[0] ?? {}, inner)) : ','
      return vals.length === 0 ? null : vals.map(text).join(sep)
    }
    case 'array_agg': {
      return rows.length === 0 ? null : new V.PgArray(e.distinct === 'distinct' ? vals : all, inferOid(vals))
    }
    case 'json_agg': {
      const items = e.distinct === 'distinct' ? vals : all
      return rows.length === 0 ? null : new V.JsonText(`[${items.map((v) => V.jsonText(v)).join(', ')}]`, items.map(jsonValue))
    }
    case 'jsonb_agg': {
      return rows.length === 0 ? null : (e.distinct === 'distinct' ? vals : all).map(jsonValue)
    }
    case 'bool_and': {
      return vals.length === 0 ? null : vals.every((v) => truthy(v))
    }
    case 'bool_or': {
      return vals.length === 0 ? null : vals.some((v) => truthy(v))
    }
    default: {
      throw unsupported(`aggregate ${name}`)
    }
  }
}

/** `time` and `timetz` have no values in svc yet: refused (0A000) rather than answered as text. */
export function isTimeOfDayType(name: string): boolean {
  return /^(pg_catalog\.)?(time|timetz|time with(out)? time zone)$/i.test(name.trim())
}

/** The type of `date ± int`, `timestamp ± interval`, `date ± interval` when no row tells (an empty result). */
function datetimeArithOid(op: string, a: number | undefined, b: number | undefined): number | undefined {
  const ints = new Set<number>([OID.int2, OID.int4, OID.int8])
  if (a === OID.date && b !== undefined && ints.has(b)) return OID.date
  if (a === OID.date && b === OID.date && op === '-') return OID.int4
  if ((a === OID.timestamp || a === OID.timestamptz) && b === OID.interval) return a
  if (a === OID.date && b === OID.interval) return OID.timestamp
  if (a === OID.interval && b === OID.interval) return OID.interval
  return undefined
}

/** The name PostgreSQL gives an unaliased select-list expression. */
export function columnName(e: Expr): string {
  switch (e.type) {
    case 'ref': {
      return e.name
    }
    case 'call': {
      const n = e.function.name.toLowerCase()
      return n === 'trim' ? 'btrim' : n
    }
    case 'cast': {
      if (e.operand.type === 'ref' || e.operand.type === 'call') return columnName(e.operand)
      if (e.to.kind === 'array') return e.operand.type === 'array' ? 'array' : castColumnName(e.to.arrayOf.kind === 'array' ? 'text' : e.to.arrayOf.name)
      return castColumnName(e.to.name)
    }
    case 'member': {
      return '?column?'
    }
    case 'keyword': {
      return e.keyword
    }
    case 'case': {
      return 'case'
    }
    case 'extract': {
      return 'extract'
    }
    case 'array': {
      return 'array'
    }
    case 'arrayIndex': {
      // `tags[1]` is named `tags`; `(ARRAY[1, 2])[1]` is `array`.
      return e.array.type === 'ref' ? e.array.name : 'array'
    }
    case 'select': {
      // PostgreSQL names a scalar subquery's column after the subquery's own first column.
      const first = e.columns?.[0]
      return first ? (first.alias?.name ?? columnName(first.expr)) : '?column?'
    }
    default: {
      return '?column?'
    }
  }
}

/** Sorts a group's rows by an aggregate's own ORDER BY (`string_agg(x, ',' ORDER BY x)`). */
function orderRows(rows: Row[], orderBy: NonNullable<ExprCall['orderBy']>, ctx: EvalCtx): Row[] {
  const keyed = rows.map((r) => ({keys: orderBy.map((o) => evaluate(o.by, r, ctx)), r}))
  keyed.sort((a, b) => {
    for (const [i, o] of orderBy.entries()) {
      const x = a.keys[i]
      const y = b.keys[i]
      const desc = o.order === 'DESC'
      const nullsFirst = o.nulls ? o.nulls === 'FIRST' : desc
      if (x === null && y === null) continue
      if (x === null) return nullsFirst ? -1 : 1
      if (y === null) return nullsFirst ? 1 : -1
      const c = compareMixed(x, y)
      if (c !== 0) return desc ? -c : c
    }
    return 0
  })
  return keyed.map((k) => k.r)
}

const KIND_RANK = (v: unknown): number => (V.isNumeric(v) ? 0 : typeof v === 'string' ? 1 : typeof v === 'boolean' ? 2 : 3)

/**
 * Order of values that may be of different kinds (a schemaless column): numbers before text
 * before booleans before JSON, then by value. Same-kind values compare as PostgreSQL does.
 */
export function compareMixed(a: unknown, b: unknown): number {
  const ra = KIND_RANK(a)
  const rb = KIND_RANK(b)
  if (ra !== rb) return ra - rb
  try {
    return compare(a, b)
  } catch {
    return text(a) < text(b) ? -1 : text(a) > text(b) ? 1 : 0
  }
}

/** A SQL value as the JSON it becomes inside json/jsonb. */
function jsonValue(v: unknown): unknown {
  if (v instanceof V.JsonText || v instanceof V.Jsonb) return v.value
  if (v instanceof V.BpChar) return v.padded
  // A numeric keeps its digits and scale inside json (to_jsonb(1.50) is 1.50), as in PostgreSQL.
  if (v instanceof V.Numeric) return v
  if (v instanceof V.Int8 || v instanceof V.Float8) return V.toNumber(v)
  if (v instanceof V.PgArray) return v.items.map(jsonValue)
  return v
}

/** A numeric function's argument: numbers as they are, a text literal read as numeric. */
function numberArg(v: unknown): unknown {
  if (V.isNumeric(v)) return v
  if (typeof v === 'string') return V.Numeric.parse(v)
  throw new SqlError('42883', `function does not exist for type ${V.typeNameOf(v)}`)
}

/** The declared type name of a column reference (for pg_typeof of a NULL column value). */
function declaredType(e: Expr, ctx: EvalCtx): string | undefined {
  if (e.type !== 'ref') return undefined
  const oid = ctx.sources.find((s) => (e.table ? s.alias === e.table.name : s.columns?.includes(e.name)))?.oids?.[e.name]
  return oid === undefined ? undefined : typeName(oid)
}

const BOOL_OPS = new Set(['=', '!=', '<>', '<', '<=', '>', '>=', 'AND', 'OR', 'IN', 'NOT IN', 'LIKE', 'NOT LIKE', 'ILIKE', 'NOT ILIKE', '~', '~*', '!~', '!~*', '@@', '@>', '<@', '&&'])
const TEXT_FUNCS = new Set(['lower', 'upper', 'trim', 'btrim', 'replace', 'substr', 'substring', 'concat', 'string_agg', 'version', 'current_database', 'current_user', 'session_user'])

/**
 * The type of an expression known without evaluating it, for a result column whose values are
 * all NULL (PostgreSQL still reports `boolean` for `NULL = 1`, `bigint` for an empty `sum(int)`).
 */
export function staticOid(e: Expr, columnOid: (table: string | undefined, name: string) => number | undefined, params?: unknown[]): number | undefined {
  switch (e.type) {
    case 'integer': {
      return Math.abs(e.value) <= 2_147_483_647 ? OID.int4 : OID.int8
    }
    case 'numeric': {
      return OID.numeric
    }
    case 'string': {
      return OID.text
    }
    case 'parameter': {
      // Literals are lifted into parameters (parse.ts): their values tell their types.
      const v = params?.[Number(e.name.slice(1)) - 1]
      return v === null || v === undefined ? undefined : inferOid([v])
    }
    case 'ref': {
      return columnOid(e.table?.name, e.name)
    }
    case 'cast': {
      return e.to.kind === 'array' ? (e.to.arrayOf.kind === 'array' ? undefined : arrayOid(oidOfTypeName(e.to.arrayOf.name))) : oidOfTypeName(e.to.name)
    }
    case 'binary': {
      if (BOOL_OPS.has(e.op)) return OID.bool
      if (e.op === '+' || e.op === '-') return datetimeArithOid(e.op, staticOid(e.left, columnOid, params), staticOid(e.right, columnOid, params))
      if (e.op !== '||') return undefined
      for (const side of [e.left, e.right]) {
        const oid = staticOid(side, columnOid, params)
        if (oid !== undefined && ARRAY_ELEMENT[oid] !== undefined) return oid
      }
      return OID.text
    }
    case 'unary': {
      return e.op === '-' || e.op === '+' ? staticOid(e.operand, columnOid, params) : OID.bool
    }
    case 'arrayIndex': {
      const array = staticOid(e.array, columnOid, params)
      return array === undefined ? undefined : ARRAY_ELEMENT[array]
    }
    case 'ternary':
    case 'boolean': {
      return OID.bool
    }
    case 'extract': {
      return OID.numeric
    }
    case 'keyword': {
      return e.keyword === 'current_date' ? OID.date : e.keyword === 'current_timestamp' ? OID.timestamptz : e.keyword === 'localtimestamp' ? OID.timestamp : undefined
    }
    case 'member': {
      return e.op === '->' ? OID.jsonb : OID.text
    }
    case 'call': {
      const name = e.function.name.toLowerCase()
      const arg = e.args[0] ? staticOid(e.args[0], columnOid, params) : undefined
      if (TEXT_FUNCS.has(name)) return OID.text
      switch (name) {
        case 'count': {
          return OID.int8
        }
        case 'isfinite': {
          return OID.bool
        }
        case 'generate_series': {
          return arg === OID.int8 || arg === OID.numeric ? arg : OID.int4
        }
        case 'unnest': {
          return arg === undefined ? undefined : ARRAY_ELEMENT[arg]
        }
        case 'jsonb_array_elements': {
          return OID.jsonb
        }
        case 'jsonb_array_elements_text':
        case 'jsonb_object_keys': {
          return OID.text
        }
        case 'length':
        case 'char_length':
        case 'character_length': {
          return OID.int4
        }
        case 'sum': {
          return arg === OID.int4 || arg === OID.int2 ? OID.int8 : arg === OID.float8 || arg === OID.float4 ? OID.float8 : arg === undefined ? undefined : OID.numeric
        }
        case 'avg': {
          return arg === OID.float8 || arg === OID.float4 ? OID.float8 : arg === undefined ? undefined : OID.numeric
        }
        case 'min':
        case 'max':
        case 'abs':
        case 'coalesce':
        case 'nullif': {
          return arg
        }
        case 'bool_and':
        case 'bool_or': {
          return OID.bool
        }
        case 'json_agg':
        case 'json_build_object':
        case 'to_json': {
          return OID.json
        }
        case 'jsonb_agg':
        case 'jsonb_build_object':
        case 'to_jsonb': {
          return OID.jsonb
        }
        case 'current_schema': {
          return OID.name
        }
        case 'date_part': {
          return OID.float8
        }
        case 'age':
        case 'justify_days':
        case 'justify_hours':
        case 'justify_interval':
        case 'make_interval': {
          return OID.interval
        }
        case 'now':
        case 'transaction_timestamp':
        case 'statement_timestamp':
        case 'clock_timestamp':
        case 'to_timestamp': {
          return OID.timestamptz
        }
        case 'make_date': {
          return OID.date
        }
        case 'make_timestamp': {
          return OID.timestamp
        }
        case 'date_trunc': {
          const a1 = e.args[1] ? staticOid(e.args[1], columnOid, params) : undefined
          return a1 === OID.interval || a1 === OID.timestamp ? a1 : OID.timestamptz
        }
        default: {
          return undefined
        }
      }
    }
    default: {
      return undefined
    }
  }
}

/** The transaction's (or statement's) start time: now() is the same for every row and statement of a transaction. */
function nowOf(ctx: EvalCtx): bigint {
  return ctx.session.now ?? D.currentUs()
}

/** A string literal (lifted into a parameter by parse.ts) or an untyped text parameter: PostgreSQL's `unknown`. */
function untypedText(e: Expr | undefined, v: unknown): boolean {
  return (e?.type === 'string' || e?.type === 'parameter') && typeof v === 'string'
}

/** An array literal's element type: the common type of its elements (text when none has a type). */
function elementOidOf(items: unknown[]): number {
  const present = items.filter((x) => x !== null && x !== undefined)
  if (present.length > 0 && present.every((x) => typeof x === 'string')) return OID.text
  return inferOid(present, OID.text)
}

function arrayItems(a: unknown, fn: string): unknown[] {
  if (a instanceof V.PgArray) return a.items
  if (Array.isArray(a)) return a
  if (typeof a === 'string') return parseArrayText(a)
  throw new SqlError('42883', `function ${fn}(${V.typeNameOf(a)}) does not exist`)
}

/** A cast to `type[]`: each element converted to the element type. */
function castToArray(v: unknown, elementName: string): unknown {
  if (v === null || v === undefined) return null
  const items = v instanceof V.PgArray ? v.items : Array.isArray(v) ? v : parseArrayText(text(v))
  const oid = oidOfTypeName(elementName)
  return new V.PgArray(items.map((x) => (x === null ? null : castTo(x, elementName))), oid)
}

/** A constant `ANY` argument: a parameter or literal, possibly cast (`$1::int[]`). */
export function isConstArg(e: Expr | undefined): boolean {
  return e !== undefined && (e.type === 'parameter' || e.type === 'string' || (e.type === 'cast' && isConstArg(e.operand)))
}

/** The items of a constant array for `= ANY`, with the `:max-in-values` cap of IN lists (54001). */
export function anyItems(arg: Expr, row: Row, ctx: EvalCtx): unknown[] | null {
  const a = evaluate(arg, row, ctx)
  if (a === null) return null
  const items = arrayItems(a, 'any')
  const max = ctx.session.maxInValues ?? DEFAULT_MAX_IN_VALUES
  if (items.length > max) throw tooManyValues(max, 'an = ANY array')
  return items
}

const anyLookups = new WeakMap<unknown[], Map<Expr, (a: unknown) => boolean | null>>()

/** The membership test of a constant `= ANY` array; it yields every 256 items so a caller can pause. */
function* anyTestSteps(items: unknown[] | null): Generator<void, (a: unknown) => boolean | null> {
  if (items === null) return () => null
  const present: unknown[] = []
  // Text items (node-postgres sends arrays as `{1,2}`) match numbers by value and text by text.
  const numbers = new Set<number>()
  const strings = new Set<string>()
  let plain = true
  for (const [i, x] of items.entries()) {
    if (i % 256 === 255) yield
    if (x === null) continue
    present.push(x)
    if (typeof x === 'number') numbers.add(x)
    else if (typeof x === 'string') {
      strings.add(x)
      const n = Number(x)
      if (x.trim() !== '' && Number.isFinite(n)) numbers.add(n)
    } else plain = false
  }
  const sawNull = present.length < items.length
  return (v) => {
    let hit: boolean
    if (plain && typeof v === 'number') hit = numbers.has(v)
    else if (plain && typeof v === 'string') hit = strings.has(v)
    else hit = present.some((y) => comparison('=', v, y))
    return hit ? true : sawNull ? null : false
  }
}

function rememberAny(arg: Expr, ctx: EvalCtx, test: (a: unknown) => boolean | null): void {
  let byExpr = anyLookups.get(ctx.params)
  if (!byExpr) {
    byExpr = new Map()
    anyLookups.set(ctx.params, byExpr)
  }
  byExpr.set(arg, test)
}

function anyLookup(arg: Expr, a: unknown, row: Row, ctx: EvalCtx): boolean | null {
  let test = anyLookups.get(ctx.params)?.get(arg)
  if (!test) {
    const steps = anyTestSteps(anyItems(arg, row, ctx))
    let r = steps.next()
    while (!r.done) r = steps.next()
    test = r.value
    rememberAny(arg, ctx, test)
  }
  return test(a)
}

/**
 * Reads a constant `= ANY` array and builds its membership test in slices of the event loop, for
 * the planner to call before the rows are filtered: a 100,000-element array parameter took
 * 30-100 ms to read and as long again to build its sets, each in one turn (issue 24).
 */
export async function prepareAny(arg: Expr, ctx: EvalCtx, cancel?: Cancellable): Promise<void> {
  if (!isConstArg(arg) || anyLookups.get(ctx.params)?.has(arg)) return
  const a = evaluate(arg, {}, ctx)
  if (typeof a === 'string') await parseArrayTextSliced(a, cancel)
  const steps = anyTestSteps(anyItems(arg, {}, ctx))
  let r = steps.next()
  while (!r.done) {
    await pause(cancel)
    r = steps.next()
  }
  rememberAny(arg, ctx, r.value)
}

/** `x op ANY(array)` / `x op ALL(array)` with SQL's NULL rules. */
function anyAll(op: string, x: unknown, a: unknown, all: boolean): boolean | null {
  if (x === null || a === null) return null
  let sawNull = false
  for (const y of arrayItems(a, all ? 'all' : 'any')) {
    if (y === null) {
      sawNull = true
      continue
    }
    const hit = comparison(op, x, y)
    if (hit !== all) return !all
  }
  return sawNull ? null : all
}
