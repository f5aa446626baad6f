/**
 * Runs one parsed SQL statement against the engine. Tables are engine tables (`table:key` ids),
 * schemas are branches, the `id` column is the key part of the document id. Lookups by `id`
 * use engine.get/getMany and never list the table.
 */
import type {
  CreateIndexStatement,
  CreateTableStatement,
  DeleteStatement,
  Expr,
  From,
  InsertStatement,
  SelectedColumn,
  SelectFromStatement,
  SelectFromUnion,
  Statement,
  UpdateStatement,
} from 'pgsql-ast-parser'

import {randomUUID} from 'node:crypto'

import type {BatchOp, Damage, Doc, Engine, Json, ListOptions, ListResult, Transaction} from '../engine/types.js'

import {damageMessage} from '../engine/errors.js'
import {getManyParsed, getParsed} from '../engine/parsed-read.js'

import {fromEngine, SqlError, unsupported} from './errors.js'
import {columnName, compareMixed, CorrelatedReference, evaluate, staticOid, type EvalCtx, isAggregate, isSubquery, isTimeOfDayType, type Row, type RowObj, type SourceInfo} from './eval.js'
import {isSystemTable, systemTable} from './catalog.js'
import {catalogFunctionOid} from './catalog-functions.js'
import {builtSnapshot} from './catalog-snapshot.js'
import {pointSelect} from './point-select.js'
import {describeAccess, type EarlyStop, keyText, planAccess, splitAnd} from './planner.js'
import {filterSliced, ITEMS_PER_CHECK, mapSliced, pause} from './slices.js'
import {expandSetCalls, setCallsIn} from './select-set-functions.js'
import {callSetFunction, MAX_SET_ROWS, SET_FUNCTIONS} from './set-functions.js'
import {coerce, inferOid, needsTyping, OID, oidOfTypeName, stored, typed, typeName} from './types.js'

export interface Column {
  name: string
  oid: number
}

export interface QueryResult {
  columns?: Column[]
  rows: unknown[][]
  tag: string
}

/** A SQL transaction: one engine transaction per branch touched, and the ids each has written. */
export interface Tx {
  branches: Map<string, {tx: Transaction; written: Set<string>}>
  /** A multi-statement simple Query outside BEGIN runs as one implicit transaction. */
  implicit?: boolean
  /** When the transaction began (microseconds): now() answers this for all its statements. */
  startedAt?: bigint
}

export interface PgSession {
  cancelRequested: boolean
  database: string
  engine: Engine
  /** `:max-in-values`: also caps an `= ANY(array)` list. */
  maxInValues?: number
  /** NOTICE messages of the running statement (damaged documents a read skipped); set by execute. */
  notices?: string[]
  /**
   * Whole-table reads shared while subqueries are prepared: a correlated subquery is first run as
   * a probe (which may scan its tables before it meets the outer reference) and then prepared,
   * and both read the same documents once. Set only during preparation; no write happens there.
   */
  reads?: Map<string, Doc[]>
  settings: Map<string, string>
  /** When the current statement began (microseconds), for now() outside a transaction. */
  statementAt?: bigint
  tx?: Tx
  txFailed: boolean
  user: string
  version: string
}

export interface TableDef {
  columns: Array<{name: string; notNull?: boolean; type: string}>
}

export const SCHEMA_TABLE = '_pg_schema'
const HIDDEN = new Set(['_redis', '_expiresAt', '_encoding'])
const MAX_SCAN = 5_000_000
/** Documents fetched by id, or read by a scan, between two looks at the event loop's slice. */
const FETCH_BATCH = 256
const SCAN_PAGE = 256

// -----------------------------------------------------------------------------------------
// Session helpers

/** The last search_path read and its first schema: every statement asks, and it rarely changes. */
let lastSearchPath = 'public'
let lastSchema = 'public'

export function currentSchema(s: PgSession): string {
  const sp = s.settings.get('search_path') ?? 'public'
  if (sp === lastSearchPath) return lastSchema
  const first = sp
    .split(',')
    .map((x) => x.trim().replaceAll('"', ''))
    .find((x) => x && x !== '"$user"' && x !== '$user')
  lastSearchPath = sp
  lastSchema = first ?? 'public'
  return lastSchema
}

/** Schema name -> branch: `public` is `main`, any other schema is the branch of that name. */
export function branchOf(s: PgSession, schema?: string): string {
  const sc = schema ?? currentSchema(s)
  return sc === 'public' ? 'main' : sc
}

export function evalCtx(s: PgSession, params: unknown[], sources: SourceInfo[]): EvalCtx {
  return {params, session: {database: s.database, now: s.tx?.startedAt ?? s.statementAt, maxInValues: s.maxInValues, schema: currentSchema(s), user: s.user, version: s.version, catalog: () => builtSnapshot(s)}, sources}
}

export function checkCancel(s: PgSession): void {
  if (s.cancelRequested) {
    s.cancelRequested = false
    throw new SqlError('57014', 'canceling statement due to user request')
  }
}

// -----------------------------------------------------------------------------------------
// Table definitions (CREATE TABLE), cached per engine and branch

const defCache = new WeakMap<Engine, Map<string, null | TableDef>>()
/** Changes whenever an entry of defCache does: what was read from it before may be stale. */
let defVersion = 0

export function tableDefVersion(): number {
  return defVersion
}

export async function tableDef(s: PgSession, branch: string, table: string): Promise<TableDef | undefined> {
  let cache = defCache.get(s.engine)
  if (!cache) {
    cache = new Map()
    defCache.set(s.engine, cache)
  }
  const key = `${branch}\0${table}`
  const t = txOf(s, branch)
  const schemaId = `${SCHEMA_TABLE}:${table}`
  if (t?.written.has(schemaId)) {
    const doc = await t.tx.get(schemaId)
    return doc ? checkDef(doc, branch) : undefined
  }
  if (cache.has(key)) return cache.get(key) ?? undefined
  const doc = await s.engine.get(schemaId, {branch})
  // A damaged entry is reported each time (naming it), never cached or silently ignored.
  const def = doc ? checkDef(doc, branch) : null
  cache.set(key, def)
  defVersion++
  return def ?? undefined
}

/**
 * The definition `tableDef` would answer, when it is known without waiting: cached, and not
 * written by the session's open transaction. Undefined otherwise (and for a schemaless table).
 */
export function cachedTableDef(s: PgSession, branch: string, table: string): TableDef | undefined {
  if (s.tx?.branches.get(branch)?.written.has(`${SCHEMA_TABLE}:${table}`)) return undefined
  return defCache.get(s.engine)?.get(`${branch}\0${table}`) ?? undefined
}

/** A `_pg_schema` document as a table definition, or XX001 naming the entry when it is not one. */
function checkDef(doc: Doc, branch: string): TableDef {
  const bad = (why: string): SqlError =>
    new SqlError('XX001', `catalog entry "${doc.id}" on branch ${branch} is damaged: ${why}`, {
      hint: `see its versions with SELECT * FROM history('${doc.id}'); DROP TABLE and CREATE TABLE write a new definition`,
    })
  const cols = doc.columns
  if (!Array.isArray(cols) || cols.length === 0) throw bad('"columns" must be a non-empty list of {name, type}')
  for (const [i, c] of cols.entries()) {
    if (!c || typeof c !== 'object' || Array.isArray(c)) throw bad(`column ${i + 1} is not an object`)
    if (typeof c.name !== 'string' || c.name === '') throw bad(`column ${i + 1} has no name`)
    if (typeof c.type !== 'string' || c.type === '') throw bad(`column "${c.name}" has no type`)
    if (c.notNull !== undefined && typeof c.notNull !== 'boolean') throw bad(`column "${c.name}" has a notNull that is not a boolean`)
  }
  return doc as unknown as TableDef
}

function txOf(s: PgSession, branch: string): undefined | {tx: Transaction; written: Set<string>} {
  return s.tx?.branches.get(branch)
}

/** The branch's engine transaction in this session's transaction, begun on first use. */
function txFor(s: PgSession, branch: string): {tx: Transaction; written: Set<string>} {
  const tx = s.tx as Tx
  let t = tx.branches.get(branch)
  if (!t) {
    // Catalog writes (_pg_schema) need `system`; user writes to reserved tables are refused in targetOf.
    t = {tx: s.engine.begin({branch, meta: {origin: 'pg', user: s.user}, system: true}), written: new Set()}
    tx.branches.set(branch, t)
  }
  return t
}

/** A listing page of the engine, through the session's transaction when there is one. */
async function listPage(s: PgSession, branch: string, options: Omit<ListOptions, 'branch'>): Promise<ListResult> {
  const t = txOf(s, branch)
  const page = await (t ? t.tx.list(options) : s.engine.list({...options, branch}))
  for (const d of page.skipped ?? []) s.notices?.push(`skipped damaged document ${d.id}: its git object ${d.object} cannot be read; run toolkit svc diagnose`)
  return page
}

function forgetDef(s: PgSession, branch: string, table: string): void {
  defCache.get(s.engine)?.delete(`${branch}\0${table}`)
  defVersion++
}

export async function tableNames(s: PgSession, branch: string): Promise<string[]> {
  const names = new Set((await s.engine.tables({branch})).filter((t) => t !== SCHEMA_TABLE))
  const schemaDocs = await listAll(s, branch, SCHEMA_TABLE)
  for (const d of schemaDocs) names.add(d.id.slice(SCHEMA_TABLE.length + 1))
  const tx = txOf(s, branch)
  if (tx) {
    for (const id of tx.written) {
      const exists = (await tx.tx.get(id)) !== undefined
      const t = id.slice(0, id.indexOf(':'))
      if (t === SCHEMA_TABLE) {
        if (exists) names.add(id.slice(SCHEMA_TABLE.length + 1))
        else names.delete(id.slice(SCHEMA_TABLE.length + 1))
      } else if (exists) names.add(t)
    }
  }
  return [...names].sort()
}

async function tableExists(s: PgSession, branch: string, table: string): Promise<boolean> {
  if (await tableDef(s, branch, table)) return true
  return (await tableNames(s, branch)).includes(table)
}

/** Declared columns, else the fields of the first documents (schemaless tables). */
export async function tableColumns(s: PgSession, branch: string, table: string): Promise<Column[]> {
  const def = await tableDef(s, branch, table)
  if (def) return def.columns.map((c) => ({name: c.name, oid: oidOfTypeName(c.type)}))
  const page = await listPage(s, branch, {limit: 100, table})
  const seen = new Map<string, unknown[]>([['id', []]])
  for (const d of page.docs) {
    for (const [k, v] of Object.entries(d)) {
      if (HIDDEN.has(k) || k === 'id') continue
      if (!seen.has(k)) seen.set(k, [])
      seen.get(k)?.push(v)
    }
  }
  return [...seen].map(([name, vals]) => ({name, oid: name === 'id' ? OID.text : inferOid(vals)}))
}

// -----------------------------------------------------------------------------------------
// Reading documents (through a transaction's own writes)

function toRow(doc: Doc, table: string, idOid?: number, typing?: Column[]): RowObj {
  const o: RowObj = {}
  const key = doc.id.slice(table.length + 1)
  o.id = idOid === undefined || idOid === OID.text ? key : safeCoerce(key, idOid)
  for (const [k, v] of Object.entries(doc)) if (k !== 'id' && !HIDDEN.has(k)) o[k] = v
  // bigint, numeric and float8 columns are read as values of that type (exact digits, scale, float division).
  if (typing) for (const c of typing) if (c.name !== 'id' && o[c.name] !== undefined) o[c.name] = typed(o[c.name], c.oid)
  return o
}

/** The declared columns whose stored JSON needs converting when read (see `typed`). */
export function typingOf(columns: Column[] | undefined): Column[] | undefined {
  const t = columns?.filter((c) => needsTyping(c.oid))
  return t?.length ? t : undefined
}

async function getDocs(s: PgSession, branch: string, ids: string[]): Promise<Array<Doc | undefined>> {
  const out: Array<Doc | undefined> = Array.from({length: ids.length})
  const need: number[] = []
  const tx = txOf(s, branch)
  for (const [i, id] of ids.entries()) {
    if (tx?.written.has(id)) out[i] = await tx.tx.get(id)
    else need.push(i)
  }
  if (need.length === 1 && ids.length === 1) {
    out[need[0]] = await getParsed(s.engine, ids[need[0]], {branch})
  } else if (need.length > 0) {
    // Of several ids, a damaged document is left out and named in a NOTICE; the others answer.
    const skipped: Damage[] = []
    const got = await getManyParsed(
      s.engine,
      need.map((i) => ids[i]),
      {branch, skipped},
    )
    for (const [j, i] of need.entries()) out[i] = got[j]
    for (const d of skipped) s.notices?.push(damageMessage(d).replace(/^document /, 'skipped document '))
  }
  return out
}

async function listAll(s: PgSession, branch: string, table: string): Promise<Doc[]> {
  const key = `${branch}\u0000${table}`
  const shared = s.reads?.get(key)
  if (shared) return shared
  const out: Doc[] = []
  let cursor: string | undefined
  do {
    // A page per slice of the event loop: reading and parsing 1,000 documents took 5-15 ms in one turn.
    if (cursor) await pause(s)
    checkCancel(s)
    const page = await listPage(s, branch, {cursor, limit: SCAN_PAGE, table})
    out.push(...page.docs)
    cursor = page.nextCursor
    if (out.length > MAX_SCAN) throw new SqlError('54000', `table ${table} has more than ${MAX_SCAN} rows; add a WHERE on id or a LIMIT`)
  } while (cursor)
  s.reads?.set(key, out)
  return out
}

// -----------------------------------------------------------------------------------------
// Writing

async function write(s: PgSession, branch: string, ops: BatchOp[]): Promise<void> {
  if (ops.length === 0) return
  if (s.tx) {
    const t = txFor(s, branch)
    try {
      for (const op of ops) {
        if (op.op === 'put') t.tx.put(op.doc)
        else t.tx.delete(op.id)
        t.written.add(op.op === 'put' ? op.doc.id : op.id)
      }
    } catch (error) {
      throw fromEngine(error)
    }
    return
  }
  const system = ops.some((op) => (op.op === 'put' ? op.doc.id : op.id).startsWith(`${SCHEMA_TABLE}:`))
  const opts = {branch, meta: {origin: 'pg', user: s.user}, system}
  try {
    if (ops.length === 1) {
      const op = ops[0]
      await (op.op === 'put' ? s.engine.put(op.doc, opts) : s.engine.delete(op.id, opts))
    } else {
      await s.engine.batch(ops, opts)
    }
  } catch (error) {
    throw fromEngine(error)
  }
}

export async function commitTx(s: PgSession): Promise<void> {
  const tx = s.tx
  s.tx = undefined
  if (!tx) return
  // One commit per branch touched: BEGIN ... COMMIT is one Git commit, as users of a versioned DB expect.
  try {
    for (const [branch, t] of tx.branches) {
      for (const id of t.written) if (id.startsWith(`${SCHEMA_TABLE}:`)) forgetDef(s, branch, id.slice(SCHEMA_TABLE.length + 1))
      await t.tx.commit()
    }
  } catch (error) {
    for (const t of tx.branches.values()) t.tx.rollback()
    throw fromEngine(error)
  }
}

/** Drops the session's transaction without writing anything. */
export function rollbackTx(s: PgSession): void {
  for (const t of s.tx?.branches.values() ?? []) t.tx.rollback()
  s.tx = undefined
}

// -----------------------------------------------------------------------------------------
// FROM sources

export interface Source {
  alias: string
  /** Rows not read yet: the join fetches only the matching documents (by id or a secondary index). */
  lazy?: boolean
  branch?: string
  columns?: Column[]
  /** Declared column names; undefined for a schemaless table. */
  declared?: string[]
  rows: RowObj[]
  table?: string
  ftsFromIndex?: boolean
}


export function safeCoerce(v: unknown, oid: number): unknown {
  try {
    return coerce(v, oid)
  } catch {
    return v
  }
}

function defColumns(def: TableDef | undefined): Column[] | undefined {
  return def?.columns.map((c) => ({name: c.name, oid: oidOfTypeName(c.type)}))
}

/** The declared type of a table's id column (text unless CREATE TABLE said otherwise). */
export function idOidOf(def: TableDef | undefined): number {
  const c = def?.columns.find((x) => x.name === 'id')
  return c ? oidOfTypeName(c.type) : OID.text
}

async function loadTable(
  s: PgSession,
  schema: string | undefined,
  table: string,
  alias: string,
  where: Expr | null | undefined,
  single: boolean,
  ctx: EvalCtx,
  early?: EarlyStop,
  lazy?: boolean,
): Promise<Source> {
  if (schema === 'information_schema' || schema === 'pg_catalog' || (!schema && isSystemTable(table) && !(await tableExists(s, branchOf(s), table)))) {
    return systemTable(s, schema, table, alias)
  }
  const branch = branchOf(s, schema)
  if (schema && schema !== 'public') {
    const branches = await s.engine.branches()
    if (!branches.some((b) => b.name === branch)) throw new SqlError('3F000', `schema "${schema}" does not exist`)
  }
  const def = await tableDef(s, branch, table)
  const declared = def ? ['id', ...def.columns.map((c) => c.name).filter((n) => n !== 'id')] : undefined
  const base: Source = {alias, branch, declared, rows: [], table}
  const idOid = idOidOf(def)
  if (def) base.columns = [{name: 'id', oid: idOid}, ...def.columns.filter((c) => c.name !== 'id').map((c) => ({name: c.name, oid: oidOfTypeName(c.type)}))]
  const typing = typingOf(base.columns)
  if (lazy) {
    if (!def && (await s.engine.count({branch, table})) === 0 && !(await tableExists(s, branch, table))) throw noTable(table)
    base.lazy = true
    return base
  }
  const path = await planAccess({alias, branch, cancel: s, ctx, early, engine: s.engine, single, table, where})
  if (path.kind === 'id') {
    const {keys} = path
    // A long key list is fetched a batch per slice of the event loop (issue 24).
    for (let from = 0; from < keys.length; from += FETCH_BATCH) {
      if (from > 0) await pause(s)
      const docs = await getDocs(
        s,
        branch,
        keys.slice(from, from + FETCH_BATCH).map((k) => `${table}:${k}`),
      )
      for (const d of docs) if (d) base.rows.push(toRow(d, table, idOid, typing))
    }
    if (base.rows.length === 0 && !def && !(await tableExists(s, branch, table))) throw noTable(table)
    return base
  }
  if (path.kind === 'index') {
    const byIndex = path
    const ids = new Set<string>()
    for (const v of byIndex.values) {
      const found = await s.engine.findIds(table, byIndex.field, v, {branch})
      if (found === undefined) return {...base, rows: (await listAll(s, branch, table)).map((d) => toRow(d, table, idOid, typing))}
      for (const id of found) ids.add(id)
    }
    // The transaction's own uncommitted writes are not in the index: its rows of this table are candidates too.
    for (const id of txOf(s, branch)?.written ?? []) if (id.startsWith(`${table}:`)) ids.add(id)
    const docs = await getDocs(s, branch, [...ids].sort())
    for (const d of docs) if (d) base.rows.push(toRow(d, table, idOid, typing))
    if (base.rows.length === 0 && !def && (await s.engine.count({branch, table})) === 0 && !(await tableExists(s, branch, table))) throw noTable(table)
    return base
  }
  if (path.kind === 'fulltext') {
    const q = path.query
    if (!def && !(await tableExists(s, branch, table))) throw noTable(table)
    const r = await s.engine.search(q, {branch, limit: 10_000, table}).catch((error: unknown) => {
      throw fromEngine(error)
    })
    base.rows = r.hits.map((h) => toRow(h.doc, table, idOid, typing))
    base.ftsFromIndex = true
    return base
  }
  if (path.kind === 'prefix') {
    const {prefix} = path
    let cursor: string | undefined
    do {
      if (cursor) await pause(s)
      checkCancel(s)
      const page = await listPage(s, branch, {cursor, limit: SCAN_PAGE, prefix: `${table}:${prefix}`})
      for (const d of page.docs) base.rows.push(toRow(d, table, idOid, typing))
      cursor = page.nextCursor
    } while (cursor && (!path.early || base.rows.filter(path.early.test).length < path.early.stop))
    if (base.rows.length === 0 && !def && !(await tableExists(s, branch, table))) throw noTable(table)
    return base
  }
  if (path.early) {
    const {early} = path
    // SELECT ... WHERE <not on id> LIMIT n without ORDER BY: stop reading once n rows matched.
    let cursor: string | undefined
    let seen = 0
    do {
      if (cursor) await pause(s)
      checkCancel(s)
      const page = await listPage(s, branch, {cursor, limit: SCAN_PAGE, table})
      seen += page.docs.length
      for (const d of page.docs) {
        const row = toRow(d, table, idOid, typing)
        if (early.test(row)) base.rows.push(row)
      }
      cursor = page.nextCursor
    } while (cursor && base.rows.length < early.stop)
    if (seen === 0 && !def && !(await tableExists(s, branch, table))) throw noTable(table)
    return base
  }
  const docs = await listAll(s, branch, table)
  if (docs.length === 0 && !def && !(await tableExists(s, branch, table))) throw noTable(table)
  base.rows = await mapSliced(docs, (d) => toRow(d, table, idOid, typing), s)
  return base
}

function noTable(table: string): SqlError {
  return new SqlError('42P01', `relation "${table}" does not exist`)
}

/** Table functions: history('table:key') and as_of('table:key', 'commit-or-time'). */
async function tableFunction(s: PgSession, f: From & {type: 'call'}, ctx: EvalCtx): Promise<Source> {
  const name = f.function.name.toLowerCase()
  const alias = f.alias?.name ?? name
  const args = f.args.map((a) => evaluate(a, {}, ctx))
  const branch = branchOf(s, f.function.schema)
  if (name === 'history') {
    if (args.length < 1 || typeof args[0] !== 'string') throw new SqlError('42883', 'history(id text [, limit int]) needs a document id such as \'users:1\'')
    const limit = args[1] === undefined ? 10_000 : Number(args[1])
    const rows: RowObj[] = []
    let cursor: string | undefined
    do {
      const r = await s.engine.history(args[0], {branch, cursor, limit: Math.min(1000, limit - rows.length)}).catch((error: unknown) => {
        throw fromEngine(error)
      })
      for (const v of r.versions) rows.push({commit: v.commit, doc: v.doc ? stripHidden(v.doc) : null, op: v.op, time: safeCoerce(v.time, OID.timestamptz)})
      cursor = r.nextCursor
    } while (cursor && rows.length < limit)
    return {
      alias,
      columns: [
        {name: 'commit', oid: OID.text},
        {name: 'time', oid: OID.timestamptz},
        {name: 'op', oid: OID.text},
        {name: 'doc', oid: OID.jsonb},
      ],
      declared: ['commit', 'time', 'op', 'doc'],
      rows,
    }
  }
  if (name === 'as_of') {
    if (args.length !== 2 || typeof args[0] !== 'string' || (typeof args[1] !== 'string' && typeof args[1] !== 'number')) {
      throw new SqlError('42883', "as_of(id text, commit_or_time text) needs a document id and a commit id or a timestamp")
    }
    const at = String(args[1])
    const byCommit = /^[0-9a-f]{7,40}$/i.test(at)
    const doc = await s.engine.asOf(args[0], byCommit ? {branch, commit: at} : {branch, time: at}).catch((error: unknown) => {
      throw fromEngine(error)
    })
    const table = args[0].includes(':') ? args[0].slice(0, args[0].indexOf(':')) : 'default'
    return {alias, rows: doc ? [toRow(doc, table)] : []}
  }
  throw new SqlError('42883', `function ${name}() does not exist`, {hint: 'table functions: history(id), as_of(id, commit_or_time)'})
}

function stripHidden(doc: Doc): Record<string, Json> {
  const o: Record<string, Json> = {}
  for (const [k, v] of Object.entries(doc)) if (!HIDDEN.has(k)) o[k] = v
  return o
}

// -----------------------------------------------------------------------------------------
// SELECT

async function select(s: PgSession, st: SelectFromStatement, params: unknown[], outer?: EvalCtx['outer']): Promise<QueryResult> {
  if (!outer) {
    const point = pointSelect(s, st, params, true)
    if (point) return point
  }
  if (st.having && !st.groupBy) throw unsupported('HAVING without GROUP BY')
  if (st.for) throw unsupported('SELECT ... FOR UPDATE')
  const from = st.from ?? []
  const sources: Source[] = []
  const infos: SourceInfo[] = []
  const ctx = evalCtx(s, params, infos)
  if (outer) ctx.outer = outer
  await prepareSubqueries(s, selectExprs(st), ctx)
  let rows: Row[] = from.length === 0 ? [{}] : []
  const single = from.length === 1
  for (const [i, f] of from.entries()) {
    let src: Source
    if (f.type === 'table') {
      const alias = f.name.alias ?? f.name.name
      const lazy = i > 0 && (await joinLookup(s, f.join?.on ?? undefined, alias, branchOf(s, f.name.schema), f.name.name)) !== undefined
      src = await loadTable(s, f.name.schema, f.name.name, alias, i === 0 ? st.where : undefined, single, ctx, single ? earlyStop(st, alias, ctx) : undefined, lazy)
    } else if (f.type === 'call' && SET_FUNCTIONS.has(f.function.name.toLowerCase())) {
      if (f.withOrdinality) throw unsupported('WITH ORDINALITY')
      // A set-returning function after other FROM items may use their columns (an implicit
      // LATERAL, as in PostgreSQL): it is called once per row they produced.
      if (i > 0) {
        rows = lateralSetFunction(rows, f, ctx, (lateral) => {
          sources.push(lateral)
          infos.push(sourceInfo(lateral, Boolean(ctx.outer)))
        })
        continue
      }
      const r = callSetFunction(f.function.name.toLowerCase(), f.args.map((a) => evaluate(a, {}, ctx)), f.alias?.name, f.alias?.columns?.map((c) => c.name))
      src = {alias: f.alias?.name ?? f.function.name.toLowerCase(), columns: r.columns, declared: r.columns.map((c) => c.name), rows: r.rows}
    } else if (f.type === 'call') {
      src = await tableFunction(s, f, ctx)
    } else if (f.lateral && i > 0) {
      rows = await lateralSubquery(s, rows, f, params, ctx, (lateral) => {
        sources.push(lateral)
        infos.push(sourceInfo(lateral, Boolean(ctx.outer)))
      })
      continue
    } else {
      // LATERAL on the first FROM item has nothing to its left to refer to: a plain subquery.
      src = await fromSubquery(s, f, params, ctx.outer)
    }
    sources.push(src)
    infos.push(sourceInfo(src, Boolean(ctx.outer)))
    if (i === 0) {
      rows = src.rows.map((r) => ({[src.alias]: r}))
      if (src.ftsFromIndex) ctx.ftsFromIndex = true
      continue
    }
    const join = f.join
    const kind = joinKind(f)
    rows = await joinRows(s, rows, src, kind, join?.on ?? undefined, ctx)
  }
  // WHERE over a long FROM in slices of the event loop; what remains is usually short.
  if (st.where && rows.length > ITEMS_PER_CHECK) {
    const where = st.where
    rows = await filterSliced(rows, (r) => evaluate(where, r, ctx) === true, s)
    return finishSelect(s, {...st, where: null}, rows, sources, ctx)
  }
  return finishSelect(s, st, rows, sources, ctx)
}

/**
 * A set-returning function joined to the rows of the FROM items before it, called once per row
 * with that row's values (CROSS, INNER with its ON, or LEFT keeping a row the call gives nothing
 * for).
 */
function lateralSetFunction(rows: Row[], f: From & {type: 'call'}, ctx: EvalCtx, register: (src: Source) => void): Row[] {
  const name = f.function.name.toLowerCase()
  const alias = f.alias?.name ?? name
  const kind = joinKind(f)
  const on = f.join?.on ?? undefined
  const call = (args: unknown[]) => callSetFunction(name, args, f.alias?.name, f.alias?.columns?.map((c) => c.name))
  let total = 0
  const results = rows.map((r) => {
    const result = call(f.args.map((a) => evaluate(a, r, ctx)))
    total += result.rows.length
    if (total > MAX_SET_ROWS) throw new SqlError('54000', `${name} would return more than ${MAX_SET_ROWS.toLocaleString('en')} rows in all`, {hint: 'narrow the rows it is called for'})
    return result
  })
  const columns: Column[] = results[0]?.columns ?? call(f.args.map(() => null)).columns
  // Known to name resolution before ON is evaluated, since ON may use its columns.
  register({alias, columns, declared: columns.map((c) => c.name), rows: []})
  const out: Row[] = []
  for (const [i, r] of rows.entries()) {
    let matched = false
    for (const x of results[i].rows) {
      const joined: Row = {...r, [alias]: x}
      if (on && evaluate(on, joined, ctx) !== true) continue
      matched = true
      out.push(joined)
    }
    // Every column NULL (the alias too, which also names a plain-typed function's value).
    if (!matched && kind === 'LEFT JOIN') out.push({...r, [alias]: Object.fromEntries([alias, ...columns.map((c) => c.name)].map((c) => [c, null]))})
  }
  return out
}

/**
 * `FROM t, LATERAL (SELECT ... WHERE x = t.id) s` and `[LEFT] JOIN LATERAL (...) s ON ...`: the
 * subquery's tables are read once (as a correlated subquery's are) and it is evaluated for each
 * row of the FROM items before it; at most 1,000,000 rows in all (54000).
 */
async function lateralSubquery(s: PgSession, rows: Row[], f: From & {type: 'statement'}, params: unknown[], ctx: EvalCtx, register: (src: Source) => void): Promise<Row[]> {
  const st = f.statement
  if (st.type !== 'select') throw unsupported(`LATERAL over ${st.type.toUpperCase()}`)
  const kind = joinKind(f)
  const on = f.join?.on ?? undefined
  const run = await prepareCorrelated(s, st, params)
  let total = 0
  const results = rows.map((r) => {
    const result = run(r, ctx)
    total += result.rows.length
    if (total > MAX_SET_ROWS) throw new SqlError('54000', `a LATERAL subquery would return more than ${MAX_SET_ROWS.toLocaleString('en')} rows in all`, {hint: 'narrow the rows it is run for'})
    return result
  })
  // With no row on the left, the subquery still names its columns: run once for a row of NULLs.
  const shape = results[0] ?? run({}, ctx)
  const columns = (shape.columns ?? []).map((c, i) => ({name: f.columnNames?.[i]?.name ?? c.name, oid: c.oid}))
  if (f.columnNames && f.columnNames.length > columns.length) {
    throw new SqlError('42P10', `table "${f.alias}" has ${columns.length} columns available but ${f.columnNames.length} columns specified`)
  }
  register({alias: f.alias, columns, declared: columns.map((c) => c.name), rows: []})
  const out: Row[] = []
  for (const [i, r] of rows.entries()) {
    let matched = false
    for (const vals of results[i].rows) {
      const joined: Row = {...r, [f.alias]: Object.fromEntries(columns.map((c, j) => [c.name, vals[j]]))}
      if (on && evaluate(on, joined, ctx) !== true) continue
      matched = true
      out.push(joined)
    }
    if (!matched && kind === 'LEFT JOIN') out.push({...r, [f.alias]: Object.fromEntries(columns.map((c) => [c.name, null]))})
  }
  return out
}

function joinKind(f: From): string {
  const join = f.join
  const kind = join?.type ?? 'CROSS JOIN'
  if (kind !== 'INNER JOIN' && kind !== 'LEFT JOIN' && kind !== 'CROSS JOIN') throw unsupported(`${kind} (only INNER JOIN and LEFT JOIN)`)
  if (join?.using) throw unsupported('JOIN ... USING')
  return kind
}

export function sourceInfo(src: Source, inSubquery: boolean): SourceInfo {
  const info: SourceInfo = {alias: src.alias, columns: src.declared, oids: src.columns ? Object.fromEntries(src.columns.map((c) => [c.name, c.oid])) : undefined}
  // In a subquery, a name no row of a schemaless source holds belongs to the enclosing query.
  // The set is built on first use (a name not found in the row at hand), once per source.
  if (inSubquery && !src.declared) {
    let known: Set<string> | undefined
    Object.defineProperty(info, 'known', {
      enumerable: true,
      get(): Set<string> {
        if (!known) {
          known = new Set(['id'])
          for (const r of src.rows) for (const k in r) known.add(k)
        }
        return known
      },
    })
  }
  return info
}

/** The expressions of a SELECT that may hold subqueries (FROM's own subqueries are sources). */
function selectExprs(st: SelectFromStatement): unknown[] {
  return [st.columns, st.where, st.groupBy, st.having, st.orderBy, st.limit, (st.from ?? []).map((f) => [f.join?.on, f.type === 'call' ? f.args : undefined])]
}

/** Every subquery in `exprs`, outermost first, without entering the subqueries themselves. */
function findSubqueries(exprs: unknown, out: Statement[] = []): Statement[] {
  if (Array.isArray(exprs)) for (const x of exprs) findSubqueries(x, out)
  else if (exprs && typeof exprs === 'object') {
    if (isSubquery(exprs)) out.push(exprs as unknown as Statement)
    else for (const v of Object.values(exprs)) findSubqueries(v, out)
  }
  return out
}

/**
 * Prepares the subqueries of a statement (see Subquery in eval.ts): each is first run as if on
 * its own; when it refers to the enclosing query it is correlated, and its tables are read once
 * here so that running it again for each outer row needs no I/O.
 */
async function prepareSubqueries(s: PgSession, exprs: unknown, ctx: EvalCtx): Promise<void> {
  const subs = findSubqueries(exprs)
  if (subs.length === 0) return
  ctx.subqueries = new Map(ctx.subqueries)
  const outerReads = s.reads
  s.reads = outerReads ?? new Map()
  try {
    for (const sub of subs) {
      if (sub.type !== 'select' && sub.type !== 'values' && !isUnion(sub)) throw unsupported(`${sub.type.toUpperCase()} in a subquery`)
      try {
        ctx.subqueries.set(sub, {result: await runSubquery(s, sub, ctx.params, 'probe')})
      } catch (error) {
        if (error instanceof CorrelatedReference && isUnion(sub)) throw unsupported('a UNION subquery that refers to the enclosing query')
        if (!(error instanceof CorrelatedReference) || sub.type !== 'select') throw error
        ctx.subqueries.set(sub, {run: await prepareCorrelated(s, sub, ctx.params)})
      }
    }
  } finally {
    s.reads = outerReads
  }
}

async function runSubquery(s: PgSession, sub: Statement, params: unknown[], outer: EvalCtx['outer']): Promise<QueryResult> {
  if (sub.type === 'values') return valuesResult(sub.values, evalCtx(s, params, []), outer)
  if (isUnion(sub)) return unionResult(s, sub, params, outer)
  if (sub.type !== 'select') throw unsupported(`${sub.type.toUpperCase()} in a subquery`)
  return select(s, sub, params, outer)
}

/** A correlated subquery: its tables read now, whole; the rest runs per outer row. */
async function prepareCorrelated(s: PgSession, st: SelectFromStatement, params: unknown[]): Promise<(row: Row, octx: EvalCtx) => QueryResult> {
  if (st.having && !st.groupBy) throw unsupported('HAVING without GROUP BY')
  const infos: SourceInfo[] = []
  const ctx = evalCtx(s, params, infos)
  ctx.outer = 'probe'
  await prepareSubqueries(s, selectExprs(st), ctx)
  const sources: Source[] = []
  // Set-returning calls whose arguments may name the enclosing row: called again for each one.
  const perRow = new Map<number, From & {type: 'call'}>()
  for (const f of st.from ?? []) {
    let src: Source
    if (f.type === 'table') src = await loadTable(s, f.name.schema, f.name.name, f.name.alias ?? f.name.name, undefined, false, ctx)
    else if (f.type === 'call' && SET_FUNCTIONS.has(f.function.name.toLowerCase()) && !f.withOrdinality) {
      const r = callSetFunction(f.function.name.toLowerCase(), f.args.map(() => null), f.alias?.name, f.alias?.columns?.map((c) => c.name))
      src = {alias: f.alias?.name ?? f.function.name.toLowerCase(), columns: r.columns, declared: r.columns.map((c) => c.name), rows: []}
      perRow.set(sources.length, f)
    } else if (f.type === 'statement') {
      if (f.lateral) throw unsupported('LATERAL subqueries')
      src = await fromSubquery(s, f, params, 'probe').catch((error: unknown) => {
        throw error instanceof CorrelatedReference ? unsupported('a subquery in FROM that refers to the enclosing query') : error
      })
    } else throw unsupported('a table function in a correlated subquery')
    if (sources.length > 0) joinKind(f)
    sources.push(src)
    infos.push(sourceInfo(src, true))
  }
  const from = st.from ?? []
  return (row, octx) => {
    const c: EvalCtx = {...ctx, outer: {ctx: octx, row}}
    let rows: Row[] = from.length === 0 ? [{}] : []
    for (const [i, src] of sources.entries()) {
      const call = perRow.get(i)
      const srcRows = call
        ? callSetFunction(call.function.name.toLowerCase(), call.args.map((a) => evaluate(a, {}, c)), call.alias?.name, call.alias?.columns?.map((x) => x.name)).rows
        : src.rows
      if (i === 0) rows = srcRows.map((r) => ({[src.alias]: r}))
      else rows = joinInMemory(rows, srcRows, src.alias, joinKind(from[i]), from[i].join?.on ?? undefined, c)
    }
    return finishSelect(s, st, rows, sources, c)
  }
}

/** A subquery or VALUES list in FROM, as a source of rows under its alias. */
async function fromSubquery(s: PgSession, f: From & {type: 'statement'}, params: unknown[], outer: EvalCtx['outer']): Promise<Source> {
  const r = await runSubquery(s, f.statement, params, outer)
  const cols = (r.columns ?? []).map((c, i) => ({name: f.columnNames?.[i]?.name ?? c.name, oid: c.oid}))
  if (f.columnNames && f.columnNames.length > cols.length) {
    throw new SqlError('42P10', `table "${f.alias}" has ${cols.length} columns available but ${f.columnNames.length} columns specified`)
  }
  const rows = r.rows.map((vals) => Object.fromEntries(cols.map((c, i) => [c.name, vals[i]])))
  return {alias: f.alias, columns: cols, declared: cols.map((c) => c.name), rows}
}

/** VALUES rows: every row the same length, each column typed from all its values. */
function valuesResult(values: Expr[][], ctx: EvalCtx, outer?: EvalCtx['outer']): QueryResult {
  if (outer) ctx.outer = outer
  const rows = values.map((r) => r.map((e) => evaluate(e, {}, ctx)))
  const n = rows[0]?.length ?? 0
  if (rows.some((r) => r.length !== n)) throw new SqlError('42601', 'VALUES lists must all be the same length')
  const columns = Array.from({length: n}, (_, i) => ({name: `column${i + 1}`, oid: inferOid(rows.map((r) => r[i]), staticOid(values[0][i], () => undefined, ctx.params))}))
  return {columns, rows, tag: `SELECT ${rows.length}`}
}

/** ORDER BY keys of two rows compared as PostgreSQL sorts: NULLs last ascending, first descending. */
function compareOrderKeys(orderBy: NonNullable<SelectFromStatement['orderBy']>, a: unknown[], b: unknown[]): number {
  for (const [i, ob] of orderBy.entries()) {
    const desc = ob.order === 'DESC'
    const x = a[i]
    const y = b[i]
    const nullsFirst = ob.nulls ? ob.nulls === 'FIRST' : desc
    if ((x === null || x === undefined) && (y === null || y === undefined)) continue
    if (x === null || x === undefined) return nullsFirst ? -1 : 1
    if (y === null || y === undefined) return nullsFirst ? 1 : -1
    let c: number
    try {
      c = compareSort(x, y)
    } catch {
      c = String(x) < String(y) ? -1 : String(x) > String(y) ? 1 : 0
    }
    if (c !== 0) return desc ? -c : c
  }
  return 0
}

/** The first of each set of items whose values are equal (DISTINCT, UNION). */
function distinctBy<T>(items: T[], values: (item: T) => unknown[]): T[] {
  const seen = new Set<string>()
  return items.filter((item) => {
    const key = JSON.stringify(values(item))
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

/** OFFSET, then LIMIT (both constant expressions or parameters). */
function applyLimit<T>(items: T[], limit: NonNullable<SelectFromStatement['limit']>, ctx: EvalCtx): T[] {
  const off = limit.offset ? Number(evaluate(limit.offset, {}, ctx) ?? 0) : 0
  const lim = limit.limit ? evaluate(limit.limit, {}, ctx) : null
  if (!Number.isInteger(off) || off < 0) throw new SqlError('2201X', 'OFFSET must not be negative')
  if (lim !== null && (!Number.isInteger(Number(lim)) || Number(lim) < 0)) throw new SqlError('2201W', 'LIMIT must not be negative')
  return items.slice(off, lim === null ? undefined : off + Number(lim))
}

const isUnion = (st: {type: string}): st is SelectFromUnion => st.type === 'union' || st.type === 'union all'

/**
 * The arms of a UNION chain in the order written, and the operator before each arm after the
 * first. The parser nests a chain to the right and keeps no parentheses, so `A UNION (B UNION ALL
 * C)` reads as `A UNION B UNION ALL C`: combined left to right, as PostgreSQL does without them.
 */
function unionArms(st: SelectFromUnion, arms: Statement[] = [], ops: Array<SelectFromUnion['type']> = []): {arms: Statement[]; ops: Array<SelectFromUnion['type']>} {
  if (isUnion(st.left)) unionArms(st.left, arms, ops)
  else arms.push(st.left)
  ops.push(st.type)
  if (isUnion(st.right)) unionArms(st.right, arms, ops)
  else arms.push(st.right)
  return {arms, ops}
}

/** Numeric types unify to the widest of them; other types only with themselves. */
const NUMERIC_OIDS = new Set<number>([OID.int2, OID.int4, OID.int8, OID.numeric, OID.float4, OID.float8])
const STRING_OIDS = new Set<number>([OID.text, OID.varchar, OID.bpchar, OID.name, OID.unknown])
const typeCategory = (oid: number): string => (NUMERIC_OIDS.has(oid) ? 'numeric' : STRING_OIDS.has(oid) ? 'string' : String(oid))

/**
 * UNION and UNION ALL: each arm run as its own query, combined left to right (UNION drops
 * duplicate rows of what it has combined so far), then the ORDER BY, LIMIT and OFFSET written
 * after the last arm applied to the whole result, as PostgreSQL reads them. The columns take
 * their names from the first arm and a type all the arms' values fit.
 */
async function unionResult(s: PgSession, st: SelectFromUnion, params: unknown[], outer?: EvalCtx['outer']): Promise<QueryResult> {
  const {arms, ops} = unionArms(st)
  const last = arms.at(-1) as SelectFromStatement
  const {limit, orderBy} = last
  if (last.type === 'select' && (orderBy || limit)) arms[arms.length - 1] = {...last, limit: undefined, orderBy: undefined}
  const results: QueryResult[] = []
  for (const arm of arms) results.push(await runSubquery(s, arm, params, outer))
  const width = results[0].columns?.length ?? 0
  if (results.some((r) => (r.columns?.length ?? 0) !== width)) throw new SqlError('42601', 'each UNION query must have the same number of columns')
  const columns: Column[] = (results[0].columns ?? []).map((c, i) => {
    const present = results.filter((r) => r.rows.some((row) => row[i] !== null && row[i] !== undefined)).map((r) => r.columns![i].oid)
    for (const oid of present) {
      if (typeCategory(oid) !== typeCategory(present[0])) throw new SqlError('42804', `UNION types ${typeName(present[0])} and ${typeName(oid)} cannot be matched`)
    }
    const same = present.every((oid) => oid === present[0])
    return {name: c.name, oid: present.length === 0 ? c.oid : same ? present[0] : inferOid(results.flatMap((r) => r.rows.map((row) => row[i])), present[0])}
  })
  let rows = results[0].rows
  for (const [k, op] of ops.entries()) {
    rows = rows.concat(results[k + 1].rows)
    if (op === 'union') rows = distinctBy(rows, (row) => row)
  }
  checkCancel(s)
  if (orderBy?.length) {
    // Only output columns, by name or position, as PostgreSQL allows after a UNION.
    const at = orderBy.map((ob) => {
      if (ob.by.type === 'integer') {
        if (ob.by.value < 1 || ob.by.value > width) throw new SqlError('42P10', `ORDER BY position ${ob.by.value} is not in select list`)
        return ob.by.value - 1
      }
      const i = ob.by.type === 'ref' && !ob.by.table ? columns.findIndex((c) => c.name === (ob.by as {name: string}).name) : -1
      if (i === -1) {
        throw new SqlError('0A000', 'invalid UNION/INTERSECT/EXCEPT ORDER BY clause', {detail: 'Only result column names can be used, not expressions or functions.'})
      }
      return i
    })
    rows = rows
      .map((row) => ({keys: at.map((i) => row[i]), row}))
      .sort((a, b) => compareOrderKeys(orderBy, a.keys, b.keys))
      .map((k) => k.row)
  }
  if (limit) rows = applyLimit(rows, limit, evalCtx(s, params, []))
  return {columns, rows, tag: `SELECT ${rows.length}`}
}

/** WHERE, grouping, the select list, DISTINCT, ORDER BY and LIMIT over the rows FROM produced. */
function finishSelect(s: PgSession, st: SelectFromStatement, rowsIn: Row[], sources: Source[], ctx: EvalCtx): QueryResult {
  let rows = rowsIn
  if (st.where) rows = rows.filter((r) => evaluate(st.where as Expr, r, ctx) === true)
  checkCancel(s)

  const grouped = Boolean(st.groupBy?.length) || (st.columns ?? []).some((c) => isAggregate(c.expr)) || Boolean(st.having)
  const cols = expandColumns(st.columns ?? [], sources, ctx.params)
  for (const c of cols) {
    // A scalar subquery's column has the type of the subquery's own column.
    const sub = isSubquery(c.expr) ? ctx.subqueries?.get(c.expr)?.result?.columns?.[0] : undefined
    if (sub) c.oid = sub.oid
  }
  if (grouped) checkGrouping(st, cols, sources)
  type Out = {key: Row; outputs: unknown[]; group?: Row[]}
  const setCalls = setCallsIn(st.columns)
  const exprs = setCalls.length === 0 ? [] : cols.map((c) => c.expr)
  const budget = {rows: 0}
  let outs: Out[] = []
  if (grouped) {
    const groups = new Map<string, Row[]>()
    for (const r of rows) {
      const k = JSON.stringify((st.groupBy ?? []).map((g) => groupValue(g, r, ctx, cols)))
      const list = groups.get(k)
      if (list) list.push(r)
      else groups.set(k, [r])
    }
    if (groups.size === 0 && !st.groupBy?.length) groups.set('[]', [])
    for (const g of groups.values()) {
      const gctx = {...ctx, group: g}
      const rep = g[0] ?? {}
      if (st.having && evaluate(st.having, rep, gctx) !== true) continue
      if (setCalls.length === 0) outs.push({group: g, key: rep, outputs: cols.map((c) => evaluate(c.expr, rep, gctx))})
      else outs.push(...expandSetCalls(setCalls, exprs, rep, gctx, budget, (outputs) => ({group: g, key: rep, outputs})))
    }
  } else if (setCalls.length === 0) {
    outs = rows.map((r) => ({key: r, outputs: cols.map((c) => evaluate(c.expr, r, ctx))}))
  } else {
    outs = rows.flatMap((r) => expandSetCalls(setCalls, exprs, r, ctx, budget, (outputs) => ({key: r, outputs})))
  }

  if (st.distinct === 'distinct') outs = distinctBy(outs, (o) => o.outputs)
  if (st.orderBy?.length) {
    const keyed = outs.map((o) => {
      const outputs = new Map(cols.map((c, i) => [c.name, o.outputs[i]]))
      const octx: EvalCtx = {...ctx, group: o.group, outputs}
      const keys = st.orderBy!.map((ob) => {
        if (ob.by.type === 'integer') {
          const v = o.outputs[ob.by.value - 1]
          if (ob.by.value < 1 || ob.by.value > cols.length) throw new SqlError('42P10', `ORDER BY position ${ob.by.value} is not in select list`)
          return v
        }
        if (ob.by.type === 'ref' && !ob.by.table && outputs.has(ob.by.name)) return outputs.get(ob.by.name)
        return evaluate(ob.by, o.key, octx)
      })
      return {keys, o}
    })
    keyed.sort((a, b) => compareOrderKeys(st.orderBy!, a.keys, b.keys))
    outs = keyed.map((k) => k.o)
  }
  if (st.limit) outs = applyLimit(outs, st.limit, ctx)
  const resultRows = outs.map((o) => o.outputs)
  const columns = cols.map((c, i) => ({name: c.name, oid: c.oid ?? inferOid(resultRows.map((r) => r[i]), c.fallbackOid ?? staticOid(c.expr, () => undefined, ctx.params))}))
  return {columns, rows: resultRows, tag: `SELECT ${resultRows.length}`}
}

/**
 * PostgreSQL's rule for grouped queries: every column used outside an aggregate is grouped, or
 * belongs to a table whose id (its primary key) is grouped. Anything else is 42803 rather than
 * some row's value.
 */
function checkGrouping(st: SelectFromStatement, cols: OutCol[], sources: Source[]): void {
  const sourceOf = (e: Expr & {type: 'ref'}): string | undefined =>
    e.table?.name ?? (sources.length === 1 ? sources[0].alias : sources.find((x) => x.columns?.some((c) => c.name === e.name))?.alias)
  const groupExprs = (st.groupBy ?? []).map((g) => (g.type === 'integer' ? cols[g.value - 1]?.expr : g.type === 'ref' && !g.table && !sources.some((x) => x.columns?.some((c) => c.name === g.name)) ? (cols.find((c) => c.name === g.name)?.expr ?? g) : g))
  const shapes = new Set(groupExprs.map((g) => JSON.stringify(g)))
  const refs = new Set<string>()
  const keyed = new Set<string>()
  for (const g of groupExprs) {
    if (g?.type !== 'ref') continue
    const src = sourceOf(g)
    refs.add(`${src}.${g.name}`)
    if (g.name === 'id' && src) keyed.add(src)
  }
  const outputs = new Set(cols.map((c) => c.name))
  const check = (e: Expr, orderBy: boolean): void => {
    // A subquery's own columns are its business (its outer references are rare enough to trust).
    if (isSubquery(e) || shapes.has(JSON.stringify(e))) return
    if (e.type === 'call' && isAggregate({...e, args: []})) return
    if (e.type === 'ref') {
      if (e.name === '*' || (orderBy && !e.table && outputs.has(e.name))) return
      const src = sourceOf(e)
      if (!src || keyed.has(src) || refs.has(`${src}.${e.name}`)) return
      throw new SqlError('42803', `column "${src}.${e.name}" must appear in the GROUP BY clause or be used in an aggregate function`)
    }
    visit(Object.values(e), orderBy)
  }
  // Sub-expressions sit in arrays and plain objects (CASE's whens, ORDER BY items) of the node.
  const visit = (x: unknown, orderBy: boolean): void => {
    if (Array.isArray(x)) for (const y of x) visit(y, orderBy)
    else if (x && typeof x === 'object') {
      if (typeof (x as {type?: unknown}).type === 'string') check(x as Expr, orderBy)
      else visit(Object.values(x), orderBy)
    }
  }
  for (const c of cols) check(c.expr, false)
  if (st.having) check(st.having, false)
  for (const o of st.orderBy ?? []) if (o.by.type !== 'integer') check(o.by, true)
}

/** When a plain filtered LIMIT query can stop reading the table early. */
function earlyStop(st: SelectFromStatement, alias: string, ctx: EvalCtx): EarlyStop | undefined {
  if (!st.limit?.limit || st.orderBy?.length || st.groupBy?.length || st.having || st.distinct) return undefined
  if ((st.columns ?? []).some((c) => isAggregate(c.expr))) return undefined
  // A row may give no row at all through a set-returning call in the select list.
  if (setCallsIn(st.columns).length > 0) return undefined
  const lim = Number(evaluate(st.limit.limit, {}, ctx))
  const off = st.limit.offset ? Number(evaluate(st.limit.offset, {}, ctx)) : 0
  if (!Number.isInteger(lim) || !Number.isInteger(off) || lim < 0 || off < 0) return undefined
  const where = st.where
  const sctx: EvalCtx = {...ctx, sources: [{alias}]}
  return {stop: lim + off, test: where ? (row) => evaluate(where, {[alias]: row}, sctx) === true : () => true}
}

function compareSort(x: unknown, y: unknown): number {
  if (typeof x === 'number' && typeof y === 'number') return x - y
  if (typeof x === 'string' && typeof y === 'string') return x < y ? -1 : x > y ? 1 : 0
  if (typeof x === 'object' || typeof y === 'object') return compareMixed(x, y)
  if (typeof x === 'number' || typeof y === 'number') {
    const a = Number(x)
    const b = Number(y)
    if (!Number.isNaN(a) && !Number.isNaN(b)) return a - b
  }
  const a = typeof x === 'string' ? x : JSON.stringify(x)
  const b = typeof y === 'string' ? y : JSON.stringify(y)
  return a < b ? -1 : a > b ? 1 : 0
}

function groupValue(g: Expr, r: Row, ctx: EvalCtx, cols: OutCol[]): unknown {
  if (g.type === 'integer') return evaluate(cols[g.value - 1]?.expr ?? g, r, ctx)
  if (g.type === 'ref' && !g.table) {
    const c = cols.find((x) => x.name === g.name && !(x.expr.type === 'ref' && x.expr.name === g.name))
    if (c && !ctx.sources.some((s) => s.columns?.includes(g.name))) return evaluate(c.expr, r, ctx)
  }
  return evaluate(g, r, ctx)
}

/**
 * How a join can fetch only the matching rows of its right side: `right.id = <expr>`, or
 * `right.col = <expr>` with a secondary index on `col`. `other` is the expression on the left rows.
 */
async function joinLookup(
  s: PgSession,
  on: Expr | undefined,
  alias: string,
  branch: string,
  table: string,
): Promise<undefined | {field?: string; index?: string; other: Expr}> {
  let indexes: Awaited<ReturnType<Engine['indexes']>> | undefined
  const mine = (e: Expr): boolean => e.type === 'ref' && e.table?.name === alias
  const usesAlias = (x: unknown): boolean => {
    if (!x || typeof x !== 'object') return false
    const o = x as {table?: {name?: string}; type?: string}
    if (o.type === 'ref' && o.table?.name === alias) return true
    return Object.values(x).some((v) => usesAlias(v))
  }
  for (const c of splitAnd(on)) {
    if (c.type !== 'binary' || c.op !== '=') continue
    const [side, other] = mine(c.left) ? [c.left, c.right] : mine(c.right) ? [c.right, c.left] : [undefined, undefined]
    if (!side || !other || side.type !== 'ref' || usesAlias(other)) continue
    if (side.name === 'id') return {other}
    indexes ??= await s.engine.indexes({branch, table}).catch(() => [])
    const idx = indexes.find((i) => i.field === side.name && !i.error)
    if (idx) return {field: side.name, index: idx.name, other}
  }
  return undefined
}

async function joinRows(s: PgSession, left: Row[], right: Source, kind: string, on: Expr | undefined, ctx: EvalCtx): Promise<Row[]> {
  // Fetch only the documents the left rows can match instead of the whole table.
  let candidates: RowObj[] | undefined
  const how = right.table && right.branch ? await joinLookup(s, on, right.alias, right.branch, right.table) : undefined
  if (how && right.table && right.branch) {
    const branch = right.branch
    const table = right.table
    const values = new Map<string, unknown>()
    for (const r of left) {
      const v = evaluate(how.other, r, ctx)
      if (v !== null && v !== undefined) values.set(keyText(v), v)
    }
    let ids: string[] | undefined
    if (how.field === undefined) ids = [...values.keys()].map((k) => `${table}:${k}`)
    else {
      const found = new Set<string>()
      for (const v of values.values()) {
        const got = await s.engine.findIds(table, how.field, v as Json, {branch})
        if (got === undefined) {
          found.clear()
          ids = undefined
          break
        }
        for (const id of got) found.add(id)
        ids = [...found]
      }
      ids ??= values.size === 0 ? [] : undefined
      const tx = txOf(s, branch)
      if (ids && tx) {
        for (const id of tx.written) if (id.startsWith(`${table}:`)) ids.push(id)
        ids = [...new Set(ids)].sort()
      }
    }
    if (ids) {
      const docs = await getDocs(s, branch, ids)
      candidates = docs.filter((d): d is Doc => Boolean(d)).map((d) => toRow(d, table, right.columns?.find((c) => c.name === 'id')?.oid, typingOf(right.columns)))
    }
  }
  if (!candidates && right.lazy && right.table && right.branch) {
    const idOid = right.columns?.find((c) => c.name === 'id')?.oid
    candidates = (await listAll(s, right.branch, right.table)).map((d) => toRow(d, right.table as string, idOid, typingOf(right.columns)))
  }
  return joinInMemory(left, candidates ?? right.rows, right.alias, kind, on, ctx)
}

function joinInMemory(left: Row[], rightRows: RowObj[], alias: string, kind: string, on: Expr | undefined, ctx: EvalCtx): Row[] {
  const out: Row[] = []
  for (const l of left) {
    let matched = false
    for (const r of rightRows) {
      const row = {...l, [alias]: r}
      if (!on || evaluate(on, row, ctx) === true) {
        out.push(row)
        matched = true
      }
    }
    if (!matched && kind === 'LEFT JOIN') out.push({...l, [alias]: null})
  }
  return out
}

interface OutCol {
  expr: Expr
  fallbackOid?: number
  name: string
  oid?: number
}

function expandColumns(columns: SelectedColumn[], sources: Source[], params?: unknown[]): OutCol[] {
  const out: OutCol[] = []
  for (const c of columns) {
    if (c.expr.type === 'ref' && c.expr.name === '*') {
      const qual = c.expr.table?.name
      const wanted = qual ? sources.filter((s) => s.alias === qual) : sources
      if (qual && wanted.length === 0) throw new SqlError('42P01', `missing FROM-clause entry for table "${qual}"`)
      for (const s of wanted) {
        for (const col of sourceColumns(s)) {
          out.push({expr: {name: col.name, table: {name: s.alias}, type: 'ref'}, name: col.name, oid: col.oid})
        }
      }
      continue
    }
    const name = c.alias?.name ?? columnName(c.expr)
    let fallbackOid: number | undefined
    if (c.expr.type === 'ref') {
      const ref = c.expr
      const src = sources.find((s) => (ref.table ? s.alias === ref.table.name : s.columns?.some((x) => x.name === ref.name)))
      fallbackOid = src?.columns?.find((x) => x.name === ref.name)?.oid
    }
    if (c.expr.type === 'cast' && c.expr.to.kind !== 'array') fallbackOid = oidOfTypeName(c.expr.to.name)
    fallbackOid ??= staticOid(c.expr, (table, col) => sources.find((s) => (table ? s.alias === table : s.columns?.some((x) => x.name === col)))?.columns?.find((x) => x.name === col)?.oid, params)
    // A declared column's values were converted to its type on write: its type is the column's.
    let oid: number | undefined = c.expr.type === 'ref' ? fallbackOid : undefined
    if (c.expr.type === 'call' && c.expr.function.name.toLowerCase() === 'count') oid = OID.int8
    if (c.expr.type === 'call') oid = catalogFunctionOid(c.expr.function.name.toLowerCase()) ?? oid
    if ((c.expr.type === 'call' && c.expr.function.name.toLowerCase() === 'current_schema') || (c.expr.type === 'keyword' && c.expr.keyword === 'current_schema')) oid = OID.name
    if (c.expr.type === 'cast' && c.expr.to.kind !== 'array') oid = oidOfTypeName(c.expr.to.name)
    out.push({expr: c.expr, fallbackOid, name, oid})
  }
  return out
}

function sourceColumns(s: Source): Column[] {
  if (s.columns) return s.columns
  const seen = new Map<string, unknown[]>()
  seen.set('id', [])
  for (const r of s.rows) {
    for (const [k, v] of Object.entries(r)) {
      if (!seen.has(k)) seen.set(k, [])
      seen.get(k)?.push(v)
    }
  }
  if (s.rows.length > 0 && !s.rows.some((r) => 'id' in r)) seen.delete('id')
  return [...seen].map(([name, vals]) => ({name, oid: inferOid(vals)}))
}

// -----------------------------------------------------------------------------------------
// INSERT / UPDATE / DELETE

function targetOf(s: PgSession, name: {name: string; schema?: string}): {branch: string; table: string} {
  if (name.schema === 'pg_catalog' || name.schema === 'information_schema') throw new SqlError('42501', `permission denied: ${name.schema} is read-only`)
  if (name.name === SCHEMA_TABLE) throw new SqlError('42501', `permission denied for table ${SCHEMA_TABLE}: use CREATE TABLE / DROP TABLE`)
  // Tables starting with _ belong to the engine and the catalog (SVC-CONTRACT.md: reserved ids).
  if (name.name.startsWith('_')) throw new SqlError('42501', `table "${name.name}" is reserved for svc's own data`)
  return {branch: branchOf(s, name.schema), table: name.name}
}

function makeDoc(table: string, row: RowObj, def: TableDef | undefined): Doc {
  const key = row.id
  if (key === null || key === undefined || key === '') throw new SqlError('23502', `null value in column "id" of relation "${table}" violates not-null constraint`)
  const idCol = def?.columns.find((c) => c.name === 'id')
  const doc: Doc = {id: `${table}:${keyText(idCol ? coerce(key, oidOfTypeName(idCol.type)) : key)}`}
  for (const [k, v] of Object.entries(row)) {
    if (k === 'id') continue
    const col = def?.columns.find((c) => c.name === k)
    if (def && !col) throw new SqlError('42703', `column "${k}" of relation "${table}" does not exist`)
    if (col?.notNull && (v === null || v === undefined)) throw new SqlError('23502', `null value in column "${k}" of relation "${table}" violates not-null constraint`)
    doc[k] = (col ? coerce(v, oidOfTypeName(col.type)) : stored(v)) as Json
  }
  if (def) {
    for (const c of def.columns) {
      if (c.notNull && c.name !== 'id' && (doc[c.name] === null || doc[c.name] === undefined)) {
        throw new SqlError('23502', `null value in column "${c.name}" of relation "${table}" violates not-null constraint`)
      }
    }
  }
  return doc
}

async function returning(
  s: PgSession,
  cols: SelectedColumn[] | null | undefined,
  alias: string,
  rows: RowObj[],
  def: TableDef | undefined,
  params: unknown[],
): Promise<Pick<QueryResult, 'columns' | 'rows'>> {
  if (!cols) return {rows: []}
  const src: Source = {alias, declared: def ? ['id', ...def.columns.map((c) => c.name)] : undefined, rows}
  if (def) src.columns = [{name: 'id', oid: idOidOf(def)}, ...def.columns.filter((c) => c.name !== 'id').map((c) => ({name: c.name, oid: oidOfTypeName(c.type)}))]
  const ctx = evalCtx(s, params, [{alias, columns: src.declared}])
  await prepareSubqueries(s, cols, ctx)
  const out = expandColumns(cols, [src])
  const data = rows.map((r) => out.map((c) => evaluate(c.expr, {[alias]: r}, ctx)))
  return {columns: out.map((c, i) => ({name: c.name, oid: c.oid ?? inferOid(data.map((d) => d[i]), c.fallbackOid)})), rows: data}
}

async function insert(s: PgSession, st: InsertStatement, params: unknown[]): Promise<QueryResult> {
  const {branch, table} = targetOf(s, st.into)
  const alias = st.into.alias ?? table
  const def = await tableDef(s, branch, table)
  let names = st.columns?.map((c) => c.name)
  if (!names) {
    if (!def) throw new SqlError('42601', `INSERT INTO ${table} needs a column list: the table has no declared columns (create it with CREATE TABLE)`)
    names = ['id', ...def.columns.map((c) => c.name).filter((n) => n !== 'id')]
  }
  const ctx = evalCtx(s, params, [])
  let tuples: unknown[][]
  if (st.insert.type === 'values') {
    await prepareSubqueries(s, st.insert.values, ctx)
    tuples = st.insert.values.map((vals) => vals.map((v) => (v.type === 'default' ? undefined : evaluate(v, {}, ctx))))
  } else if (st.insert.type === 'select') {
    tuples = (await select(s, st.insert, params)).rows
  } else if (isUnion(st.insert)) {
    tuples = (await unionResult(s, st.insert, params)).rows
  } else throw unsupported('INSERT from this kind of query')
  const rows: RowObj[] = []
  for (const t of tuples) {
    if (t.length !== names.length) throw new SqlError('42601', `INSERT has ${t.length > names.length ? 'more' : 'fewer'} expressions than target columns`)
    const row: RowObj = {}
    for (const [i, n] of names.entries()) if (t[i] !== undefined) row[n] = t[i]
    if (row.id === undefined) row.id = randomUUID()
    rows.push(row)
  }
  const docs = rows.map((r) => makeDoc(table, r, def))
  const seen = new Set<string>()
  for (const d of docs) {
    if (seen.has(d.id)) throw duplicate(table, d.id)
    seen.add(d.id)
  }
  const existing = await getDocs(
    s,
    branch,
    docs.map((d) => d.id),
  )
  const ops: BatchOp[] = []
  const written: RowObj[] = []
  for (const [i, d] of docs.entries()) {
    const old = existing[i]
    if (!old) {
      ops.push({doc: d, op: 'put'})
      written.push(toRow(d, table, idOidOf(def), typingOf(defColumns(def))))
      continue
    }
    if (!st.onConflict) throw duplicate(table, d.id)
    if (st.onConflict.do === 'do nothing') continue
    const oldRow = toRow(old, table)
    const uctx = evalCtx(s, params, [{alias}, {alias: 'excluded'}])
    const rowCtx: Row = {[alias]: oldRow, excluded: toRow(d, table)}
    if (st.onConflict.where && evaluate(st.onConflict.where, rowCtx, uctx) !== true) continue
    const next: RowObj = {...oldRow}
    for (const set of st.onConflict.do.sets) {
      if (set.column.name === 'id') throw unsupported('changing id in ON CONFLICT DO UPDATE')
      next[set.column.name] = evaluate(set.value, rowCtx, uctx)
    }
    const nd = {...stripKeep(old), ...makeDoc(table, next, def)}
    ops.push({doc: nd, op: 'put'})
    written.push(toRow(nd, table, idOidOf(def), typingOf(defColumns(def))))
  }
  await write(s, branch, ops)
  const ret = await returning(s, st.returning, alias, written, def, params)
  return {...ret, tag: `INSERT 0 ${written.length}`}
}

/** Bookkeeping fields (Redis type, TTL) of a document survive SQL updates. */
function stripKeep(doc: Doc): Doc {
  const keep: Doc = {id: doc.id}
  for (const k of HIDDEN) if (k in doc) keep[k] = doc[k]
  return keep
}

function duplicate(table: string, id: string): SqlError {
  return new SqlError('23505', `duplicate key value violates unique constraint "${table}_pkey"`, {detail: `Key (id)=(${id.slice(table.length + 1)}) already exists.`})
}

/** The rows UPDATE or DELETE change; `exprs` are the statement's other expressions that may hold subqueries. */
async function matching(s: PgSession, name: {alias?: string; name: string; schema?: string}, where: Expr | null | undefined, params: unknown[], exprs?: unknown) {
  const {branch, table} = targetOf(s, name)
  const alias = name.alias ?? table
  const infos: SourceInfo[] = []
  const ctx = evalCtx(s, params, infos)
  await prepareSubqueries(s, [where, exprs], ctx)
  const src = await loadTable(s, name.schema, table, alias, where, true, ctx)
  infos.push({alias, columns: src.declared})
  if (src.ftsFromIndex) ctx.ftsFromIndex = true
  // UPDATE/DELETE's WHERE in slices too: the rows it reads can be a whole table.
  const rows = where ? await filterSliced(src.rows, (r) => evaluate(where, {[alias]: r}, ctx) === true, s) : src.rows
  return {alias, branch, ctx, rows, table}
}

async function update(s: PgSession, st: UpdateStatement, params: unknown[]): Promise<QueryResult> {
  if (st.from) throw unsupported('UPDATE ... FROM')
  const {alias, branch, ctx, rows, table} = await matching(s, st.table, st.where, params, st.sets)
  const def = await tableDef(s, branch, table)
  for (const set of st.sets) if (set.column.name === 'id') throw unsupported('changing the id of a row (insert a new row and delete the old one)')
  const olds = await getDocs(
    s,
    branch,
    rows.map((r) => `${table}:${keyText(r.id)}`),
  )
  const ops: BatchOp[] = []
  const written: RowObj[] = []
  for (const [i, r] of rows.entries()) {
    const next: RowObj = {...r}
    for (const set of st.sets) next[set.column.name] = set.value.type === 'default' ? null : evaluate(set.value, {[alias]: r}, ctx)
    const old = olds[i]
    const d = {...(old ? stripKeep(old) : {}), ...makeDoc(table, next, def)}
    ops.push({doc: d, op: 'put'})
    written.push(toRow(d, table, idOidOf(def), typingOf(defColumns(def))))
  }
  await write(s, branch, ops)
  const ret = await returning(s, st.returning, alias, written, def, params)
  return {...ret, tag: `UPDATE ${written.length}`}
}

async function del(s: PgSession, st: DeleteStatement, params: unknown[]): Promise<QueryResult> {
  const {alias, branch, rows, table} = await matching(s, st.from, st.where, params)
  const def = await tableDef(s, branch, table)
  await write(
    s,
    branch,
    rows.map((r) => ({id: `${table}:${keyText(r.id)}`, op: 'delete'})),
  )
  const ret = await returning(s, st.returning, alias, rows, def, params)
  return {...ret, tag: `DELETE ${rows.length}`}
}

// -----------------------------------------------------------------------------------------
// DDL

function typeText(t: CreateTableStatement['columns'][number]): string {
  if (!('dataType' in t)) throw unsupported('CREATE TABLE ... LIKE')
  const dt = t.dataType
  if (dt.kind !== 'array') {
    if (isTimeOfDayType(dt.name)) throw unsupported(`a column of type ${dt.name}`)
    return dt.name
  }
  // int[] and int[][] are the same type in PostgreSQL; svc keeps one dimension.
  let el = dt.arrayOf
  while (el.kind === 'array') el = el.arrayOf
  if (isTimeOfDayType(el.name)) throw unsupported(`a column of type ${el.name}[]`)
  return `${el.name}[]`
}

async function createTable(s: PgSession, st: CreateTableStatement): Promise<QueryResult> {
  const {branch, table} = targetOf(s, st.name)
  if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/.test(table) || table.startsWith('_pg_')) {
    throw new SqlError('42602', `invalid table name "${table}": use letters, digits, _ . - (at most 64)`)
  }
  if (await tableDef(s, branch, table)) {
    if (st.ifNotExists) return {rows: [], tag: 'CREATE TABLE'}
    throw new SqlError('42P07', `relation "${table}" already exists`)
  }
  const columns: TableDef['columns'] = []
  for (const c of st.columns) {
    if (!('name' in c)) throw unsupported('CREATE TABLE ... LIKE')
    const notNull = (c.constraints ?? []).some((k) => k.type === 'not null' || k.type === 'primary key')
    if (columns.some((x) => x.name === c.name.name)) throw new SqlError('42701', `column "${c.name.name}" specified more than once`)
    columns.push({name: c.name.name, notNull: notNull || undefined, type: typeText(c)})
  }
  if (!columns.some((c) => c.name === 'id')) columns.unshift({name: 'id', notNull: true, type: 'text'})
  const doc: Doc = {columns: columns as unknown as Json, id: `${SCHEMA_TABLE}:${table}`}
  forgetDef(s, branch, table)
  await write(s, branch, [{doc, op: 'put'}])
  forgetDef(s, branch, table)
  return {rows: [], tag: 'CREATE TABLE'}
}

async function createIndex(s: PgSession, st: CreateIndexStatement): Promise<QueryResult> {
  const {branch, table} = targetOf(s, st.table)
  if (st.unique) throw unsupported('UNIQUE indexes (only id is unique)')
  if (st.where) throw unsupported('partial indexes (CREATE INDEX ... WHERE)')
  const e = st.expressions[0]?.expression
  if (st.expressions.length !== 1 || e?.type !== 'ref' || e.name === '*') throw unsupported('indexes on expressions or on several columns (index one column)')
  if (st.using && !['btree', 'hash'].includes(st.using.name.toLowerCase())) throw unsupported(`index method ${st.using.name}`)
  if (e.name === 'id') throw new SqlError('42P07', `the primary key "${table}_pkey" already indexes id`)
  const def = await tableDef(s, branch, table)
  if (!def && !(await tableExists(s, branch, table))) throw noTable(table)
  if (def && !def.columns.some((c) => c.name === e.name)) throw new SqlError('42703', `column "${e.name}" does not exist`)
  const name = st.indexName?.name
  await s.engine.createIndex(table, e.name, {branch, ifNotExists: Boolean(st.ifNotExists), name}).catch((error: unknown) => {
    const err = fromEngine(error)
    throw (error as {code?: string}).code === 'conflict' ? new SqlError('42P07', `relation "${name}" already exists`) : err
  })
  return {rows: [], tag: 'CREATE INDEX'}
}

async function dropTable(s: PgSession, names: Array<{name: string; schema?: string}>, ifExists: boolean): Promise<QueryResult> {
  for (const n of names) {
    const {branch, table} = targetOf(s, n)
    const def = await tableDef(s, branch, table)
    const docs = await listAll(s, branch, table)
    if (!def && docs.length === 0) {
      if (ifExists) continue
      throw new SqlError('42P01', `table "${table}" does not exist`)
    }
    const ops: BatchOp[] = docs.map((d) => ({id: d.id, op: 'delete'}))
    if (def) ops.push({id: `${SCHEMA_TABLE}:${table}`, op: 'delete'})
    forgetDef(s, branch, table)
    await write(s, branch, ops)
    forgetDef(s, branch, table)
    // As in PostgreSQL, a table's indexes go with it.
    for (const i of await s.engine.indexes({branch, table})) await s.engine.dropIndex(i.name, {branch, ifExists: true})
  }
  return {rows: [], tag: 'DROP TABLE'}
}

// -----------------------------------------------------------------------------------------

const SHOW_DEFAULTS: Record<string, string> = {
  application_name: '',
  client_encoding: 'UTF8',
  datestyle: 'ISO, MDY',
  default_transaction_isolation: 'read committed',
  integer_datetimes: 'on',
  intervalstyle: 'postgres',
  is_superuser: 'on',
  lc_collate: 'C.UTF-8',
  lc_ctype: 'C.UTF-8',
  max_identifier_length: '63',
  search_path: '"$user", public',
  server_encoding: 'UTF8',
  server_version: '15.0',
  server_version_num: '150000',
  standard_conforming_strings: 'on',
  statement_timeout: '0',
  timezone: 'UTC',
  transaction_isolation: 'read committed',
  transaction_read_only: 'off',
}

/** Settings PostgreSQL names in mixed case: SHOW titles its column with that name. */
const SETTING_NAMES: Record<string, string> = {datestyle: 'DateStyle', intervalstyle: 'IntervalStyle', timezone: 'TimeZone'}

/** Every setting a session sees: PostgreSQL's defaults under the session's own (pg_settings). */
export function settingsOf(s: PgSession): Map<string, string> {
  return new Map([...Object.entries(SHOW_DEFAULTS), ...s.settings])
}

export function showValue(s: PgSession, name: string): string | undefined {
  const n = name.toLowerCase()
  return s.settings.get(n) ?? SHOW_DEFAULTS[n]
}

/** Runs one statement. Transactions are handled by the caller (session), not here. */
export async function executeStatement(s: PgSession, st: Statement, params: unknown[]): Promise<QueryResult> {
  switch (st.type) {
    case 'select': {
      return select(s, st, params)
    }
    case 'union':
    case 'union all': {
      return unionResult(s, st, params)
    }
    case 'insert': {
      return insert(s, st, params)
    }
    case 'update': {
      return update(s, st, params)
    }
    case 'delete': {
      return del(s, st, params)
    }
    case 'create table': {
      return createTable(s, st)
    }
    case 'drop table': {
      return dropTable(s, st.names, Boolean(st.ifExists))
    }
    case 'create index': {
      return createIndex(s, st)
    }
    case 'drop index': {
      for (const n of st.names) {
        await s.engine.dropIndex(n.name, {branch: branchOf(s, n.schema), ifExists: Boolean(st.ifExists)}).catch((error: unknown) => {
          const e = fromEngine(error)
          throw e.code === '42704' ? new SqlError('42704', `index "${n.name}" does not exist`) : e
        })
      }
      return {rows: [], tag: 'DROP INDEX'}
    }
    case 'truncate table': {
      for (const n of st.tables) {
        const {branch, table} = targetOf(s, n)
        if (!(await tableExists(s, branch, table))) throw noTable(table)
        const docs = await listAll(s, branch, table)
        await write(
          s,
          branch,
          docs.map((d) => ({id: d.id, op: 'delete'})),
        )
      }
      return {rows: [], tag: 'TRUNCATE TABLE'}
    }
    case 'create schema': {
      const name = st.name.name
      const exists = (await s.engine.branches()).some((b) => b.name === name)
      if (exists || name === 'public') {
        if (st.ifNotExists) return {rows: [], tag: 'CREATE SCHEMA'}
        throw new SqlError('42P06', `schema "${name}" already exists`)
      }
      await s.engine.createBranch(name, {from: branchOf(s)}).catch((error: unknown) => {
        throw fromEngine(error)
      })
      return {rows: [], tag: 'CREATE SCHEMA'}
    }
    case 'show': {
      const v = showValue(s, st.variable.name)
      if (v === undefined) throw new SqlError('42704', `unrecognized configuration parameter "${st.variable.name}"`)
      const lower = st.variable.name.toLowerCase()
      return {columns: [{name: SETTING_NAMES[lower] ?? lower, oid: OID.text}], rows: [[v]], tag: 'SHOW'}
    }
    case 'set': {
      const name = st.variable.name.toLowerCase()
      const v = st.set
      let value: string
      if (v.type === 'default') value = SHOW_DEFAULTS[name] ?? ''
      else if (v.type === 'list') value = v.values.map((x) => (x.type === 'value' ? String(x.value) : x.name)).join(', ')
      else value = v.type === 'value' ? String(v.value) : v.name
      if (name === 'search_path') {
        const first = value
          .split(',')
          .map((x) => x.trim().replaceAll('"', ''))
          .find((x) => x && x !== '$user')
        if (first && first !== 'public' && !(await s.engine.branches()).some((b) => b.name === first)) {
          throw new SqlError('3F000', `schema "${first}" does not exist`, {hint: `schemas are branches: CREATE SCHEMA ${first} makes one`})
        }
      }
      s.settings.set(name, value)
      return {rows: [], tag: 'SET'}
    }
    case 'set timezone': {
      s.settings.set('timezone', st.to.type === 'value' ? String(st.to.value) : 'UTC')
      return {rows: [], tag: 'SET'}
    }
    case 'set names': {
      return {rows: [], tag: 'SET'}
    }
    case 'values': {
      const ctx = evalCtx(s, params, [])
      await prepareSubqueries(s, st.values, ctx)
      return valuesResult(st.values, ctx)
    }
    default: {
      throw unsupported(`${st.type} statements`)
    }
  }
}

/**
 * EXPLAIN: the access path each table gets (id lookup, full-text index, scan with or without an
 * early stop), so users can check that a query does not read the whole table.
 */
export async function explain(s: PgSession, st: Statement, params: unknown[]): Promise<QueryResult> {
  const lines: string[] = []
  const ctx = evalCtx(s, params, [])
  const access = async (schema: string | undefined, table: string, alias: string, where: Expr | null | undefined, single: boolean, indent: string, early?: EarlyStop) => {
    // The same planner as execution; EXPLAIN without parameter values falls back to the scan line.
    const path = await planAccess({alias, branch: branchOf(s, schema), cancel: s, ctx, early, engine: s.engine, single, table, where}).catch(() => undefined)
    lines.push(indent + describeAccess(path ?? {early, kind: 'scan'}, table, alias))
  }
  if (st.type === 'select') {
    const from = st.from ?? []
    if (st.limit) lines.push('Limit')
    if (st.orderBy?.length) lines.push('  Sort')
    if (st.groupBy?.length || (st.columns ?? []).some((c) => isAggregate(c.expr))) lines.push('  Aggregate')
    for (const [i, f] of from.entries()) {
      if (f.type === 'table') {
        const alias = f.name.alias ?? f.name.name
        if (i === 0) await access(f.name.schema, f.name.name, alias, st.where, from.length === 1, '  ', from.length === 1 ? safe(() => earlyStop(st, alias, ctx)) : undefined)
        else {
          const how = await joinLookup(s, f.join?.on ?? undefined, alias, branchOf(s, f.name.schema), f.name.name).catch(() => undefined)
          const path = how === undefined ? `Table Scan on ${f.name.name}` : how.index ? `Index Lookup using ${how.index} on ${f.name.name} (${how.field})` : `Id Lookup on ${f.name.name} (engine getMany)`
          lines.push(`  ${f.join?.type ?? 'CROSS JOIN'} ${path}`)
        }
      } else if (f.type === 'call') lines.push(`  Function ${f.function.name}()`)
    }
    if (from.length === 0) lines.push('  Result')
  } else if (st.type === 'update' || st.type === 'delete') {
    const name = st.type === 'update' ? st.table : st.from
    lines.push(st.type === 'update' ? 'Update' : 'Delete')
    await access(name.schema, name.name, name.alias ?? name.name, st.where, true, '  ')
  } else if (st.type === 'insert') {
    lines.push(`Insert on ${st.into.name}  (one commit)`)
  } else {
    throw unsupported(`EXPLAIN of ${st.type}`)
  }
  return {columns: [{name: 'QUERY PLAN', oid: OID.text}], rows: lines.map((l) => [l]), tag: 'EXPLAIN'}
}

function safe<T>(fn: () => T): T | undefined {
  try {
    return fn()
  } catch {
    return undefined
  }
}

/** Columns a statement will return, without running it (for Describe of a prepared statement). */
export function describesRows(st: Statement): boolean {
  if (st.type === 'select' || st.type === 'values' || st.type === 'show' || isUnion(st)) return true
  if (st.type === 'insert' || st.type === 'update' || st.type === 'delete') return Boolean(st.returning)
  return false
}
