/** Expression evaluation for the SQL subset: three-valued logic, PostgreSQL-like coercions. */
import type {Expr, ExprCall} from 'pgsql-ast-parser'

import {SqlError, unsupported} from './errors.js'
import {LiftedList} from './parse.js'
import {coerce, oidOfTypeName} from './types.js'

export type RowObj = Record<string, unknown>
/** One row of a FROM clause: the object of each source, by alias (null on the outer side of a LEFT JOIN). */
export type Row = Record<string, RowObj | null>

export interface SourceInfo {
  alias: string
  /** Declared columns (CREATE TABLE), or undefined for a schemaless table. */
  columns?: string[]
}

export interface SessionInfo {
  database: string
  schema: string
  user: string
  version: string
}

export interface EvalCtx {
  /** Rows of the current group, when evaluating aggregates. */
  group?: Row[]
  /** Output values by alias, for ORDER BY on a select-list alias. */
  outputs?: Map<string, unknown>
  params: unknown[]
  session: SessionInfo
  sources: SourceInfo[]
  /** Set when the rows already come from the full-text index, so `@@` predicates hold. */
  ftsFromIndex?: boolean
}

export const AGGREGATES = new Set(['count', 'sum', 'avg', 'min', 'max', 'string_agg', 'array_agg', 'bool_and', 'bool_or', 'json_agg', 'jsonb_agg'])

export function isAggregate(e: Expr | null | undefined): boolean {
  if (!e || typeof e !== 'object') return false
  if (e.type === 'call') {
    if (AGGREGATES.has(e.function.name.toLowerCase()) && !e.function.schema) return true
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
  for (const s of ctx.sources) {
    const obj = row[s.alias]
    if (obj && name in obj) return obj[name] ?? null
  }
  if (ctx.outputs?.has(name)) return ctx.outputs.get(name)
  if (ctx.sources.length > 0 && ctx.sources.every((s) => s.columns && !s.columns.includes(name))) {
    throw new SqlError('42703', `column "${name}" does not exist`)
  }
  if (ctx.sources.length === 0) throw new SqlError('42703', `column "${name}" does not exist`)
  return null
}

function num(v: unknown, what = 'numeric'): number {
  if (typeof v === 'number') return v
  if (typeof v === 'boolean') return v ? 1 : 0
  if (typeof v === 'string' && v.trim() !== '' && !Number.isNaN(Number(v))) return Number(v)
  throw new SqlError('22P02', `invalid input syntax for type ${what}: "${typeof v === 'string' ? v : JSON.stringify(v)}"`)
}

/** Comparison with PostgreSQL's implicit coercions: a numeric string compares as a number. */
export function compare(a: unknown, b: unknown): number {
  if (typeof a === 'number' || typeof b === 'number') {
    const x = num(a, typeof a === 'number' ? (Number.isInteger(a) ? 'integer' : 'double precision') : 'numeric')
    const y = num(b, typeof b === 'number' ? (Number.isInteger(b) ? 'integer' : 'double precision') : 'numeric')
    return x < y ? -1 : x > y ? 1 : 0
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
  return typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v)
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
    case 'integer':
    case 'numeric':
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
    case 'list':
    case 'array': {
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
          // A bigint literal beyond 2^53 stays exact digits (the normaliser lifts it as text).
          if (typeof v === 'string' && /^\d{16,19}$/.test(v) && !Number.isSafeInteger(Number(v))) return `-${v}`
          return v === null ? null : -num(v)
        }
        case '+': {
          return v === null ? null : num(v)
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
      const to = e.to.kind === 'array' ? 'text' : e.to.name
      if (to === 'regclass' || to === 'regtype' || to === 'regnamespace') return v
      return coerce(v, oidOfTypeName(to))
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
      return e.op === '->>' ? (out === null ? null : text(out)) : out
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
          return new Date().toISOString()
        }
        case 'current_date': {
          return new Date().toISOString().slice(0, 10)
        }
        default: {
          throw unsupported(`keyword ${e.keyword}`)
        }
      }
    }
    case 'call': {
      return call(e, row, ctx)
    }
    default: {
      break
    }
  }
  throw unsupported(`expression of kind ${e.type}${e.type === 'select' || e.type === 'union' ? ' (subqueries are not supported)' : ''}`)
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
  const constant = r.type === 'parameter' || (r.type === 'list' && r.expressions.every((x) => x.type === 'parameter' || x.type === 'integer' || x.type === 'numeric' || x.type === 'string' || x.type === 'null'))
  let byExpr = constant ? inLookups.get(ctx.params) : undefined
  const hit = byExpr?.get(r)
  if (hit) return hit
  const items = listValues(evaluate(r, row, ctx))
  const lookup: InLookup = {items, sawNull: items.includes(null)}
  if (constant && items.length >= IN_FAST_MIN) {
    const present = items.filter((x) => x !== null)
    if (present.every((x) => typeof x === 'number' && Number.isFinite(x))) lookup.numbers = new Set(present as number[])
    else if (present.every((x) => typeof x === 'string')) lookup.strings = new Set(present as string[])
    if (!byExpr) {
      byExpr = new Map()
      inLookups.set(ctx.params, byExpr)
    }
    byExpr.set(r, lookup)
  }
  return lookup
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
      if (it !== null && compare(a, it) === 0) {
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
    // Three-valued logic over the whole chain, left to right, stopping at the deciding value.
    const decide = op === 'OR'
    let sawNull = false
    for (const x of flattenChain({left: l, op, right: r, type: 'binary'}, op)) {
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
  const a = evaluate(l, row, ctx)
  if (op === 'IN' || op === 'NOT IN') {
    if (a === null) return null
    return inList(op, a, inLookup(r, row, ctx))
  }
  const b = evaluate(r, row, ctx)
  if (a === null || a === undefined || b === null || b === undefined) return null
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
      return text(a) + text(b)
    }
    case '+':
    case '-':
    case '*': {
      const exact = integerArith(op, a, b)
      if (exact !== undefined) return exact
      const x = num(a)
      const y = num(b)
      return op === '+' ? x + y : op === '-' ? x - y : x * y
    }
    case '/': {
      const d = num(b)
      if (d === 0) throw new SqlError('22012', 'division by zero')
      const q = num(a) / d
      return Number.isInteger(num(a)) && Number.isInteger(d) ? Math.trunc(q) : q
    }
    case '%': {
      const d = num(b)
      if (d === 0) throw new SqlError('22012', 'division by zero')
      return num(a) % d
    }
    default: {
      throw unsupported(`operator ${op}`)
    }
  }
}

function call(e: ExprCall, row: Row, ctx: EvalCtx): unknown {
  const name = e.function.name.toLowerCase()
  if (AGGREGATES.has(name) && !e.function.schema) return aggregate(name, e, ctx)
  if (e.over) throw unsupported('window functions are not supported')
  const args = () => e.args.map((a) => evaluate(a, row, ctx))
  switch (name) {
    case 'lower': {
      const [v] = args()
      return v === null ? null : text(v).toLowerCase()
    }
    case 'upper': {
      const [v] = args()
      return v === null ? null : text(v).toUpperCase()
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
      return v === null ? null : Math.abs(num(v))
    }
    case 'round': {
      const [v, d] = args()
      if (v === null) return null
      const p = 10 ** (d === undefined || d === null ? 0 : num(d))
      return Math.round(num(v) * p) / p
    }
    case 'floor': {
      const [v] = args()
      return v === null ? null : Math.floor(num(v))
    }
    case 'ceil':
    case 'ceiling': {
      const [v] = args()
      return v === null ? null : Math.ceil(num(v))
    }
    case 'trim':
    case 'btrim': {
      const [v] = args()
      return v === null ? null : text(v).trim()
    }
    case 'replace': {
      const [v, f, t] = args()
      return v === null ? null : text(v).replaceAll(text(f), text(t))
    }
    case 'substr':
    case 'substring': {
      const [v, from, len] = args()
      if (v === null) return null
      const chars = [...text(v)]
      const start = Math.max(0, num(from) - 1)
      return chars.slice(start, len === undefined || len === null ? undefined : start + num(len)).join('')
    }
    case 'now':
    case 'statement_timestamp':
    case 'transaction_timestamp':
    case 'clock_timestamp': {
      return new Date().toISOString()
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
      const o: Record<string, unknown> = {}
      for (let i = 0; i + 1 < a.length; i += 2) o[text(a[i])] = a[i + 1]
      return o
    }
    case 'to_json':
    case 'to_jsonb': {
      return args()[0]
    }
    case 'gen_random_uuid': {
      return globalThis.crypto.randomUUID()
    }
    case 'pg_table_is_visible':
    case 'has_table_privilege':
    case 'has_schema_privilege': {
      return true
    }
    case 'pg_get_userbyid': {
      return ctx.session.user
    }
    case 'format_type': {
      return 'text'
    }
    default: {
      throw new SqlError('42883', `function ${name}() does not exist`, {hint: 'see docs/svc-sql.md for the supported functions'})
    }
  }
}

function aggregate(name: string, e: ExprCall, ctx: EvalCtx): unknown {
  if (!ctx.group) throw new SqlError('42803', `aggregate functions are not allowed here`)
  const rows = ctx.group
  const inner: EvalCtx = {...ctx, group: undefined}
  const star = e.args.length === 0 || (e.args[0].type === 'ref' && e.args[0].name === '*')
  if (name === 'count' && star) return rows.length
  if (e.args.length === 0) throw new SqlError('42883', `function ${name}() does not exist`)
  let vals = rows.map((r) => evaluate(e.args[0], r, inner)).filter((v) => v !== null && v !== undefined)
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
      return vals.length
    }
    case 'sum': {
      return vals.length === 0 ? null : vals.reduce((s: number, v) => s + num(v), 0)
    }
    case 'avg': {
      return vals.length === 0 ? null : vals.reduce((s: number, v) => s + num(v), 0) / vals.length
    }
    case 'min': {
      return vals.length === 0 ? null : vals.reduce((m, v) => (compare(v, m) < 0 ? v : m))
    }
    case 'max': {
      return vals.length === 0 ? null : vals.reduce((m, v) => (compare(v, m) > 0 ? v : m))
    }
    case 'string_agg': {
      const sep = e.args[1] ? text(evaluate(e.args[1], rows[0] ?? {}, inner)) : ','
      return vals.length === 0 ? null : vals.map(text).join(sep)
    }
    case 'array_agg':
    case 'json_agg':
    case 'jsonb_agg': {
      return vals
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

/** The name PostgreSQL gives an unaliased select-list expression. */
export function columnName(e: Expr): string {
  switch (e.type) {
    case 'ref': {
      return e.name
    }
    case 'call': {
      return e.function.name.toLowerCase()
    }
    case 'cast': {
      return e.operand.type === 'ref' || e.operand.type === 'call' ? columnName(e.operand) : e.to.kind === 'array' ? 'array' : e.to.name
    }
    case 'member': {
      return typeof e.member === 'string' ? e.member : '?column?'
    }
    case 'keyword': {
      return e.keyword
    }
    case 'case': {
      return 'case'
    }
    default: {
      return '?column?'
    }
  }
}

const INT8_MAX = 9_223_372_036_854_775_807n

/** An integer operand: a safe integer, or the exact digits svc keeps for a bigint beyond 2^53. */
function exactInt(v: unknown): bigint | undefined {
  if (typeof v === 'number') return Number.isSafeInteger(v) ? BigInt(v) : undefined
  if (typeof v === 'string' && /^-?\d{16,19}$/.test(v) && !Number.isSafeInteger(Number(v))) return BigInt(v)
  return undefined
}

/**
 * Integer + - * beyond 2^53 computed exactly, as PostgreSQL's bigint does: the result keeps its
 * digits, and past the signed 64-bit range it is 22003 instead of a rounded double.
 */
function integerArith(op: '*' | '+' | '-', a: unknown, b: unknown): number | string | undefined {
  if (typeof a === 'number' && typeof b === 'number' && Number.isSafeInteger(a) && Number.isSafeInteger(b)) {
    const r = op === '+' ? a + b : op === '-' ? a - b : a * b
    if (Number.isSafeInteger(r)) return r
  }
  const x = exactInt(a)
  const y = exactInt(b)
  if (x === undefined || y === undefined) return undefined
  const r = op === '+' ? x + y : op === '-' ? x - y : x * y
  if (r > INT8_MAX || r < -INT8_MAX - 1n) throw new SqlError('22003', 'bigint out of range')
  const n = Number(r)
  return Number.isSafeInteger(n) ? n : r.toString()
}
