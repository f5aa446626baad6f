import type {Client} from '@modelcontextprotocol/sdk/client/index.js'
import type {CallToolResult, CompleteRequest, CompleteResult, GetPromptResult, ReadResourceResult} from '@modelcontextprotocol/sdk/types.js'
import {EventEmitter} from 'node:events'

import type {HttpSession} from '../client/connect.js'
import {networkCodeReason} from '../client/network-reason.js'
import {type Access, TOOL_SEPARATOR} from './acl.js'
import {type Catalog, EMPTY_RAW, listKind, nameCatalog, type ProxiedPrompt, type ProxiedResource, type ProxiedTemplate, type ProxiedTool, type RawCatalog} from './catalog.js'
import {type FastCall, fastCallFor, UpstreamHttpError, UpstreamRpcError} from './fast-call.js'

export interface UpstreamConnection {
  client: Client
  close(): Promise<void>
  /** A Streamable HTTP session's URL and headers: calls then take the fast path (fast-call.ts). */
  http?: HttpSession
}

/** Opens one upstream session; in production the gw client's `connectServer` (same credentials and token store). */
export type Connector = (name: string, signal: AbortSignal) => Promise<UpstreamConnection>

export type {ProxiedPrompt, ProxiedResource, ProxiedTemplate, ProxiedTool} from './catalog.js'

/** What an upstream offers besides tools; each kind has its own list_changed notification. */
export type CatalogKind = 'prompts' | 'resources' | 'tools'

/** `idle`: a lazy (stdio) server that is not running; its last listing stays visible and the next use starts it. */
export type UpstreamState = 'connecting' | 'down' | 'idle' | 'up'

export interface UpstreamStatus {
  error?: string
  name: string
  prompts: number
  resources: number
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
  /**
   * Pings that time out in a row before the upstream is marked down (a loaded machine answers
   * late, not never); a ping that fails any other way (connection refused, session gone) marks
   * it down at once.
   */
  pingFailures?: number
  toolAccess?: Map<string, (tool: string) => Access | undefined>
  /**
   * Per server: stop it after this many milliseconds without a request, and start it again on
   * the next use (0 or undefined: connect at start and stay connected). For stdio servers.
   */
  idleMs?: (name: string) => number | undefined
}

/** One upstream subscription shared by the client sessions that asked for it. */
interface Subscription {
  /** Cancels the shared resources/subscribe once no holder waits for it any more. */
  cancel: AbortController
  holders: number
  /** The upstream's answer to the one resources/subscribe sent for all of them. */
  ready: Promise<void>
  /** The resources/subscribe left for the upstream and was not refused: it may have to be undone. */
  sent: boolean
}

/** Waits for `shared` on behalf of one caller, who may stop waiting (`signal`) without ending it for the others. */
function waitFor(shared: Promise<void>, signal?: AbortSignal): Promise<void> {
  if (!signal) return shared
  return new Promise((resolve, reject) => {
    const stop = () => reject(signal.reason)
    if (signal.aborted) return stop()
    signal.addEventListener('abort', stop, {once: true})
    shared.then(resolve, reject).finally(() => signal.removeEventListener('abort', stop))
  })
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
const sdkTypes = async () => (types ??= await import('@modelcontextprotocol/sdk/types.js'))

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

type Options = Required<Omit<PoolOptions, 'idleMs' | 'log' | 'toolAccess'>> & PoolOptions

/** A ping that got no answer in time (the SDK's RequestTimeout), as opposed to one that failed. */
const timedOut = (error: unknown) => (error as {code?: unknown})?.code === -32_001

class Upstream {
  backoff: number
  catalog: Catalog = nameCatalog('', EMPTY_RAW, undefined)
  conn: UpstreamConnection | undefined
  connecting: Promise<void> | undefined
  error: string | undefined
  fast: FastCall | undefined
  idleTimer: NodeJS.Timeout | undefined
  inflight = 0
  /** The tools of the last successful listing, kept while down so the ACL can still judge calls to them. */
  known = new Map<string, ProxiedTool>()
  /** The whole last listing, kept while down: resources and prompts are judged by it before a reconnect. */
  lastCatalog: Catalog = nameCatalog('', EMPTY_RAW, undefined)
  lastAttempt = 0
  /** Did the last connection attempt run out of time (rather than being refused)? */
  lastTimedOut = false
  lastUsed = 0
  /** Has a listing ever arrived (a lazy server's catalog is unknown until it ran once)? */
  listed = false
  pinger: NodeJS.Timeout | undefined
  raw: RawCatalog = EMPTY_RAW
  retry: NodeJS.Timeout | undefined
  state: UpstreamState
  stopped = false
  /**
   * Upstream URIs some client sessions subscribed to, with how many hold each: the upstream is
   * subscribed once, unsubscribed when the last holder leaves, and subscribed again after a reconnect.
   */
  subscriptions = new Map<string, Subscription>()
  /**
   * resources/unsubscribe requests on their way, by upstream URI: a new first holder's subscribe
   * waits for it, so the upstream never sees the two the other way round and ends unsubscribed.
   */
  unsubscribing = new Map<string, Promise<void>>()

  constructor(
    readonly name: string,
    private readonly pool: UpstreamPool,
    private readonly o: Options,
    readonly idleMs: number,
  ) {
    this.backoff = o.minBackoffMs
    this.state = idleMs > 0 ? 'idle' : 'connecting'
  }

  get tools(): ProxiedTool[] {
    return this.catalog.tools
  }

  async call(upstreamName: string, args: Record<string, unknown> | undefined, meta: Record<string, unknown> | undefined, signal?: AbortSignal): Promise<CallToolResult> {
    const {CallToolResultSchema} = await sdkTypes()
    const params: Record<string, unknown> = {arguments: args ?? {}, name: upstreamName}
    if (meta) params._meta = meta
    return this.forward(async (conn) => {
      if (this.fast) return this.fast(params, {signal, timeoutMs: this.o.callTimeoutMs})
      return (await conn.client.request({method: 'tools/call', params}, CallToolResultSchema, {signal, timeout: this.o.callTimeoutMs})) as CallToolResult
    }, signal)
  }

  /**
   * Sends one request in the upstream session with the proxy's failure rules: the upstream's
   * JSON-RPC errors pass through, an HTTP refusal of this one request fails it alone, a transport
   * failure marks the upstream down, and a session the upstream forgot (a redeploy) is opened
   * again and the request sent once more. An idle lazy server is started first.
   */
  async forward<T>(send: (conn: UpstreamConnection) => Promise<T>, signal?: AbortSignal, retry = true): Promise<T> {
    if (this.state === 'idle') await this.wake()
    const conn = this.conn
    if (!conn || this.state !== 'up') throw this.unavailable()
    this.inflight++
    try {
      return await send(conn)
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
      const sessionLost = status === 404 || status === 400
      if (retry && sessionLost && (await this.revive(5000))) return this.forward(send, signal, false)
      throw this.unavailable()
    } finally {
      this.inflight--
      this.touch()
    }
  }

  /** One connection attempt at a time: the backoff timer and callers share it. */
  connect(timeoutMs = this.o.connectTimeoutMs): Promise<void> {
    this.connecting ??= this.attempt(timeoutMs).finally(() => {
      this.connecting = undefined
      this.lastAttempt = Date.now()
    })
    return this.connecting
  }

  /** Starts a lazy server that is idle (first use, or first use since it was stopped). */
  async wake(ms = this.o.connectTimeoutMs): Promise<void> {
    if (this.state !== 'idle' || this.stopped) return
    this.state = 'connecting'
    this.o.log?.(`upstream ${this.name}: starting on first use`)
    let timer: NodeJS.Timeout | undefined
    await Promise.race([this.connect(), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))])
    clearTimeout(timer)
  }

  /** A request went through: a lazy server's idle clock starts again. */
  private touch(): void {
    this.lastUsed = Date.now()
    if (this.idleMs <= 0 || this.idleTimer) return
    const check = () => {
      this.idleTimer = undefined
      if (this.state !== 'up' || this.stopped) return
      const left = this.lastUsed + this.idleMs - Date.now()
      // A server some client subscribed to stays up: asleep, it could not send the updates.
      if (left > 0 || this.inflight > 0 || this.subscriptions.size > 0) {
        this.idleTimer = setTimeout(check, this.subscriptions.size > 0 ? this.idleMs : Math.max(left, 100))
        this.idleTimer.unref()
        return
      }
      this.sleep()
    }
    this.idleTimer = setTimeout(check, this.idleMs)
    this.idleTimer.unref()
  }

  /** Stops an idle lazy server; its listing stays, so clients still see its tools. */
  private sleep(): void {
    const c = this.conn
    this.conn = undefined
    this.fast = undefined
    clearInterval(this.pinger)
    this.state = 'idle'
    this.o.log?.(`upstream ${this.name}: stopped after ${Math.round(this.idleMs / 1000)} s without a request; starts again on the next use`)
    if (c) {
      c.client.onclose = undefined
      c.close().catch(() => {})
    }
  }

  /**
   * A call found this upstream down: try to reconnect now instead of waiting for the backoff
   * timer (a redeployed upstream is usually back within the call's budget). At most one
   * on-demand attempt a second, so calls to a dead upstream do not hammer it. An attempt that ran
   * out of time (a slow upstream, a loaded machine) is followed by another (given all that is left
   * of `ms`) until `ms` runs out; a refusal is an answer and ends the wait. `signal` (the caller
   * went away) ends it too.
   */
  async revive(ms: number, signal?: AbortSignal): Promise<boolean> {
    if (this.stopped) return false
    const deadline = Date.now() + ms
    const left = () => deadline - Date.now()
    const upNow = () => this.state === 'up' && this.conn !== undefined
    if (this.state === 'idle') await this.wake(ms)
    if (upNow()) return true
    // Attempts are at least a second apart (lastAttempt), so this loop cannot spin.
    while (left() > 0 && !signal?.aborted) {
      if (!this.connecting) {
        const wait = this.lastAttempt + 1000 - Date.now()
        if (wait >= left()) return false
        if (wait > 0) await new Promise((r) => setTimeout(r, wait))
        if (upNow()) return true
        if (!this.connecting) {
          clearTimeout(this.retry)
          this.connect(Math.max(this.o.connectTimeoutMs, left())).catch(() => {})
        }
      }
      let timer: NodeJS.Timeout | undefined
      const stop = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, Math.max(0, left()))
        signal?.addEventListener('abort', () => resolve(), {once: true})
      })
      await Promise.race([this.connecting ?? Promise.resolve(), stop])
      clearTimeout(timer)
      if (upNow()) return true
      if (!this.lastTimedOut || this.connecting) return false
    }
    return upNow()
  }

  private async attempt(timeoutMs: number): Promise<void> {
    if (this.stopped) return
    let conn: UpstreamConnection | undefined
    let signal: AbortSignal | undefined
    this.lastTimedOut = false
    try {
      signal = AbortSignal.timeout(timeoutMs)
      conn = await this.o.connect(this.name, signal)
      if (this.stopped) {
        await conn.close().catch(() => {})
        return
      }
      const c = conn
      c.client.onclose = () => this.down(new ShortReason('connection closed'), c)
      const t = await sdkTypes()
      const reload = (kind: CatalogKind) => () => {
        this.load(c, kind).catch((error) => this.down(error, c))
      }
      c.client.setNotificationHandler(t.ToolListChangedNotificationSchema, reload('tools'))
      c.client.setNotificationHandler(t.ResourceListChangedNotificationSchema, reload('resources'))
      c.client.setNotificationHandler(t.PromptListChangedNotificationSchema, reload('prompts'))
      c.client.setNotificationHandler(t.ResourceUpdatedNotificationSchema, (n) => {
        this.pool.emit('resourceUpdated', `${this.name}${TOOL_SEPARATOR}${n.params.uri}`)
      })
      this.conn = c
      this.fast = fastCallFor(c)
      let raw = await listKind(c.client, 'tools', EMPTY_RAW)
      raw = await listKind(c.client, 'resources', raw)
      raw = await listKind(c.client, 'prompts', raw)
      this.setCatalog(raw)
      for (const uri of this.subscriptions.keys()) await c.client.subscribeResource({uri}).catch(() => this.subscriptions.delete(uri))
      this.state = 'up'
      this.error = undefined
      this.backoff = this.o.minBackoffMs
      this.o.log?.(`upstream ${this.name}: connected, ${this.tools.length} tools, ${this.catalog.resources.length} resources, ${this.catalog.prompts.length} prompts`)
      this.pool.changed('tools', 'resources', 'prompts')
      this.touch()
      let pinging = false
      let late = 0
      this.pinger = setInterval(() => {
        // One ping at a time: on a loaded machine a slow answer must not pile up more pings.
        if (pinging) return
        pinging = true
        c.client
          .ping({timeout: Math.max(1000, this.o.pingIntervalMs)})
          .then(
            () => {
              late = 0
            },
            (error) => {
              if (timedOut(error) && ++late < this.o.pingFailures) return
              this.down(error, c)
            },
          )
          .finally(() => {
            pinging = false
          })
      }, this.o.pingIntervalMs)
      this.pinger.unref()
    } catch (error) {
      if (conn) await conn.close().catch(() => {})
      this.conn = undefined
      this.lastTimedOut = signal?.aborted === true
      this.fail(signal?.aborted && !conn ? new ShortReason(`no answer within ${timeoutMs / 1000} s`) : error)
    }
  }

  /** The connection `conn` is gone: drop its listing and start reconnecting (once per connection). */
  down(error: unknown, conn: UpstreamConnection): void {
    if (this.conn !== conn || this.stopped) return
    this.conn = undefined
    this.fast = undefined
    clearInterval(this.pinger)
    conn.client.onclose = undefined
    conn.close().catch(() => {})
    this.fail(error)
  }

  /** The operator's read/write overrides changed (config reload): classify the same listing again. */
  reclassify(): void {
    if (this.listed) this.setCatalog(this.raw)
  }

  async stop(): Promise<void> {
    this.stopped = true
    clearInterval(this.pinger)
    clearTimeout(this.retry)
    clearTimeout(this.idleTimer)
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
    const had = this.catalog.tools.length + this.catalog.resources.length + this.catalog.templates.length + this.catalog.prompts.length > 0
    this.state = 'down'
    this.error = reason(error)
    this.catalog = nameCatalog(this.name, EMPTY_RAW, undefined)
    if (had) this.pool.changed('tools', 'resources', 'prompts')
    this.o.log?.(`upstream ${this.name}: ${this.error}; retrying in ${this.backoff} ms`)
    this.lastAttempt = Date.now()
    clearTimeout(this.retry)
    this.retry = setTimeout(() => {
      this.connect().catch(() => {})
    }, this.backoff)
    this.retry.unref()
    this.backoff = Math.min(this.backoff * 2, this.o.maxBackoffMs)
  }

  private async load(c: UpstreamConnection, kind: CatalogKind): Promise<void> {
    const raw = await listKind(c.client, kind, this.raw)
    if (this.conn !== c) return
    this.setCatalog(raw)
    if (this.state === 'up') this.pool.changed(kind)
  }

  private setCatalog(raw: RawCatalog): void {
    this.raw = raw
    this.listed = true
    this.catalog = nameCatalog(this.name, raw, this.o.toolAccess?.get(this.name))
    this.lastCatalog = this.catalog
    this.known = new Map(this.catalog.tools.map((t) => [t.fullName, t]))
  }
}

interface Indexes {
  prompts: Map<string, ProxiedPrompt>
  resources: Map<string, ProxiedResource>
  templates: ProxiedTemplate[]
  tools: Map<string, ProxiedTool>
}

/**
 * The upstream servers behind the proxy: one long-lived session each, reconnecting with
 * exponential backoff (lazy stdio servers: started on first use, stopped when idle). A server
 * that is down contributes nothing; `changed` fires (with the kind: `tools`, `resources`,
 * `prompts`) whenever an aggregated listing changes, so sessions can send list_changed
 * notifications, and `resourceUpdated` (with the prefixed URI) passes on resource updates.
 */
/** A server whose tools were never listed and will be soon: lazy and asleep, or connecting now. */
const unlisted = (u: Upstream): boolean => !u.listed && (u.state === 'idle' || (u.state === 'connecting' && u.connecting !== undefined))

export class UpstreamPool extends EventEmitter {
  private readonly callTimeoutMs: number
  private index: Indexes = {prompts: new Map(), resources: new Map(), templates: [], tools: new Map()}
  private readonly o: Options
  private readonly upstreams = new Map<string, Upstream>()

  constructor(names: readonly string[], options: PoolOptions) {
    super()
    this.setMaxListeners(0)
    // Options given as undefined must not override the defaults.
    const given = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as PoolOptions
    this.o = {callTimeoutMs: 120_000, connectTimeoutMs: 15_000, maxBackoffMs: 30_000, minBackoffMs: 250, pingFailures: 3, pingIntervalMs: 15_000, ...given}
    this.callTimeoutMs = this.o.callTimeoutMs
    for (const n of names) this.upstreams.set(n, this.create(n))
  }

  private create(name: string): Upstream {
    return new Upstream(name, this, this.o, this.o.idleMs?.(name) ?? 0)
  }

  async call(fullName: string, args: Record<string, unknown> | undefined, meta?: Record<string, unknown>, signal?: AbortSignal): Promise<CallToolResult> {
    const t = this.index.tools.get(fullName)
    if (!t) throw new Error(`unknown tool ${fullName}`)
    return this.upstreams.get(t.server)!.call(t.upstreamName, args, meta, signal)
  }

  changed(...kinds: CatalogKind[]): void {
    const index: Indexes = {prompts: new Map(), resources: new Map(), templates: [], tools: new Map()}
    for (const u of this.upstreams.values()) {
      for (const t of u.catalog.tools) index.tools.set(t.fullName, t)
      for (const r of u.catalog.resources) index.resources.set(r.fullUri, r)
      for (const p of u.catalog.prompts) index.prompts.set(p.fullName, p)
      index.templates.push(...u.catalog.templates)
    }
    this.index = index
    for (const kind of new Set(kinds.length > 0 ? kinds : (['tools', 'resources', 'prompts'] as const))) this.emit(kind === 'tools' ? 'changed' : `${kind}Changed`)
  }

  /** The server a prefixed name (or URI) belongs to, when that server is configured (up or not). */
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
   * Connects every upstream (lazy ones wait for their first use); resolves when each has either
   * connected or failed once, or after `waitMs`, whichever is first: a slow upstream keeps
   * connecting in the background.
   */
  async start(waitMs = 10_000): Promise<void> {
    await this.settle([...this.upstreams.values()].filter((u) => u.state !== 'idle'), waitMs)
  }

  private async settle(list: Upstream[], waitMs: number, start = (u: Upstream) => u.connect()): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      Promise.all(list.map((u) => start(u))),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, waitMs)
      }),
    ])
    clearTimeout(timer)
  }

  /**
   * Before a listing: lazy servers that never ran are started, and servers whose first connection
   * is still under way (a slow start outlasted `start`'s wait) are waited for, so their tools can
   * be listed (bounded by `waitMs`); after that a listing stays known while they sleep or reconnect.
   * Without the second wait a client that lists right after the proxy starts caches an empty list.
   */
  async warm(waitMs = 10_000): Promise<void> {
    const cold = [...this.upstreams.values()].filter(unlisted)
    if (cold.length > 0) await this.settle(cold, waitMs, (u) => (u.state === 'idle' ? u.wake(waitMs) : (u.connecting ?? Promise.resolve())))
  }

  /** True when a listing would have to start a lazy server, or wait for a first connection, first. */
  get cold(): boolean {
    for (const u of this.upstreams.values()) if (unlisted(u)) return true
    return false
  }

  status(): UpstreamStatus[] {
    return [...this.upstreams.values()].map((u) => ({
      error: u.error,
      name: u.name,
      prompts: u.catalog.prompts.length,
      resources: u.catalog.resources.length,
      state: u.state,
      tools: u.tools.length,
    }))
  }

  async stop(): Promise<void> {
    await Promise.all([...this.upstreams.values()].map((u) => u.stop()))
  }

  /**
   * Config reload: servers no longer configured are stopped, new ones started, and `changed`
   * ones (another URL, command, headers...) restarted; the others keep their sessions. New
   * read/write overrides re-classify every listing.
   */
  async reconfigure(names: readonly string[], changed: ReadonlySet<string>, toolAccess: Map<string, (tool: string) => Access | undefined>): Promise<void> {
    this.o.toolAccess = toolAccess
    const stopping: Promise<void>[] = []
    const starting: Upstream[] = []
    const replaced = new Map<string, Upstream>()
    for (const [n, u] of this.upstreams) {
      if (!names.includes(n) || changed.has(n)) {
        replaced.set(n, u)
        this.upstreams.delete(n)
        stopping.push(u.stop())
      }
    }
    const waking: Upstream[] = []
    for (const n of names) {
      if (this.upstreams.has(n)) continue
      const u = this.create(n)
      // A restarted server is subscribed again to what the sessions still hold; a lazy one is
      // started for it at once, since asleep it could not send the updates.
      const before = replaced.get(n)
      if (before) u.subscriptions = before.subscriptions
      this.upstreams.set(n, u)
      if (u.state !== 'idle') starting.push(u)
      else if (u.subscriptions.size > 0) waking.push(u)
    }
    for (const u of this.upstreams.values()) u.reclassify()
    this.changed()
    await Promise.all(stopping)
    // New servers connect in the background (their tools appear when they are up), as at start.
    for (const u of starting) u.connect().catch(() => {})
    for (const u of waking) u.wake().catch(() => {})
  }

  tool(fullName: string): ProxiedTool | undefined {
    return this.index.tools.get(fullName)
  }

  tools(): IterableIterator<ProxiedTool> {
    return this.index.tools.values()
  }

  resources(): IterableIterator<ProxiedResource> {
    return this.index.resources.values()
  }

  templates(): readonly ProxiedTemplate[] {
    return this.index.templates
  }

  prompts(): IterableIterator<ProxiedPrompt> {
    return this.index.prompts.values()
  }

  prompt(fullName: string): ProxiedPrompt | undefined {
    return this.index.prompts.get(fullName)
  }

  resource(fullUri: string): ProxiedResource | undefined {
    return this.index.resources.get(fullUri)
  }

  async getPrompt(p: ProxiedPrompt, args: Record<string, string> | undefined, signal?: AbortSignal): Promise<GetPromptResult> {
    const u = this.upstream(p.server)
    return u.forward((c) => c.client.getPrompt({arguments: args, name: p.upstreamName}, {signal, timeout: this.callTimeoutMs}), signal)
  }

  async readResource(server: string, upstreamUri: string, signal?: AbortSignal): Promise<ReadResourceResult> {
    const u = this.upstream(server)
    return u.forward((c) => c.client.readResource({uri: upstreamUri}, {signal, timeout: this.callTimeoutMs}), signal)
  }

  /**
   * completion/complete at one upstream (params already in its own names). An upstream that does
   * not offer completions has none to give: an empty list, as the spec lets a server answer.
   */
  async complete(server: string, params: CompleteRequest['params'], signal?: AbortSignal): Promise<CompleteResult> {
    const u = this.upstream(server)
    return u.forward(async (c) => {
      if (!c.client.getServerCapabilities()?.completions) return {completion: {hasMore: false, values: []}}
      return c.client.complete(params, {signal, timeout: this.callTimeoutMs})
    }, signal)
  }

  /**
   * Takes one hold on the upstream's subscription to a resource: the first hold sends
   * resources/subscribe, later ones share it (updates fan out as `resourceUpdated`). Each hold is
   * given back with `unsubscribe`. `signal` (this caller went away) ends this caller's wait and
   * hold only; the shared request is cancelled when no holder is left.
   */
  async subscribe(server: string, upstreamUri: string, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted()
    const u = this.upstream(server)
    let s = u.subscriptions.get(upstreamUri)
    if (!s) {
      const leaving = u.unsubscribing.get(upstreamUri) ?? Promise.resolve()
      const entry: Subscription = {cancel: new AbortController(), holders: 0, ready: Promise.resolve(), sent: false}
      const {signal: shared} = entry.cancel
      entry.ready = leaving.then(() =>
        u.forward(async (c) => {
          shared.throwIfAborted()
          entry.sent = true
          try {
            await c.client.subscribeResource({uri: upstreamUri}, {signal: shared, timeout: this.callTimeoutMs})
          } catch (error) {
            // Refused or lost with its session: nothing to undo. Cancelled: it may have been applied.
            if (!shared.aborted) entry.sent = false
            throw error
          }
        }, shared),
      )
      // A refused subscription is forgotten at once, so the next client asks the upstream again.
      entry.ready.catch(() => {
        if (u.subscriptions.get(upstreamUri) === entry) u.subscriptions.delete(upstreamUri)
      })
      u.subscriptions.set(upstreamUri, entry)
      s = entry
    }
    // Held before the answer arrives, so a last holder leaving meanwhile does not unsubscribe it.
    s.holders++
    try {
      await waitFor(s.ready, signal)
    } catch (error) {
      await this.release(u, upstreamUri, s)
      throw error
    }
  }

  /**
   * Gives back one hold (a session unsubscribed or ended): the upstream is sent
   * resources/unsubscribe when the last holder leaves. An upstream that is not up has nothing to
   * be told (its subscription ended with its session) and is not started for it.
   */
  async unsubscribe(server: string, upstreamUri: string): Promise<void> {
    const u = this.upstreams.get(server)
    const s = u?.subscriptions.get(upstreamUri)
    if (u && s) await this.release(u, upstreamUri, s)
  }

  private async release(u: Upstream, upstreamUri: string, s: Subscription): Promise<void> {
    s.holders--
    if (s.holders > 0) return
    if (u.subscriptions.get(upstreamUri) === s) u.subscriptions.delete(upstreamUri)
    // Nobody waits for a subscription still on its way: it is cancelled (an answer already given is kept).
    s.cancel.abort()
    await s.ready.catch(() => {})
    // Subscribed, or cancelled after it left (the upstream may have applied it): undone, unless a
    // new holder has subscribed again meanwhile.
    if (!s.sent || u.state !== 'up' || u.subscriptions.has(upstreamUri)) return
    const sent = u
      .forward(async (c) => {
        await c.client.unsubscribeResource({uri: upstreamUri}, {timeout: this.callTimeoutMs})
      })
      .catch(() => {})
      .finally(() => {
        if (u.unsubscribing.get(upstreamUri) === sent) u.unsubscribing.delete(upstreamUri)
      })
    u.unsubscribing.set(upstreamUri, sent)
    await sent
  }

  /** The last listing of a server, kept while it is down (empty before its first listing). */
  lastCatalog(server: string): Catalog | undefined {
    return this.upstreams.get(server)?.lastCatalog
  }

  private upstream(server: string): Upstream {
    const u = this.upstreams.get(server)
    if (!u) throw new UpstreamUnavailableError(`server "${server}" is not configured`)
    return u
  }

  /** A tool of the server's last listing, also while the server is down (for the ACL). */
  knownTool(fullName: string): ProxiedTool | undefined {
    const server = this.serverOf(fullName)
    return server === undefined ? undefined : this.upstreams.get(server)?.known.get(fullName)
  }

  /**
   * Tries to reconnect a server that is down within a call, waiting at most `ms` (by default the
   * connection timeout, `--connect-timeout`) and never past the call's own timeout; true when it is up.
   */
  revive(server: string, ms = this.o.connectTimeoutMs, signal?: AbortSignal): Promise<boolean> {
    const u = this.upstreams.get(server)
    return u ? u.revive(Math.min(ms, this.callTimeoutMs), signal) : Promise.resolve(false)
  }

  /** The outage error of a configured server that is neither up nor idle (an idle one starts on use), else undefined. */
  unavailable(server: string): undefined | UpstreamUnavailableError {
    const u = this.upstreams.get(server)
    return u && u.state !== 'up' && u.state !== 'idle' ? u.unavailable() : undefined
  }
}
