/**
 * svc's SQL layer: above the engine, below every server. `createQueryEngine(engine)` gives
 * `execute(sql, params, session)`, which the PostgreSQL adapter, REST (`POST /api/v1/query`) and
 * the bindings call. It owns parsing (with limits), transactions (BEGIN/COMMIT over engine
 * transactions, a multi-statement text as one implicit transaction), the catalog, planning and
 * execution. Errors are `SqlError`s carrying a SQLSTATE.
 */
import type {Statement} from 'pgsql-ast-parser'

import type {Engine} from '../engine/types.js'

import {rewriteForParser} from './catalog.js'
import {fromEngine, SqlError} from './errors.js'
import {currentUs} from './datetime.js'
import {commitTx, type Column, describesRows, executeStatement, explain, type PgSession, type QueryResult, rollbackTx} from './executor.js'
import {utilityStatement} from './front.js'
import {type Parsed, type ParseLimits, parseCached, parseSql} from './parse.js'
import {pointSelect} from './point-select.js'
import {itemName, selectItems} from './select-list-names.js'
import {OID} from './types.js'

export {SqlError} from './errors.js'
/** Drops a session's open transaction (nothing it wrote stays): for a server ending the session itself. */
export {rollbackTx} from './executor.js'
export type {Column, QueryResult} from './executor.js'
export {OID} from './types.js'

/** One client's state: settings (search_path is the branch), its transaction, cancel flag. */
export type QuerySession = PgSession

/** A statement parsed once and run many times (the extended protocol's prepared statements). */
export interface PreparedQuery {
  lifted: unknown[]
  /** Highest `$n` in the text. */
  paramCount: number
  sql: string
  statement?: Statement
}

export interface ExecuteOutcome {
  /** Set when a statement failed; the results of the statements before it are in `results`. */
  error?: SqlError
  /** Messages for the client (NOTICE), in order. */
  notices: string[]
  results: QueryResult[]
}

export interface QueryEngineOptions extends ParseLimits {
  /** Reported by version(). */
  version?: string
}

export interface QueryEngine {
  /** Runs SQL text (several statements allowed) or a prepared statement. Never throws. */
  execute(sql: PreparedQuery | string, params: unknown[], session: QuerySession): Promise<ExecuteOutcome>
  /**
   * `execute` answered at once, without a promise, when the statement is a point select (see
   * point-select.ts) whose row is in memory; undefined when `execute` must run it (it then runs
   * as if this had not been called).
   */
  executeNow(sql: PreparedQuery | string, params: unknown[], session: QuerySession): ExecuteOutcome | undefined
  /** Parses one statement for repeated execution; SQLSTATE 42601 for several statements. */
  prepare(sql: string): Promise<PreparedQuery>
  /** `prepare`'s answer for a text it prepared before, without a promise; undefined when `prepare` must run. */
  prepareNow(sql: string): PreparedQuery | undefined
  /** The result columns of a prepared statement without running it for real; undefined when it returns no rows. */
  describe(prepared: PreparedQuery, session: QuerySession): Promise<Column[] | undefined>
  session(init: {database?: string; settings?: Map<string, string>; user?: string}): QuerySession
}

/** A statement's error: the transaction it ran in is rolled back (implicit) or aborted (explicit). */
function failed(s: QuerySession, error: unknown, notices: string[], results: QueryResult[]): ExecuteOutcome {
  const err = error instanceof SqlError ? error : fromEngine(error)
  if (s.tx?.implicit) rollbackTx(s)
  else if (s.tx) s.txFailed = true
  return {error: err, notices, results}
}

/**
 * Statements prepared before, by text: the extended protocol's unnamed statement (pgbench -M
 * extended, node-postgres without a name) is a Parse of the same text before every Bind. The
 * parsed statement does not depend on the catalog (tables are looked up when it runs), so DDL
 * leaves these valid. Only texts that parsed to one statement are kept.
 */
/** Texts longer than this are never point selects worth looking for (executeNow). */
const POINT_TEXT_MAX = 4096

const preparedTexts = new Map<string, PreparedQuery>()
const PREPARED_MAX = 1000
const PREPARED_KEY_MAX = 16_384

function rememberPrepared(sql: string, prepared: PreparedQuery): void {
  if (sql.length > PREPARED_KEY_MAX) return
  if (preparedTexts.size >= PREPARED_MAX) preparedTexts.delete(preparedTexts.keys().next().value as string)
  preparedTexts.set(sql, prepared)
}

const ABORTED = 'current transaction is aborted, commands ignored until end of transaction block'

export function createQueryEngine(engine: Engine, options: QueryEngineOptions = {}): QueryEngine {
  const version = options.version ?? '0.1.0'
  const limits: ParseLimits = options

  async function txControl(s: QuerySession, op: 'begin' | 'commit' | 'rollback', notices: string[]): Promise<QueryResult> {
    if (op === 'begin') {
      // BEGIN inside a multi-statement text turns its implicit transaction into an explicit one.
      if (s.tx?.implicit) s.tx.implicit = false
      else if (s.tx) notices.push('there is already a transaction in progress')
      else s.tx = {branches: new Map(), startedAt: currentUs()}
      return {rows: [], tag: 'BEGIN'}
    }
    if (op === 'rollback') {
      if (!s.tx) notices.push('there is no transaction in progress')
      rollbackTx(s)
      s.txFailed = false
      return {rows: [], tag: 'ROLLBACK'}
    }
    if (!s.tx) {
      notices.push('there is no transaction in progress')
      return {rows: [], tag: 'COMMIT'}
    }
    if (s.txFailed) {
      rollbackTx(s)
      s.txFailed = false
      return {rows: [], tag: 'ROLLBACK'}
    }
    try {
      await commitTx(s)
    } catch (error) {
      rollbackTx(s)
      s.txFailed = false
      throw fromEngine(error)
    }
    return {rows: [], tag: 'COMMIT'}
  }

  async function sleep(s: QuerySession, seconds: number): Promise<void> {
    const until = Date.now() + Math.min(seconds, 3600) * 1000
    while (Date.now() < until) {
      if (s.cancelRequested) {
        s.cancelRequested = false
        throw new SqlError('57014', 'canceling statement due to user request')
      }
      await new Promise((r) => setTimeout(r, Math.min(20, until - Date.now())))
    }
  }

  /** `SELECT pg_sleep(n)`: waits without holding the event loop, and can be cancelled. */
  function sleepSeconds(st: Statement, params: unknown[]): number | undefined {
    if (st.type !== 'select' || st.from?.length || st.where || st.columns?.length !== 1) return undefined
    const e = st.columns[0].expr
    if (e.type !== 'call' || e.function.name.toLowerCase() !== 'pg_sleep' || e.args.length !== 1) return undefined
    const a = e.args[0]
    const v = a.type === 'integer' || a.type === 'numeric' ? a.value : a.type === 'parameter' ? Number(params[Number(a.name.slice(1)) - 1]) : Number.NaN
    return Number.isFinite(v) ? Math.max(0, v) : undefined
  }

  async function statement(s: QuerySession, st: Statement, params: unknown[], notices: string[]): Promise<QueryResult> {
    const t = st.type as string
    if (t === 'begin' || t === 'start transaction') return txControl(s, 'begin', notices)
    if (t === 'commit') return txControl(s, 'commit', notices)
    if (t === 'rollback') return txControl(s, 'rollback', notices)
    if (s.txFailed) throw new SqlError('25P02', ABORTED)
    s.statementAt = currentUs()
    const secs = sleepSeconds(st, params)
    if (secs !== undefined) {
      await sleep(s, secs)
      return {columns: [{name: 'pg_sleep', oid: OID.text}], rows: [['']], tag: 'SELECT 1'}
    }
    return executeStatement(s, st, params)
  }

  async function run(s: QuerySession, sql: string, params: unknown[], prepared: PreparedQuery | undefined, out: QueryResult[], notices: string[]): Promise<void> {
    const util = prepared?.statement ? undefined : utilityStatement(sql)
    if (util?.kind === 'tx') {
      out.push(await txControl(s, util.op, notices))
      return
    }
    if (s.txFailed && !prepared?.statement) {
      // Transaction control still runs in an aborted transaction; anything else is refused.
      const parsed = await parseSql(rewriteForParser(sql), limits).catch(() => undefined)
      const only = parsed?.statements.length === 1 ? (parsed.statements[0].type as string) : undefined
      if (!only || !['begin', 'commit', 'rollback', 'start transaction'].includes(only)) throw new SqlError('25P02', ABORTED)
    }
    if (util?.kind === 'reset' || util?.kind === 'discard') {
      // Connection poolers send DISCARD ALL / RESET ALL between clients.
      if (util.kind === 'reset' && util.name) s.settings.delete(util.name)
      else s.settings.clear()
      if (util.kind === 'discard') {
        if (s.tx) throw new SqlError('25001', 'DISCARD ALL cannot run inside a transaction block')
        out.push({rows: [], tag: 'DISCARD ALL'})
      } else out.push({rows: [], tag: 'RESET'})
      return
    }
    if (util?.kind === 'explain') {
      const parsed = await parseSql(rewriteForParser(util.statement), limits, s)
      if (parsed.statements.length !== 1) throw new SqlError('42601', 'EXPLAIN takes one statement')
      out.push(await explain(s, parsed.statements[0], [...params, ...parsed.lifted]))
      return
    }
    let statements: Statement[]
    let lifted: unknown[]
    if (prepared?.statement) {
      statements = [prepared.statement]
      lifted = prepared.lifted
    } else {
      const parsed = await parseSql(rewriteForParser(sql), limits, s)
      statements = parsed.statements
      lifted = parsed.lifted
    }
    if (prepared && statements.length > 1) throw new SqlError('42601', 'cannot insert multiple commands into a prepared statement')
    const all = lifted.length > 0 ? [...params, ...lifted] : params
    // Several statements in one text are one implicit transaction, as in PostgreSQL.
    if (statements.length > 1 && !s.tx) s.tx = {branches: new Map(), implicit: true, startedAt: currentUs()}
    for (const st of statements) {
      out.push(await statement(s, st, all, notices))
    }
    if (s.tx?.implicit) await commitTx(s)
  }

  return {
    async describe(prepared, s) {
      if (prepared.statement && !describesRows(prepared.statement)) return undefined
      if (/^[\s;]*$/.test(prepared.sql) || utilityStatement(prepared.sql)?.kind === 'tx') return undefined
      const st = prepared.statement
      if (!st || st.type === 'select' || st.type === 'show' || st.type === 'values' || st.type === 'union' || st.type === 'union all') {
        // Run it with NULL parameters (reads only) to learn the column types.
        const probe: QuerySession = {...s, cancelRequested: false, settings: new Map(s.settings)}
        const r = await this.execute(prepared, Array.from({length: prepared.paramCount}, () => null), probe)
        if (!r.error && r.results[0]?.columns) return r.results[0].columns
      }
      const items = st && 'returning' in st && st.returning ? st.returning.map((c) => c.alias?.name ?? '?column?') : selectItems(prepared.sql).map(itemName)
      return items.map((name) => ({name, oid: OID.text}))
    },

    async execute(sql, params, s) {
      const prepared = typeof sql === 'string' ? undefined : sql
      const text = typeof sql === 'string' ? sql : sql.sql
      const results: QueryResult[] = []
      const notices: string[] = []
      s.notices = notices
      try {
        await run(s, text, params, prepared, results, notices)
        return {notices, results}
      } catch (error) {
        return failed(s, error, notices, results)
      }
    },

    executeNow(sql, params, s) {
      // An aborted transaction refuses the statement, and an implicit one must commit after it: the long way.
      if (s.txFailed || s.tx?.implicit) return undefined
      const notices: string[] = []
      try {
        let parsed: Parsed | undefined
        if (typeof sql === 'string') {
          // A point select is short: a long text (a 100,000-value IN list) is not scanned twice.
          if (sql.length > POINT_TEXT_MAX || utilityStatement(sql)) return undefined
          parsed = parseCached(rewriteForParser(sql), limits)
        } else if (sql.statement) parsed = {lifted: sql.lifted, statements: [sql.statement]}
        if (parsed?.statements.length !== 1) return undefined
        s.notices = notices
        s.statementAt = currentUs()
        const all = parsed.lifted.length > 0 ? [...params, ...parsed.lifted] : params
        const r = pointSelect(s, parsed.statements[0], all, false)
        return r && {notices, results: [r]}
      } catch (error) {
        return failed(s, error, notices, [])
      }
    },

    async prepare(sql) {
      const known = preparedTexts.get(sql)
      if (known) return known
      let paramCount = 0
      for (const m of sql.matchAll(/\$(\d+)/g)) paramCount = Math.max(paramCount, Number(m[1]))
      const prepared: PreparedQuery = {lifted: [], paramCount, sql}
      if (/^[\s;]*$/.test(sql) || utilityStatement(sql)) return prepared
      const parsed = await parseSql(rewriteForParser(sql), limits)
      if (parsed.statements.length > 1) throw new SqlError('42601', 'cannot insert multiple commands into a prepared statement')
      prepared.statement = parsed.statements[0]
      prepared.lifted = parsed.lifted
      rememberPrepared(sql, prepared)
      return prepared
    },

    prepareNow(sql) {
      return preparedTexts.get(sql)
    },

    session(init) {
      return {cancelRequested: false, database: init.database ?? 'svc', engine, maxInValues: limits.maxInValues, settings: init.settings ?? new Map(), txFailed: false, user: init.user ?? '', version}
    },
  }
}
