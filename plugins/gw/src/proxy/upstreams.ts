import type {Client} from '@modelcontextprotocol/sdk/client/index.js'
import type {CallToolResult, Tool} from '@modelcontextprotocol/sdk/types.js'
import {EventEmitter} from 'node:events'

import type {HttpSession} from '../client/connect.js'
import {networkCodeReason} from '../client/network-reason.js'
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

/** A reason of the proxy's own making, short and free of anything the upstream said. */
export class ShortReason extends Error {}

/**
 * Why an upstream is down, in a few words that are safe to show anyone: the kind of network
 * failure, the HTTP status, or one of the proxy's own reasons. Never the upstream's error body
 * or its URL (which may carry a key); the full story is the operator's to find in their logs.
 */
export function reason(error: unknown): string {
  let e = error as {cause?: unknown; code?: unknown; message?: unknown; name?: unknown; status?: unknown} | undefined
  for (let depth = 0; e && depth < 6; depth++) {
    if (e instanceof ShortReason) return e.message
    const network = networkCodeReason(e.code)
    if (network) return network
    if (e.code === -32_001) return 'request timed out'
    if (typeof e.code === 'number' && e.code >= 100 && e.code < 600) return `HTTP ${e.code}`
    if (typeof e.status === 'number' && e.status >= 100 && e.status < 600) return `HTTP ${e.status}`
    if (e.name === 'AuthError') return 'authentication failed'
    if (typeof e.code === 'string' && e.code.startsWith('config_')) return 'configuration error'
    e = e.cause as typeof e
  }
  return 'protocol error'
}

let types: typeof import('@modelcontextprotocol/sdk/types.js') | undefined

function httpStatus(error: unknown): number | undefined {
  if (error instanceof UpstreamHttpError) return error.status
  const code = (error as {code?: unknown})?.code
  return typeof code === 'number' && code >= 100 && code < 600 ? code : undefined
}

/** Does the session still answer? Bounded, so a hung upstream cannot hold the call. */
async function alive(conn: UpstreamConnection): Promise<boolean> {
  try {
    await conn.client.ping({timeout: 5000})
    return true
  } catch {
    return false
  }
}

/** JSON-RPC errors from the upstream are answers, not a sign the connection is gone. */
function isProtocolAnswer(error: unknown): boolean {
  if (error instanceof UpstreamRpcError) return true
  const code = (error as {code?: unknown})?.code
  return typeof code === 'number' && code < 0 && code !== -32000
}

class Upstream {
  backoff: number
  conn: UpstreamConnection | undefined
  connecting: Promise<void> | undefined
  /** The tools of the last successful listing, kept while down so the ACL can still judge calls to them. */
  known = new Map<string, ProxiedTool>()
  lastAttempt = 0
  fast: FastCall | undefined
  error: string | undefined
  pinger: NodeJS.Timeout | undefined
  retry: NodeJS.Timeout | undefined
  state: UpstreamState = 'connecting'
  stopped = false
  tools: ProxiedTool[] = []

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
      // The upstream refused this one request at the HTTP level (arguments it cannot take, a body
      // too large, a crash in its handler) yet its session still answers a ping: the call fails,
      // the upstream stays up for everyone else. Only a transport failure marks it down.
      const status = httpStatus(error)
      if (status !== undefined && status !== 404 && (await alive(conn))) {
        throw new UpstreamRpcError(status < 500 ? -32_602 : -32_603, `server "${this.name}" refused this call (HTTP ${status})`)
      }
      this.down(error, conn)
      // 404 (or 400 from servers that predate the spec's 404) on our session id: the upstream
      // restarted and forgot the session. The request never ran, so it is sent again once the
      // session is re-established, and the caller does not see the redeploy.
      const sessionLost = error instanceof UpstreamHttpError && (error.status === 404 || error.status === 400)
      if (retry && sessionLost && (await this.revive(5000))) return this.call(upstreamName, args, meta, signal, false)
      throw this.unavailable()
    }
  }

  /** One connection attempt at a time: the backoff timer and callers share it. */
  connect(): Promise<void> {
    this.connecting ??= this.attempt().finally(() => {
      this.connecting = undefined
      this.lastAttempt = Date.now()
    })
    return this.connecting
  }

  /**
   * A call found this upstream down: try to reconnect now instead of waiting for the backoff
   * timer (a redeployed upstream is usually back within the call's budget). At most one
   * on-demand attempt a second, so calls to a dead upstream do not hammer it.
   */
  async revive(ms: number): Promise<boolean> {
    if (this.stopped) return false
    if (this.state === 'up' && this.conn) return true
    const deadline = Date.now() + ms
    if (!this.connecting) {
      const wait = this.lastAttempt + 1000 - Date.now()
      if (wait >= ms) return false
      if (wait > 0) await new Promise((r) => setTimeout(r, wait))
      if (this.state === 'up' && this.conn) return true
      if (!this.connecting) clearTimeout(this.retry)
    }
    let timer: NodeJS.Timeout | undefined
    await Promise.race([this.connect(), new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - Date.now()))))])
    clearTimeout(timer)
    return this.state === 'up' && this.conn !== undefined
  }

  private async attempt(): Promise<void> {
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
      c.client.onclose = () => this.down(new ShortReason('connection closed'), c)
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
      this.pool.changed()
      this.pinger = setInterval(() => {
        c.client.ping({timeout: Math.max(1000, this.o.pingIntervalMs)}).catch((error) => this.down(error, c))
      }, this.o.pingIntervalMs)
      this.pinger.unref()
    } catch (error) {
      if (conn) await conn.close().catch(() => {})
      this.conn = undefined
      this.fail(signal?.aborted && !conn ? new ShortReason(`no answer within ${this.o.connectTimeoutMs / 1000} s`) : error)
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
    clearInterval(this.pinger)
    clearTimeout(this.retry)
    const c = this.conn
    this.conn = undefined
    if (c) {
      c.client.onclose = undefined
      await c.close().catch(() => {})
    }
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
    this.lastAttempt = Date.now()
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
    this.known = new Map(this.tools.map((t) => [t.fullName, t]))
    if (this.conn === c && this.state === 'up') this.pool.changed()
  }
}

/**
 * The upstream servers behind the proxy: one long-lived session each, reconnecting with
 * exponential backoff. A server that is down contributes no tools; `changed` fires whenever
 * the aggregated tool list changes, so sessions can send `notifications/tools/list_changed`.
 */
export class UpstreamPool extends EventEmitter {
  private readonly callTimeoutMs: number
  private index = new Map<string, ProxiedTool>()
  private readonly upstreams = new Map<string, Upstream>()

  constructor(names: readonly string[], options: PoolOptions) {
    super()
    // Options given as undefined must not override the defaults.
    const given = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as PoolOptions
    const o = {callTimeoutMs: 120_000, connectTimeoutMs: 15_000, maxBackoffMs: 30_000, minBackoffMs: 250, pingIntervalMs: 15_000, ...given}
    this.callTimeoutMs = o.callTimeoutMs
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

  /** A tool of the server's last listing, also while the server is down (for the ACL). */
  knownTool(fullName: string): ProxiedTool | undefined {
    const server = this.serverOf(fullName)
    return server === undefined ? undefined : this.upstreams.get(server)?.known.get(fullName)
  }

  /** Tries one reconnect of a server that is down, waiting at most `ms`; true when it is up. */
  revive(server: string, ms = 10_000): Promise<boolean> {
    const u = this.upstreams.get(server)
    return u ? u.revive(Math.min(ms, this.callTimeoutMs)) : Promise.resolve(false)
  }

  /** The outage error of a configured server that is not up, else undefined. */
  unavailable(server: string): undefined | UpstreamUnavailableError {
    const u = this.upstreams.get(server)
    return u && u.state !== 'up' ? u.unavailable() : undefined
  }
}
