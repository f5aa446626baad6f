/**
 * The point select, `SELECT a, b FROM t WHERE id = $1` (pgbench -S, an ORM's find by primary key),
 * or `WHERE col = $1` on a column with a secondary index (CREATE INDEX), answered without the
 * general SELECT machinery: no subquery search, no access-path planning, no
 * FROM/WHERE/select-list passes over row arrays. What it does is what `select` does for this shape
 * (the same key, the same engine read, the same row object, WHERE and columns evaluated by the
 * same evaluator), so the answers, types and errors cannot differ; anything else about the
 * statement or the session (a schemaless or uncached table, a column the table lacks, the row
 * written by the open transaction) returns undefined and the general path runs.
 *
 * The statement's shape is checked once per parsed statement (the parse cache and prepared
 * statements reuse the AST); what depends on the table is bound once per table definition, which
 * DDL replaces (executor.ts forgets a definition a statement changes).
 */
import type {Expr, SelectFromStatement, Statement} from 'pgsql-ast-parser'

import type {Doc, Json} from '../engine/types.js'

import {getParsed, getParsedIfCached} from '../engine/parsed-read.js'

import {isSystemTable} from './catalog.js'
import {evaluate, type EvalCtx, type Row, type RowObj, type SourceInfo} from './eval.js'
import {branchOf, cachedTableDef, checkCancel, type Column, evalCtx, idOidOf, type PgSession, type QueryResult, safeCoerce, SCHEMA_TABLE, sourceInfo, tableDefVersion, type TableDef, typingOf} from './executor.js'
import {keyText} from './planner.js'
import {OID, oidOfTypeName, stored, typed} from './types.js'

interface Shape {
  alias: string
  /** The select list: `*` or plain column references. */
  columns: Array<{name: string; ref: RefExpr} | {star: true}>
  /** The column compared: undefined for `id`, else a column read through its secondary index (CREATE INDEX). */
  field?: string
  /** The other side of `id = ...` (or `field = ...`): a parameter or a literal. */
  key: Expr
  table: string
  /** The table definition the columns were last bound to, where it was read, and what binding gave. */
  bound?: {binding?: Binding; branch: string; def: TableDef; engine: PgSession['engine']; version: number}
  where: Expr
}

type RefExpr = Expr & {type: 'ref'}

interface Binding {
  columns: Column[]
  /** The fields besides id the select list reads, with the type to convert a stored value to (see toRow). */
  fields: Array<{name: string; oid?: number}>
  idOid: number
  info: SourceInfo
  refs: RefExpr[]
}

const shapes = new WeakMap<Statement, null | Shape>()

/** Keys a node of each kind may carry for the shape to hold; any other key set means other syntax. */
const SELECT_KEYS = new Set(['columns', 'from', 'type', 'where'])
const FROM_KEYS = new Set(['name', 'type'])
const NAME_KEYS = new Set(['alias', 'name'])
const REF_KEYS = new Set(['name', 'table', 'type'])
const EQ_KEYS = new Set(['left', 'op', 'right', 'type'])
const CONST_TYPES = new Set(['integer', 'parameter', 'string'])
/** Fields toRow leaves out of a row (executor.ts HIDDEN): a column of such a name takes the general path. */
const HIDDEN_NAMES = new Set(['_encoding', '_expiresAt', '_redis'])

function only(node: object, keys: Set<string>): boolean {
  for (const [k, v] of Object.entries(node)) if (!keys.has(k) && v !== undefined && v !== null) return false
  return true
}

function shapeOf(st: Statement): null | Shape {
  if (st.type !== 'select' || !only(st, SELECT_KEYS)) return null
  const sel = st as SelectFromStatement
  const f = sel.from?.[0]
  if (sel.from?.length !== 1 || f?.type !== 'table' || !only(f, FROM_KEYS) || !only(f.name, NAME_KEYS) || f.name.schema) return null
  const table = f.name.name
  const alias = f.name.alias ?? table
  if (isSystemTable(table)) return null
  const w = sel.where
  if (w?.type !== 'binary' || w.op !== '=' || !only(w, EQ_KEYS)) return null
  const isColumn = (e: Expr): e is RefExpr => e.type === 'ref' && only(e, REF_KEYS) && e.name !== '*' && (!e.table || (e.table.name === alias && !e.table.schema))
  const column = isColumn(w.left) ? w.left : isColumn(w.right) ? w.right : undefined
  const key = column === w.left ? w.right : w.left
  if (!column || !CONST_TYPES.has(key.type)) return null
  // Any other column is answered only through a secondary index on it (checked when the statement runs).
  const field = column.name === 'id' ? undefined : column.name
  const columns: Shape['columns'] = []
  for (const c of sel.columns ?? []) {
    const e = c.expr
    if (e.type !== 'ref' || !only(e, REF_KEYS) || (e.table && (e.table.name !== alias || e.table.schema))) return null
    if (e.name === '*') {
      if (c.alias) return null
      columns.push({star: true})
    } else columns.push({name: c.alias?.name ?? e.name, ref: e})
  }
  if (columns.length === 0) return null
  return {alias, columns, field, key, table, where: w}
}

/** The select list bound to a table definition; undefined when a column is not the table's (the general path reports it). */
function bind(shape: Shape, def: TableDef): Binding | undefined {
  const idOid = idOidOf(def)
  const tableColumns: Column[] = [{name: 'id', oid: idOid}, ...def.columns.filter((c) => c.name !== 'id').map((c) => ({name: c.name, oid: oidOfTypeName(c.type)}))]
  // A name an object inherits (constructor, toString) resolves differently in a row lacking it.
  if (tableColumns.some((c) => HIDDEN_NAMES.has(c.name) || c.name in {})) return undefined
  const columns: Column[] = []
  const refs: RefExpr[] = []
  for (const c of shape.columns) {
    if ('star' in c) {
      for (const tc of tableColumns) {
        columns.push({name: tc.name, oid: tc.oid})
        refs.push({name: tc.name, table: {name: shape.alias}, type: 'ref'})
      }
      continue
    }
    const tc = tableColumns.find((x) => x.name === c.ref.name)
    if (!tc) return undefined
    columns.push({name: c.name, oid: tc.oid})
    refs.push(c.ref)
  }
  if (shape.field !== undefined && !tableColumns.some((c) => c.name === shape.field)) return undefined
  const declared = tableColumns.map((c) => c.name)
  const typing = new Set(typingOf(tableColumns)?.map((c) => c.name))
  const read = refs.map((r) => r.name)
  // WHERE reads the indexed column too.
  if (shape.field !== undefined) read.push(shape.field)
  const fields = [...new Set(read)].filter((n) => n !== 'id').map((name) => ({name, oid: typing.has(name) ? tableColumns.find((c) => c.name === name)?.oid : undefined}))
  return {columns: Object.freeze(columns) as Column[], fields, idOid, info: sourceInfo({alias: shape.alias, columns: tableColumns, declared, rows: []}, false), refs}
}

/**
 * The answer to a point select, or undefined when the statement is not one (or the general path
 * must answer it). With `wait` false, a row that must be read from Git also gives undefined rather
 * than a promise: the caller then runs the statement the general way.
 */
export function pointSelect(s: PgSession, st: Statement, params: unknown[], wait: true): Promise<QueryResult> | QueryResult | undefined
export function pointSelect(s: PgSession, st: Statement, params: unknown[], wait: false): QueryResult | undefined
export function pointSelect(s: PgSession, st: Statement, params: unknown[], wait: boolean): Promise<QueryResult> | QueryResult | undefined {
  let shape = shapes.get(st)
  if (shape === undefined) {
    shape = shapeOf(st)
    shapes.set(st, shape)
  }
  if (!shape) return undefined
  const branch = branchOf(s)
  let bound = shape.bound
  // The definition is read again only when the cache of definitions changed (DDL, a first read).
  if (bound?.version !== tableDefVersion() || bound.branch !== branch || bound.engine !== s.engine) {
    const def = cachedTableDef(s, branch, shape.table)
    if (!def) return undefined
    bound = shape.bound = bound?.def === def ? {...bound, branch, engine: s.engine, version: tableDefVersion()} : {binding: bind(shape, def), branch, def, engine: s.engine, version: tableDefVersion()}
  }
  // A definition the open transaction changed is its own (tableDef reads it through the transaction).
  if (s.tx?.branches.get(branch)?.written.has(`${SCHEMA_TABLE}:${shape.table}`)) return undefined
  const b = bound.binding
  if (!b) return undefined
  const ctx = evalCtx(s, params, [b.info])
  const v = evaluate(shape.key, {}, ctx)
  if (shape.field !== undefined) return byIndex(s, shape, shape.field, b, v, ctx, branch)
  // NULL matches no id (planner.ts keysOf skips it).
  if (v === null || v === undefined) return answer(s, shape, b, undefined, ctx)
  const id = `${shape.table}:${keyText(v)}`
  if (s.tx?.branches.get(branch)?.written.has(id)) return undefined
  const hit = getParsedIfCached(s.engine, id, {branch})
  if (hit !== false) return answer(s, shape, b, hit, ctx)
  if (!wait) return undefined
  const found = shape
  return getParsed(s.engine, id, {branch}).then((doc) => answer(s, found, b, doc, ctx))
}

/** Values a secondary index holds (planner.ts indexedKeys): others make the general path scan the table. */
function plain(v: unknown): v is Json {
  return typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v)) || (typeof v === 'object' && v !== null && (Array.isArray(v) || v.constructor === Object))
}

/**
 * `WHERE field = $1` through the field's secondary index, as loadTable's index path (executor.ts)
 * reads it: the index's ids in id order, each row tested by the statement's WHERE. Undefined (the
 * general path) while the index builds, when there is none, for a value the index cannot hold,
 * when the open transaction wrote on the branch (its rows are not in the index), or when a row
 * must be read from Git.
 */
function byIndex(s: PgSession, shape: Shape, field: string, b: Binding, v: unknown, ctx: EvalCtx, branch: string): QueryResult | undefined {
  const value = stored(v)
  if (!plain(value)) return undefined
  if (s.tx?.branches.get(branch)?.written.size) return undefined
  const ids = s.engine.findIdsIfReady(shape.table, field, value, {branch})
  if (!ids) return undefined
  const docs: Doc[] = []
  for (const id of ids) {
    const hit = getParsedIfCached(s.engine, id, {branch})
    if (hit === false) return undefined
    if (hit) docs.push(hit)
  }
  return answer(s, shape, b, docs, ctx)
}

/**
 * toRow's row (executor.ts) with only the fields the statement reads: the others are never
 * looked at, and a missing field reads as NULL either way (the table's columns are declared).
 */
function rowOf(doc: Doc, table: string, b: Binding): RowObj {
  const key = doc.id.slice(table.length + 1)
  const o: RowObj = {id: b.idOid === OID.text ? key : safeCoerce(key, b.idOid)}
  for (const f of b.fields) if (Object.hasOwn(doc, f.name)) o[f.name] = f.oid === undefined ? doc[f.name] : typed(doc[f.name], f.oid)
  return o
}

/** The rows of the documents read (one for an id, the index's matches in id order), WHERE tested on each. */
function answer(s: PgSession, shape: Shape, b: Binding, found: Doc | Doc[] | undefined, ctx: EvalCtx): QueryResult {
  const rows: unknown[][] = []
  const add = (doc: Doc): void => {
    // Not a computed key in the literal: V8 defines that through a runtime call (2% of a prepared point select).
    const row: Row = {}
    row[shape.alias] = rowOf(doc, shape.table, b)
    if (evaluate(shape.where, row, ctx) === true) rows.push(b.refs.map((r) => evaluate(r, row, ctx)))
  }
  // A point select by id reads one document: no array is made for it.
  if (Array.isArray(found)) for (const doc of found) add(doc)
  else if (found) add(found)
  checkCancel(s)
  return {columns: b.columns, rows, tag: rows.length === 1 ? 'SELECT 1' : rows.length === 0 ? 'SELECT 0' : `SELECT ${rows.length}`}
}
