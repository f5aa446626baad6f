/**
 * One PostgreSQL client connection: startup (SSLRequest, password auth), then the simple and
 * extended query protocols on top of the executor. Errors become ErrorResponses; only protocol
 * violations close the connection.
 */
import {randomBytes, randomInt} from 'node:crypto'
import type {Socket} from 'node:net'

import type {Logger} from '../../engine/types.js'
import {nextTurn, overBudget} from '../../engine/loop-turns.js'
import {MAX_UNREAD_REPLY_BYTES, whileUnread} from '../backpressure.js'
import {readSocket} from '../socket-read.js'

import {md5Matches, ScramError, ScramExchange, type ScramVerifier} from './auth.js'
import {type Column, type ExecuteOutcome, OID, type PreparedQuery, type QueryEngine, type QueryResult, type QuerySession, rollbackTx, SqlError} from '../../query/index.js'

import {atTurnEnd} from '../turn-end.js'
import {decodeParam, textValue, toBinary, toText} from './encoding.js'
import {Named} from './named.js'
import {BodyReader, CANCEL_REQUEST, GSSENC_REQUEST, MessageReader, PROTOCOL_3, rowDescriptionMessage, SSL_REQUEST, startupParameters, WireError, Writer} from './wire.js'

export interface ConnectionConfig {
  auth: 'md5' | 'scram-sha-256'
  logger: Logger
  maxMessage: number
  password: string
  query: QueryEngine
  registry: Map<number, {secret: number; session: QuerySession; busy: () => boolean}>
  username: string
  verifier: ScramVerifier
}

interface Prepared {
  paramOids: number[]
  query: PreparedQuery
}

interface Portal {
  described: boolean
  formats: number[]
  params: unknown[]
  result?: QueryResult
  sent: number
  stmt: Prepared
}

export class PgConnection {
  private readonly reader: MessageReader
  private readonly out = new Writer()
  private phase: 'auth-md5' | 'auth-scram-final' | 'auth-scram-first' | 'ready' | 'startup' = 'startup'
  private busy = false
  private closed = false
  private skipToSync = false
  private running = false
  private scram?: ScramExchange
  private md5Salt = randomBytes(4)
  private user = ''
  private readonly pid: number
  private readonly secret = randomInt(1, 2 ** 31 - 1)
  private readonly statements = new Map<string, Prepared>()
  private readonly portals = new Named<Portal>()
  private current?: Promise<void>
  private stopping = false
  readonly session: QuerySession
  /** Told each time the reader runs out of complete messages: bytes of one still held (or login unfinished), and messages handled since (kit's ConnectionGuard). */
  onWaiting?: (partial: boolean, handled: number) => void

  constructor(
    private readonly socket: Socket,
    private readonly cfg: ConnectionConfig,
    pid: number,
  ) {
    this.pid = pid
    this.reader = new MessageReader(cfg.maxMessage)
    this.session = cfg.query.session({})
    readSocket(socket, (chunk: Buffer) => {
      if (this.closed || this.stopping) return
      this.reader.feed(chunk)
      // A running pump reads the new bytes itself; keep the promise of the one that works.
      if (this.busy) return
      this.current = this.pump()
    })
    socket.on('close', () => {
      this.closed = true
      cfg.registry.delete(this.pid)
      // A statement still running for a client that went away stops at its next pause (57014):
      // a 100,000-value IN list nobody will read does not keep its slices of the loop (issue 24).
      if (this.running) this.session.cancelRequested = true
    })
  }

  /** Server shutdown: the statement in progress finishes and is answered, then the connection ends. */
  async shutdown(): Promise<void> {
    this.stopping = true
    await this.current
    if (this.closed) return
    this.out.error({code: '57P01', message: 'terminating connection due to administrator command', severity: 'FATAL'})
    this.flush()
    this.closed = true
    this.socket.end()
  }

  /**
   * The idle timeout ends the session, as PostgreSQL's two do: inside a transaction (rolled back,
   * nothing it wrote stays) 25P03, else 57P05. True when the FATAL was written: the caller ends
   * the socket so it is flushed.
   */
  idleTimeout(): boolean {
    if (this.closed) return false
    if (this.session.tx) {
      // A statement still running (the socket was only silent) is left to finish: it may be the COMMIT.
      if (!this.busy) rollbackTx(this.session)
      this.out.error({code: '25P03', message: 'terminating connection due to idle-in-transaction timeout', severity: 'FATAL'})
    } else {
      this.out.error({code: '57P05', message: 'terminating connection due to idle-session timeout', severity: 'FATAL'})
    }
    this.flush()
    this.closed = true
    return true
  }

  private fatal(code: string, message: string): void {
    this.out.error({code, message, severity: 'FATAL'})
    this.flush()
    this.closed = true
    this.socket.end()
  }

  /** Writes what the connection has answered so far. */
  flush(): void {
    if (this.out.length > 0 && !this.socket.destroyed && !this.socket.writableEnded) this.socket.write(this.out.take())
  }

  /** flush, bound once: answers are written at the end of the turn of the loop (servers/turn-end.ts). */
  private readonly flushNow = (): void => this.flush()

  private async pump(): Promise<void> {
    if (this.busy) return
    this.busy = true
    let handled = 0
    try {
      while (!this.closed) {
        if (this.phase === 'startup') {
          const body = this.reader.nextStartup()
          if (!body) break
          await this.startup(body)
          continue
        }
        const m = this.reader.next()
        if (!m) break
        // Most messages of a point select finish at once: awaiting only real work keeps a
        // Bind/Execute/Sync batch in one turn, without a promise per message.
        const pending = this.message(m.type, m.body)
        if (pending) await pending
        if (this.phase === 'ready') handled++
        if (this.out.length > 65_536) this.flush()
        // A client that sends many queries and never reads the answers waits here (issue 24);
        // looked at before the call, since awaiting even a settled promise costs a turn of the microtask queue.
        if (this.socket.writableLength > MAX_UNREAD_REPLY_BYTES) await whileUnread(this.socket)
      }
      this.onWaiting?.(this.phase !== 'ready' || this.reader.buffered > 0, handled)
    } catch (error) {
      if (error instanceof WireError) {
        this.fatal('08P01', `invalid frontend message: ${error.message}`)
      } else {
        this.cfg.logger.error('pg connection failed', {error: String(error), pid: this.pid})
        this.fatal('XX000', 'internal error')
      }
    } finally {
      this.busy = false
    }
    atTurnEnd(this, this.flushNow)
  }

  private async startup(body: Buffer): Promise<void> {
    const code = body.readInt32BE(0)
    if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
      // No TLS configured: 'N' tells the client to continue in plain text (sslmode=prefer) or give up (require).
      this.socket.write('N')
      return
    }
    if (code === CANCEL_REQUEST) {
      const pid = body.readInt32BE(4)
      const secret = body.readInt32BE(8)
      const target = this.cfg.registry.get(pid)
      if (target && target.secret === secret && target.busy()) target.session.cancelRequested = true
      this.closed = true
      this.socket.end()
      return
    }
    if (code !== PROTOCOL_3) {
      this.fatal('08P01', `unsupported frontend protocol ${code >> 16}.${code & 0xff_ff}: server supports 3.0`)
      return
    }
    const params = startupParameters(body)
    if (!params.user) {
      this.fatal('28000', 'no PostgreSQL user name specified in startup packet')
      return
    }
    this.user = params.user
    this.session.user = this.user
    this.session.database = params.database || this.user
    if (params.application_name) this.session.settings.set('application_name', params.application_name)
    if (params.search_path) this.session.settings.set('search_path', params.search_path)
    // libpq's `options=-c name=value` (PGOPTIONS) sets session parameters at startup.
    for (const m of (params.options ?? '').matchAll(/-c\s*([\w.]+)=((?:\\ |\S)+)/g)) this.session.settings.set(m[1].toLowerCase(), m[2].replaceAll('\\ ', ' '))
    if (this.cfg.auth === 'md5') {
      this.out.authMd5(this.md5Salt)
      this.phase = 'auth-md5'
    } else {
      this.out.authSasl(['SCRAM-SHA-256'])
      this.phase = 'auth-scram-first'
    }
    this.flush()
  }

  private authFailed(): void {
    this.cfg.logger.warn('pg authentication failed', {user: this.user})
    this.fatal('28P01', `password authentication failed for user "${this.user}"`)
  }

  private authOk(): void {
    this.out.authOk()
    const status: Array<[string, string]> = [
      ['server_version', '15.0'],
      ['server_encoding', 'UTF8'],
      ['client_encoding', 'UTF8'],
      ['DateStyle', 'ISO, MDY'],
      ['IntervalStyle', 'postgres'],
      ['TimeZone', 'UTC'],
      ['integer_datetimes', 'on'],
      ['standard_conforming_strings', 'on'],
      ['is_superuser', 'on'],
      ['session_authorization', this.user],
      ['application_name', this.session.settings.get('application_name') ?? ''],
    ]
    for (const [k, v] of status) this.out.parameterStatus(k, v)
    this.out.backendKeyData(this.pid, this.secret)
    this.cfg.registry.set(this.pid, {busy: () => this.running, secret: this.secret, session: this.session})
    this.phase = 'ready'
    this.out.readyForQuery('I')
  }

  /** Handles one message; a promise only when it has to wait (see pump). */
  private message(type: number, body: Buffer): Promise<void> | undefined {
    const t = String.fromCharCode(type)
    if (this.phase !== 'ready') {
      if (t !== 'p') {
        this.fatal('08P01', `expected a password message, got '${t}'`)
        return
      }
      this.password(body)
      return
    }
    if (t === 'X') {
      this.closed = true
      this.flush()
      this.socket.end()
      return
    }
    if (this.skipToSync && t !== 'S') return
    switch (t) {
      case 'Q': {
        let sql: string
        try {
          sql = new BodyReader(body).cstring()
        } catch (error) {
          if (!(error instanceof SqlError)) throw error
          this.sendError(error)
          this.out.readyForQuery(this.txStatus())
          break
        }
        return this.simpleQuery(sql)
      }
      case 'P': {
        return this.guard(() => this.parse(body))
      }
      case 'B': {
        return this.guard(() => this.bind(body))
      }
      case 'D': {
        return this.guard(() => this.describe(body))
      }
      case 'E': {
        return this.guard(() => this.execute(body))
      }
      case 'C': {
        const r = new BodyReader(body)
        const kind = String.fromCharCode(r.bytes(1)[0])
        const name = r.cstring()
        if (kind === 'S') this.statements.delete(name)
        else this.portals.delete(name)
        this.out.closeComplete()
        break
      }
      case 'S': {
        this.skipToSync = false
        this.portals.delete('')
        this.out.readyForQuery(this.txStatus())
        atTurnEnd(this, this.flushNow)
        break
      }
      case 'H': {
        this.flush()
        break
      }
      default: {
        this.sendError(new SqlError('0A000', `Unsupported SQL statement`, {detail: `protocol message '${t}' (COPY and function calls are not supported)`}))
        if (t !== 'F') this.out.readyForQuery(this.txStatus())
        else this.out.readyForQuery(this.txStatus())
      }
    }
  }

  private password(body: Buffer): void {
    if (this.phase === 'auth-md5') {
      const resp = new BodyReader(body).cstring()
      if (this.user !== this.cfg.username || !md5Matches(resp, this.user, this.cfg.password, this.md5Salt)) return this.authFailed()
      this.authOk()
      return
    }
    try {
      if (this.phase === 'auth-scram-first') {
        const r = new BodyReader(body)
        const mech = r.cstring()
        const len = r.int32()
        const data = len >= 0 ? r.bytes(len).toString('utf8') : ''
        this.scram = new ScramExchange(this.cfg.verifier)
        this.out.authSaslContinue(this.scram.first(mech, data))
        this.phase = 'auth-scram-final'
        return
      }
      const final = this.scram?.final(body.toString('utf8'))
      if (!final || this.user !== this.cfg.username) return this.authFailed()
      this.out.authSaslFinal(final)
      this.authOk()
    } catch (error) {
      if (error instanceof ScramError) this.fatal('28000', error.message)
      else throw error
    }
  }

  private txStatus(): 'E' | 'I' | 'T' {
    if (!this.session.tx) return 'I'
    return this.session.txFailed ? 'E' : 'T'
  }

  private sendError(e: unknown): void {
    const err = toSqlError(e)
    if (err.code === 'XX000') this.cfg.logger.error('pg query failed', {error: err.message})
    this.out.error({code: err.code, detail: err.detail, hint: err.hint, message: err.message, position: err.position})
    if (this.session.tx) this.session.txFailed = true
  }

  /** Runs one extended-protocol message: an error is answered and the rest skipped until Sync. */
  private guard(fn: () => Promise<void> | undefined | void): Promise<void> | undefined {
    let pending: Promise<void> | undefined | void
    try {
      pending = fn()
    } catch (error) {
      this.failed(error)
      return
    }
    return pending ? pending.catch((error: unknown) => this.failed(error)) : undefined
  }

  private failed(error: unknown): void {
    if (error instanceof WireError) throw error
    this.sendError(error)
    this.skipToSync = true
  }

  // ---------------------------------------------------------------------------------------
  // Simple query protocol

  private simpleQuery(sql: string): Promise<void> | undefined {
    const now = isBlank(sql) ? undefined : this.cfg.query.executeNow(sql, [], this.session)
    if (!now) return this.simpleQueryLong(sql)
    try {
      this.deliver(now)
      for (const r of now.results) this.sendSmall(r, [], true)
      if (now.error) this.sendError(now.error)
    } finally {
      this.session.cancelRequested = false
      this.out.readyForQuery(this.txStatus())
    }
    return undefined
  }

  private async simpleQueryLong(sql: string): Promise<void> {
    this.running = true
    try {
      if (isBlank(sql)) {
        this.out.emptyQuery()
        return
      }
      const outcome = await this.cfg.query.execute(sql, [], this.session)
      this.deliver(outcome)
      for (const r of outcome.results) await this.sendResult(r, [], true, 0)
      if (outcome.error) this.sendError(outcome.error)
    } catch (error) {
      this.sendError(error)
    } finally {
      this.running = false
      this.session.cancelRequested = false
      this.out.readyForQuery(this.txStatus())
    }
  }

  /** Notices, and the effect of DISCARD ALL on this connection's prepared statements. */
  private deliver(outcome: ExecuteOutcome): void {
    for (const n of outcome.notices) this.out.notice(n)
    if (outcome.results.some((r) => r.tag === 'DISCARD ALL')) {
      this.statements.clear()
      this.portals.clear()
    }
  }

  /**
   * Encodes a result's rows. A large result is encoded in slices of the event loop shared with
   * every other connection (engine/loop-turns.ts), each slice's rows written to the socket before
   * the next: a 2,000-row scan encoded in one turn held every other client (issue 24).
   */
  /**
   * `sendResult` for a result of at most ROWS_PER_CHECK rows, all of them (a point select's):
   * it never pauses, so it needs no promise.
   */
  private sendSmall(r: QueryResult, formats: number[], withDescription: boolean): void {
    if (r.columns && withDescription) this.describeRows(r.columns, formats)
    if (r.columns) {
      const oids = r.columns.map((c) => c.oid)
      const text = formats.length === 0 || (formats.length === 1 && formats[0] === 0)
      for (const row of r.rows) this.dataRow(row, oids, formats, text)
    }
    this.out.commandComplete(r.tag)
  }

  private describeRows(columns: Column[], formats: number[]): void {
    // A frozen column list is a point select's (query/point-select.ts), the same for every
    // execution until DDL: its text-format RowDescription is encoded once.
    if (Object.isFrozen(columns) && formats.every((f) => f === 0)) {
      let m = textDescriptions.get(columns)
      if (!m) {
        m = rowDescriptionMessage(columns)
        textDescriptions.set(columns, m)
      }
      this.out.raw(m)
      return
    }
    this.out.rowDescription(columns.map((c, i) => ({format: formatOf(formats, i), name: c.name, oid: c.oid})))
  }

  private dataRow(row: unknown[], oids: number[], formats: number[], text: boolean): void {
    if (text) this.out.dataRowText(row.map((v, j) => textValue(v, oids[j])))
    else this.out.dataRow(row.map((v, j) => (formatOf(formats, j) === 1 ? toBinary(v, oids[j]) : toText(v, oids[j]))))
  }

  private async sendResult(r: QueryResult, formats: number[], withDescription: boolean, maxRows: number, from = 0): Promise<number> {
    if (r.columns && withDescription) {
      this.out.rowDescription(r.columns.map((c, i) => ({format: formatOf(formats, i), name: c.name, oid: c.oid})))
    }
    const end = maxRows > 0 ? Math.min(r.rows.length, from + maxRows) : r.rows.length
    if (r.columns) {
      const cols = r.columns
      const oids = cols.map((c) => c.oid)
      const text = cols.every((_, j) => formatOf(formats, j) === 0)
      for (let i = from; i < end; i++) {
        const row = r.rows[i]
        if (text) this.out.dataRowText(row.map((v, j) => textValue(v, oids[j])))
        else this.out.dataRow(row.map((v, j) => (formatOf(formats, j) === 1 ? toBinary(v, oids[j]) : toText(v, oids[j]))))
        if ((i - from) % ROWS_PER_CHECK === ROWS_PER_CHECK - 1 && i + 1 < end && overBudget()) {
          this.flush()
          await nextTurn()
          await whileUnread(this.socket)
        }
      }
    }
    if (end < r.rows.length) {
      this.out.portalSuspended()
      return end
    }
    this.out.commandComplete(r.tag)
    return end
  }

  // ---------------------------------------------------------------------------------------
  // Extended query protocol

  private parse(body: Buffer): Promise<void> | undefined {
    const r = new BodyReader(body)
    const name = r.cstring()
    const sql = r.cstring()
    // An unsigned count, as PostgreSQL reads it: 65,535 declared types must all be present.
    const n = r.int16() & 0xff_ff
    const paramOids: number[] = []
    for (let i = 0; i < n; i++) paramOids.push(r.int32())
    if (name !== '' && this.statements.has(name)) throw new SqlError('42P05', `prepared statement "${name}" already exists`)
    const known = this.cfg.query.prepareNow(sql)
    if (known) {
      this.parsed(name, paramOids, known)
      return
    }
    return this.cfg.query.prepare(sql).then((query) => this.parsed(name, paramOids, query))
  }

  private parsed(name: string, paramOids: number[], query: PreparedQuery): void {
    while (paramOids.length < query.paramCount) paramOids.push(0)
    this.statements.set(name, {paramOids, query})
    this.out.parseComplete()
  }

  private bind(body: Buffer): void {
    const r = new BodyReader(body)
    const portal = r.cstring()
    const name = r.cstring()
    const stmt = this.statements.get(name)
    if (!stmt) throw new SqlError('26000', `prepared statement "${name}" does not exist`)
    const nf = r.int16()
    const pformats: number[] = []
    for (let i = 0; i < nf; i++) pformats.push(r.int16())
    const np = r.int16()
    if (np !== stmt.paramOids.length) {
      throw new SqlError('08P01', `bind message supplies ${np} parameters, but prepared statement "${name}" requires ${stmt.paramOids.length}`)
    }
    const params: unknown[] = []
    for (let i = 0; i < np; i++) {
      const len = r.int32()
      if (len < -1) throw new SqlError('08P01', `invalid length ${len} of bind parameter ${i + 1}: -1 (NULL) or a byte count`)
      const raw = len === -1 ? null : r.bytes(len)
      const fmt = pformats.length === 1 ? pformats[0] : (pformats[i] ?? 0)
      params.push(decodeBound(raw, stmt.paramOids[i] ?? 0, fmt, i))
    }
    const nr = r.int16()
    const formats: number[] = []
    for (let i = 0; i < nr; i++) formats.push(r.int16())
    this.portals.set(portal, {described: false, formats, params, sent: 0, stmt})
    this.out.bindComplete()
  }

  /**
   * The portal's result when it is known without waiting: run before, or a point select answered
   * from memory (query/point-select.ts). Undefined when runPortal must run it.
   */
  private portalNow(p: Portal): QueryResult | undefined {
    if (p.result) return p.result
    if (!p.stmt.query.statement) return undefined
    const outcome = this.cfg.query.executeNow(p.stmt.query, p.params, this.session)
    if (!outcome) return undefined
    try {
      this.deliver(outcome)
      if (outcome.error) throw outcome.error
      p.result = outcome.results[0] ?? {rows: [], tag: ''}
    } finally {
      this.session.cancelRequested = false
    }
    return p.result
  }

  private async runPortal(p: Portal): Promise<QueryResult> {
    if (!p.result) {
      if (isBlank(p.stmt.query.sql)) p.result = {rows: [], tag: ''}
      else {
        this.running = true
        try {
          const outcome = await this.cfg.query.execute(p.stmt.query, p.params, this.session)
          this.deliver(outcome)
          if (outcome.error) throw outcome.error
          p.result = outcome.results[0] ?? {rows: [], tag: ''}
        } finally {
          this.running = false
          this.session.cancelRequested = false
        }
      }
    }
    return p.result
  }

  private describe(body: Buffer): Promise<void> | undefined {
    const r = new BodyReader(body)
    const kind = String.fromCharCode(r.bytes(1)[0])
    const name = r.cstring()
    if (kind !== 'S' && kind !== 'P') throw new SqlError('08P01', `invalid DESCRIBE message subtype ${JSON.stringify(kind)}`)
    if (kind === 'S') {
      const stmt = this.statements.get(name)
      if (!stmt) throw new SqlError('26000', `prepared statement "${name}" does not exist`)
      this.out.parameterDescription(stmt.paramOids.map((o) => o || OID.text))
      return this.cfg.query.describe(stmt.query, this.session).then((cols) => {
        if (cols) this.out.rowDescription(cols)
        else this.out.noData()
      })
    }
    const p = this.portals.get(name)
    if (!p) throw new SqlError('34000', `portal "${name}" does not exist`)
    const now = this.portalNow(p)
    if (now) {
      this.describePortal(p, now)
      return
    }
    return this.runPortal(p).then((res) => this.describePortal(p, res))
  }

  private describePortal(p: Portal, res: QueryResult): void {
    p.described = true
    if (res.columns) this.describeRows(res.columns, p.formats)
    else this.out.noData()
  }

  private execute(body: Buffer): Promise<void> | undefined {
    const r = new BodyReader(body)
    const name = r.cstring()
    const maxRows = r.int32()
    const p = this.portals.get(name)
    if (!p) throw new SqlError('34000', `portal "${name}" does not exist`)
    const now = this.portalNow(p)
    if (now && p.sent === 0 && now.rows.length <= ROWS_PER_CHECK && (maxRows <= 0 || maxRows >= now.rows.length)) {
      if (now.tag === '' && !now.columns) this.out.emptyQuery()
      else {
        this.sendSmall(now, p.formats, false)
        p.sent = now.rows.length
      }
      return
    }
    return this.executeLong(p, maxRows)
  }

  private async executeLong(p: Portal, maxRows: number): Promise<void> {
    const res = await this.runPortal(p)
    if (res.tag === '' && !res.columns) {
      this.out.emptyQuery()
      return
    }
    p.sent = await this.sendResult(res, p.formats, false, maxRows, p.sent)
  }
}

/** A bound parameter's value; binary data of the wrong size for its type is 22P03, as in PostgreSQL. */
function decodeBound(raw: Buffer | null, oid: number, format: number, i: number): unknown {
  try {
    return decodeParam(raw, oid, format)
  } catch (error) {
    if (format === 1 && error instanceof RangeError) throw new SqlError('22P03', `incorrect binary data format in bind parameter ${i + 1}`)
    throw error
  }
}

const textDescriptions = new WeakMap<readonly Column[], Buffer>()

const isBlank = (sql: string): boolean => /^[\s;]*$/.test(sql)

/** Rows encoded between two looks at the loop's shared slice (a point select never looks). */
const ROWS_PER_CHECK = 64

function formatOf(formats: number[], i: number): number {
  if (formats.length === 0) return 0
  if (formats.length === 1) return formats[0]
  return formats[i] ?? 0
}

function toSqlError(e: unknown): SqlError {
  if (e instanceof SqlError) return e
  return new SqlError('XX000', e instanceof Error ? e.message : String(e))
}
