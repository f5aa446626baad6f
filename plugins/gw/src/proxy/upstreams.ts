import type {Client} from '@modelcontextprotocol/sdk/client/index.js'
import type {CallToolResult, Tool} from '@modelcontextprotocol/sdk/types.js'
import {EventEmitter} from 'node:events'

import type {HttpSession} from '../client/connect.js'
import {type Access, classify, TOOL_SEPARATOR, type ToolRef} from './acl.js'
import {type FastCall, fastCallFor, UpstreamHttpError, UpstreamRpcError} from './fast-call.js'

export interface UpstreamConnection {
  client: Client
  close(): Promise<void>
  /** A Streamable HTTP session's URL and headers: calls then take the fast path (fast-call.ts). */
  http?: HttpSession
}

/** Opens one upstream session; in production the gw client's `connectServer` (same credentials and token store). */
export type Connector = (name: string, signal: AbortSignal) => Promise<UpstreamConnection>

export interface ProxiedTool {
  access: Access
  /** `<server>__<tool>`, the name clients see. */
  fullName: string
  /** What the ACL evaluates. */
  ref: ToolRef
  server: string
  /** The tool as clients see it (renamed). */
  tool: Tool
  /** The upstream's own tool name. */
  upstreamName: string
}

export type UpstreamState = 'connecting' | 'down' | 'up'

export interface UpstreamStatus {
  error?: string
  name: string
  state: UpstreamState
  tools: number
}

export interface PoolOptions {
  /** Per tools/call, in milliseconds. */
  callTimeoutMs?: number
  connect: Connector
  /** Longest wait for one connection attempt (a black-holed address must not stall reconnection). */
  connectTimeoutMs?: number
  log?: (message: string) => void
  /** Longest wait between reconnection attempts. */
  maxBackoffMs?: number
  minBackoffMs?: number
  /** How often a live upstream is pinged, so one that died without a word is noticed. */
  pingIntervalMs?: number
  toolAccess?: Map<string, (tool: string) => Access | undefined>
}

/** A clear, client-facing error for a call that cannot be forwarded. */
export class UpstreamUnavailableError extends Error {}

function reason(error: unknown): string {
  let e = error as {cause?: unknown; code?: unknown; message?: unknown} | undefined
  for (let depth = 0; e && depth < 5; depth++) {
    if (e.code === 'ECONNREFUSED') return 'connection refused'
    if (e.code === 'ECONNRESET' || e.code === 'UND_ERR_SOCKET') return 'connection reset'
    e = e.cause as typeof e
  }
  const m = (error as Error)?.message
  return typeof m === 'string' && m ? m.split('\n')[0] : String(error)
}

let types: typeof import('@modelcontextprotocol/sdk/types.js') | undefined

/** JSON-RPC errors from the upstream are answers, not a sign the connection is gone. */
function isProtocolAnswer(error: unknown): boolean {
  if (error instanceof UpstreamRpcError) return true
  const code = (error as {code?: unknown})?.code
  return typeof code === 'number' && code < 0 && code !== -32000
}

class Upstream {
  backoff: number
  conn: UpstreamConnection | undefined
  fast: FastCall | undefined
  error: string | undefined
  pinger: NodeJS.Timeout | undefined
  retry: NodeJS.Timeout | undefined
  state: UpstreamState = 'connecting'
  stopped = false
  tools: ProxiedTool[] = []
  /** Calls waiting for the next successful connection (a restarted upstream). */
  private waiters: Array<(up: boolean) => void> = []

  constructor(
    readonly name: string,
    private readonly pool: UpstreamPool,
    private readonly o: Required<Omit<PoolOptions, 'log' | 'toolAccess'>> & PoolOptions,
  ) {
    this.backoff = o.minBackoffMs
  }

  async call(upstreamName: string, args: Record<string, unknown> | undefined, meta: Record<string, unknown> | undefined, signal?: AbortSignal, retry = true): Promise<CallToolResult> {
    const conn = this.conn
    if (!conn || this.state !== 'up') throw this.unavailable()
    const {CallToolResultSchema} = (types ??= await import('@modelcontextprotocol/sdk/types.js'))
    const params: Record<string, unknown> = {arguments: args ?? {}, name: upstreamName}
    if (meta) params._meta = meta
    try {
      if (this.fast) return await this.fast(params, {signal, timeoutMs: this.o.callTimeoutMs})
      return (await conn.client.request({method: 'tools/call', params}, CallToolResultSchema, {signal, timeout: this.o.callTimeoutMs})) as CallToolResult
    } catch (error) {
      if (isProtocolAnswer(error) || signal?.aborted) throw error
      this.down(error, conn)
      // 404 (or 400 from servers that predate the spec's 404) on our session id: the upstream
      // restarted and forgot the session. The request never ran, so it is sent again once the
      // session is re-established, and the caller does not see the redeploy.
      const sessionLost = error instanceof UpstreamHttpError && (error.status === 404 || error.status === 400)
      if (retry && sessionLost && (await this.waitUp(5000))) return this.call(upstreamName, args, meta, signal, false)
      throw this.unavailable()
    }
  }

  async connect(): Promise<void> {
    if (this.stopped) return
    let conn: UpstreamConnection | undefined
    let signal: AbortSignal | undefined
    try {
      signal = AbortSignal.timeout(this.o.connectTimeoutMs)
      conn = await this.o.connect(this.name, signal)
      if (this.stopped) {
        await conn.close().catch(() => {})
        return
      }
      const c = conn
      c.client.onclose = () => this.down(new Error('connection closed'), c)
      const {ToolListChangedNotificationSchema} = await import('@modelcontextprotocol/sdk/types.js')
      c.client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        this.loadTools(c).catch((error) => this.down(error, c))
      })
      this.conn = c
      this.fast = fastCallFor(c)
      await this.loadTools(c)
      this.state = 'up'
      this.error = undefined
      this.backoff = this.o.minBackoffMs
      this.o.log?.(`upstream ${this.name}: connected, ${this.tools.length} tools`)
      for (const w of this.waiters.splice(0)) w(true)
      this.pool.changed()
      this.pinger = setInterval(() => {
        c.client.ping({timeout: Math.max(1000, this.o.pingIntervalMs)}).catch((error) => this.down(error, c))
      }, this.o.pingIntervalMs)
      this.pinger.unref()
    } catch (error) {
      if (conn) await conn.close().catch(() => {})
      this.conn = undefined
      this.fail(signal?.aborted && !conn ? new Error(`no answer within ${this.o.connectTimeoutMs / 1000} s`) : error)
    }
  }

  /** The connection `conn` is gone: drop its tools and start reconnecting (once per connection). */
  down(error: unknown, conn: UpstreamConnection): void {
    if (this.conn !== conn || this.stopped) return
    this.conn = undefined
    this.fast = undefined
    clearInterval(this.pinger)
    conn.client.onclose = undefined
    conn.close().catch(() => {})
    this.fail(error)
  }

  async stop(): Promise<void> {
    this.stopped = true
    for (const w of this.waiters.splice(0)) w(false)
    clearInterval(this.pinger)
    clearTimeout(this.retry)
    const c = this.conn
    this.conn = undefined
    if (c) {
      c.client.onclose = undefined
      await c.close().catch(() => {})
    }
  }

  waitUp(ms: number): Promise<boolean> {
    if (this.state === 'up' && this.conn) return Promise.resolve(true)
    return new Promise((resolve) => {
      const done = (up: boolean) => {
        clearTimeout(timer)
        resolve(up)
      }
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== done)
        resolve(false)
      }, ms)
      this.waiters.push(done)
    })
  }

  unavailable(): UpstreamUnavailableError {
    const why = this.state === 'connecting' ? 'still connecting' : `down (${this.error ?? 'unknown error'})`
    return new UpstreamUnavailableError(`server "${this.name}" is unavailable: ${why}; its tools come back when it reconnects`)
  }

  private fail(error: unknown): void {
    const hadTools = this.tools.length > 0
    this.state = 'down'
    this.error = reason(error)
    this.tools = []
    if (hadTools) this.pool.changed()
    this.o.log?.(`upstream ${this.name}: ${this.error}; retrying in ${this.backoff} ms`)
    clearTimeout(this.retry)
    this.retry = setTimeout(() => {
      this.connect().catch(() => {})
    }, this.backoff)
    this.retry.unref()
    this.backoff = Math.min(this.backoff * 2, this.o.maxBackoffMs)
  }

  private async loadTools(c: UpstreamConnection): Promise<void> {
    const all: Tool[] = []
    let cursor: string | undefined
    // Bounded: a server that pages forever cannot hang the proxy.
    for (let page = 0; page < 100; page++) {
      const r = await c.client.listTools(cursor ? {cursor} : undefined)
      all.push(...r.tools)
      cursor = r.nextCursor
      if (!cursor) break
    }
    const override = this.o.toolAccess?.get(this.name)
    this.tools = all.map((t) => {
      const fullName = `${this.name}${TOOL_SEPARATOR}${t.name}`
      const access = classify(override, t.name, t.annotations)
      return {access, fullName, ref: {access, server: this.name, tool: t.name}, server: this.name, tool: {...t, name: fullName}, upstreamName: t.name}
    })
    if (this.conn === c && this.state === 'up') this.pool.changed()
  }
}

/**
 * The upstream servers behind the proxy: one long-lived session each, reconnecting with
 * exponential backoff. A server that is down contributes no tools; `changed` fires whenever
 * the aggregated tool list changes, so sessions can send `notifications/tools/list_changed`.
 */
export class UpstreamPool extends EventEmitter {
  private index = new Map<string, ProxiedTool>()
  private readonly upstreams = new Map<string, Upstream>()

  constructor(names: readonly string[], options: PoolOptions) {
    super()
    // Options given as undefined must not override the defaults.
    const given = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as PoolOptions
    const o = {callTimeoutMs: 120_000, connectTimeoutMs: 15_000, maxBackoffMs: 30_000, minBackoffMs: 250, pingIntervalMs: 15_000, ...given}
    for (const n of names) this.upstreams.set(n, new Upstream(n, this, o))
  }

  async call(fullName: string, args: Record<string, unknown> | undefined, meta?: Record<string, unknown>, signal?: AbortSignal): Promise<CallToolResult> {
    const t = this.index.get(fullName)
    if (!t) throw new Error(`unknown tool ${fullName}`)
    return this.upstreams.get(t.server)!.call(t.upstreamName, args, meta, signal)
  }

  changed(): void {
    const index = new Map<string, ProxiedTool>()
    for (const u of this.upstreams.values()) for (const t of u.tools) index.set(t.fullName, t)
    this.index = index
    this.emit('changed')
  }

  /** The server a prefixed name belongs to, when that server is configured (up or not). */
  serverOf(fullName: string): string | undefined {
    const i = fullName.indexOf(TOOL_SEPARATOR)
    if (i <= 0) return undefined
    // Server names may themselves contain the separator: prefer the longest configured prefix.
    let best: string | undefined
    for (const n of this.upstreams.keys()) {
      if (fullName.startsWith(`${n}${TOOL_SEPARATOR}`) && (!best || n.length > best.length)) best = n
    }
    return best
  }

  /**
   * Connects every upstream; resolves when each has either connected or failed once, or after
   * `waitMs`, whichever is first: a slow upstream keeps connecting in the background.
   */
  async start(waitMs = 10_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      Promise.all([...this.upstreams.values()].map((u) => u.connect())),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, waitMs)
      }),
    ])
    clearTimeout(timer)
  }

  status(): UpstreamStatus[] {
    return [...this.upstreams.values()].map((u) => ({error: u.error, name: u.name, state: u.state, tools: u.tools.length}))
  }

  async stop(): Promise<void> {
    await Promise.all([...this.upstreams.values()].map((u) => u.stop()))
  }

  tool(fullName: string): ProxiedTool | undefined {
    return this.index.get(fullName)
  }

  tools(): IterableIterator<ProxiedTool> {
    return this.index.values()
  }

  /** The outage error of a configured server that is not up, else undefined. */
  unavailable(server: string): undefined | UpstreamUnavailableError {
    const u = this.upstreams.get(server)
    return u && u.state !== 'up' ? u.unavailable() : undefined
  }
}
