/**
 * Set-returning functions in the select list (`SELECT generate_series(1, 3)`, `SELECT id,
 * unnest(tags) FROM t`), with PostgreSQL 10+'s rule: each input row gives as many rows as its
 * longest call returns, shorter calls padded with NULL; a row whose calls all return nothing gives
 * no row. The calls are found once per parsed statement.
 */
import type {Expr, ExprCall, SelectedColumn} from 'pgsql-ast-parser'

import {unsupported, SqlError} from './errors.js'
import {AGGREGATES, evaluate, type EvalCtx, type Row} from './eval.js'
import {callSetFunction, MAX_SET_ROWS, SET_FUNCTIONS} from './set-functions.js'

const SUBQUERY_KINDS = new Set(['select', 'union', 'union all', 'values', 'with', 'with recursive'])
const found = new WeakMap<object, ExprCall[]>()

/** The set-returning calls of a select list (not inside subqueries or aggregates, which refuse them when evaluated). */
export function setCallsIn(columns: SelectedColumn[] | null | undefined): ExprCall[] {
  if (!columns) return []
  let calls = found.get(columns)
  if (!calls) {
    calls = []
    collect(columns, calls, false)
    found.set(columns, calls)
  }
  return calls
}

function collect(e: unknown, out: ExprCall[], inside: boolean): void {
  if (!e || typeof e !== 'object') return
  if (Array.isArray(e)) {
    for (const x of e) collect(x, out, inside)
    return
  }
  const node = e as {type?: unknown}
  if (typeof node.type === 'string' && SUBQUERY_KINDS.has(node.type)) return
  if (node.type === 'call') {
    const call = e as ExprCall
    const name = call.function.name.toLowerCase()
    if ((!call.function.schema || call.function.schema === 'pg_catalog') && AGGREGATES.has(name)) return
    if (!call.function.schema && name === 'coalesce') {
      collectConditional(call.args, 'COALESCE')
      return
    }
    if (!call.function.schema && SET_FUNCTIONS.has(name)) {
      if (inside) throw unsupported('a set-returning function inside the arguments of another one in the select list')
      if (name === 'jsonb_each' || name === 'jsonb_each_text') throw unsupported(`${name} in the select list (it returns records); call it in FROM`)
      out.push(call)
      collect(call.args, out, true)
      return
    }
  }
  if (node.type === 'case') {
    collectConditional(Object.values(node), 'CASE')
    return
  }
  for (const v of Object.values(node)) collect(v, out, inside)
}

/** PostgreSQL refuses a set-returning call under CASE and COALESCE (0A000): it could not be evaluated lazily. */
function collectConditional(e: unknown, what: string): void {
  const inner: ExprCall[] = []
  collect(e, inner, false)
  if (inner.length > 0) throw new SqlError('0A000', `set-returning functions are not allowed in ${what}`, {hint: 'You might be able to move the set-returning function into a LATERAL FROM item.'})
}

/** Running count of the rows the calls of one statement produced, bounded like FROM's calls (54000). */
export interface SetBudget {
  rows: number
}

/** The output rows of one input row: the select list evaluated once per position of the calls' results. */
export function expandSetCalls<T>(
  calls: ExprCall[],
  exprs: Expr[],
  key: Row,
  ctx: EvalCtx,
  budget: SetBudget,
  make: (outputs: unknown[]) => T,
): T[] {
  const lists = calls.map((call) => {
    const r = callSetFunction(call.function.name.toLowerCase(), call.args.map((a) => evaluate(a, key, ctx)))
    const column = r.columns[0].name
    return r.rows.map((x) => x[column])
  })
  let n = 0
  for (const l of lists) n = Math.max(n, l.length)
  budget.rows += n
  if (budget.rows > MAX_SET_ROWS) {
    throw new SqlError('54000', `set-returning functions in the select list would return more than ${MAX_SET_ROWS.toLocaleString('en')} rows`, {hint: 'narrow the range or the rows they are called for'})
  }
  const out: T[] = []
  for (let i = 0; i < n; i++) {
    const setValues = new Map<object, unknown>(calls.map((c, j) => [c, i < lists[j].length ? lists[j][i] : null]))
    const sctx: EvalCtx = {...ctx, setValues}
    out.push(make(exprs.map((x) => evaluate(x, key, sctx))))
  }
  return out
}
