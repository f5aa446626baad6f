import type {Server, ServerOptions} from 'node:http'
import type {Socket} from 'node:net'

/** Connection limits of one listening server (per protocol, not per process). */
export interface NetLimits {
  /**
   * A request that has started (or a connection's startup and login) must be complete within this
   * many milliseconds, whatever trickle of bytes keeps it alive: a slowloris client is dropped. 0: none.
   */
  headerTimeoutMs: number
  /** A connection with no traffic either way for this long is closed. 0: never. */
  idleTimeoutMs: number
  /** Connections served at once; one more gets the protocol's refusal and is closed. */
  maxConnections: number
}

/** The documented defaults (docs/reliability.md): 1,000 connections, 30 s to finish a request, 10 min idle. */
export const DEFAULT_NET_LIMITS: NetLimits = {headerTimeoutMs: 30_000, idleTimeoutMs: 600_000, maxConnections: 1000}

export interface GuardHooks {
  /**
   * Sends the protocol's refusal (RESP `-ERR ...`, PostgreSQL 53300), then calls `end`; it may first
   * read what the client sends (PostgreSQL answers the startup packet). Without it the socket just ends.
   */
  refuse?: (socket: Socket, end: () => void) => void
  /**
   * Called when a connection is dropped for a timeout (for a debug log line). Returning true says
   * it wrote a farewell (PostgreSQL's FATAL 57P05): the socket is then ended, so the farewell is
   * flushed, and destroyed only if the client has not closed it after a short grace.
   */
  timedOut?: (socket: Socket, why: 'header' | 'idle') => boolean | void
}

/** How long a refused client may take to read its refusal before the socket is destroyed. */
const REFUSAL_GRACE_MS = 2000

/**
 * Admission and timeouts for the connections of one server, shared by every protocol server (svc's
 * REST, Redis and PostgreSQL, gw's proxy): a connection past `maxConnections` is answered with the
 * protocol's refusal and closed at once, so the server keeps answering the clients it has; a
 * request that does not complete within `headerTimeoutMs` (slowloris) and a connection idle for
 * `idleTimeoutMs` are dropped, so no client holds a slot forever.
 *
 * Byte-stream protocols call `admit` first in their connection handler and `waiting` whenever
 * their parser has run out of complete requests; HTTP servers pass `httpServerLimits` to
 * createServer and call `refuseRequest` first in their request handler.
 */
export class ConnectionGuard {
  readonly limits: NetLimits
  private open = 0
  private readonly refused = new WeakSet<Socket>()
  private readonly timers = new WeakMap<Socket, NodeJS.Timeout>()

  constructor(
    limits: Partial<NetLimits> = {},
    private readonly hooks: GuardHooks = {},
  ) {
    this.limits = resolveNetLimits(limits)
  }

  /** Connections admitted and still open. */
  get size(): number {
    return this.open
  }

  /**
   * Counts a new connection. Past the limit the refusal is written, the socket ended (its
   * incoming bytes read and dropped so the client is not reset before it reads the answer), and
   * false returned: the caller then does nothing more with it. `startup`: the connection must log
   * in within the header timeout (PostgreSQL); otherwise it starts idle (Redis).
   */
  admit(socket: Socket, options: {startup?: boolean} = {}): boolean {
    if (this.open >= this.limits.maxConnections) {
      this.refuse(socket)
      return false
    }
    this.open++
    socket.once('close', () => {
      this.open--
      clearTimeout(this.timers.get(socket))
    })
    if (this.limits.idleTimeoutMs > 0) {
      socket.setTimeout(this.limits.idleTimeoutMs)
      socket.once('timeout', () => this.drop(socket, 'idle'))
    }
    if (options.startup) this.arm(socket)
    return true
  }

  /**
   * The protocol's parser needs more bytes. `partial`: some bytes of an incomplete request (or an
   * unfinished login) are held; `handled`: requests completed since the last call. The header
   * clock starts at the first partial wait and restarts only when requests complete, so a steady
   * pipeline is never cut while a client that trickles one request byte by byte is.
   */
  waiting(socket: Socket, partial: boolean, handled: number): void {
    if (!partial) {
      clearTimeout(this.timers.get(socket))
      this.timers.delete(socket)
    } else if (handled > 0 || !this.timers.has(socket)) this.arm(socket)
  }

  /** HTTP: true (and a 503 sent, the connection closed after) when this request's connection was over the limit. */
  refuseRequest(req: {socket: Socket}, res: {end(body: string): void; setHeader(name: string, value: string): unknown; statusCode: number}): boolean {
    if (!this.refused.has(req.socket)) return false
    res.statusCode = 503
    res.setHeader('connection', 'close')
    res.setHeader('content-type', 'application/json')
    res.setHeader('retry-after', '1')
    res.end(JSON.stringify({error: {code: 'too_many_connections', message: `too many connections: this server serves at most ${this.limits.maxConnections} at once; retry later`}}))
    return true
  }

  /**
   * HTTP: counts each connection (call once, after setting `keepAliveTimeout`, before `listen`);
   * one past the limit is marked so `refuseRequest` answers its request with a 503, and is
   * destroyed if it sends none in time. A connection with no request in flight (never sent one, or
   * kept alive after its last answer) is closed after `idleTimeoutMs` (Node adds its one-second
   * keep-alive margin after an answer); a request being served, however long and silent (a slow
   * query, an event stream), is never cut by it. `busy`: a server that already knows whether a
   * connection has a request in flight says so, and requests are not counted here (a listener
   * and a 'close' handler per request: about 1.5 us of a 20 us request, svc's REST reads).
   */
  watchHttp(server: Server, options: {busy?: (socket: Socket) => boolean} = {}): void {
    if (this.limits.idleTimeoutMs > 0) this.closeIdleHttp(server, this.limits.idleTimeoutMs, options.busy)
    server.prependListener('connection', (socket: Socket) => {
      if (this.open >= this.limits.maxConnections) {
        this.refused.add(socket)
        setTimeout(() => socket.destroy(), REFUSAL_GRACE_MS).unref()
        return
      }
      this.open++
      socket.once('close', () => this.open--)
    })
  }

  /**
   * Node's own socket timeout (armed here at connection, and by Node with `keepAliveTimeout` after
   * each answer) raises the server's 'timeout' event; with a listener Node leaves the socket to it,
   * so only sockets serving nothing are closed. `server.timeout` stays 0: Node would otherwise arm
   * a new timer (a Timeout and a bound function) at the start of every kept-alive request, about
   * 1.5 us of a 20 us GET; with 0 it disarms the keep-alive timer instead, and a request in flight
   * has nothing that could cut it.
   */
  private closeIdleHttp(server: Server, idleMs: number, busy?: (socket: Socket) => boolean): void {
    server.prependListener('connection', (socket: Socket) => socket.setTimeout(idleMs))
    server.keepAliveTimeout = Math.min(server.keepAliveTimeout || idleMs, idleMs)
    let serving = busy
    if (serving === undefined) {
      const inFlight = new WeakMap<Socket, number>()
      server.prependListener('request', (req, res) => {
        const socket = req.socket
        inFlight.set(socket, (inFlight.get(socket) ?? 0) + 1)
        res.once('close', () => inFlight.set(socket, (inFlight.get(socket) ?? 1) - 1))
      })
      serving = (socket) => (inFlight.get(socket) ?? 0) > 0
    }
    server.on('timeout', (socket: Socket) => {
      if (serving(socket)) socket.setTimeout(idleMs)
      else this.drop(socket, 'idle')
    })
  }

  private arm(socket: Socket): void {
    clearTimeout(this.timers.get(socket))
    if (this.limits.headerTimeoutMs <= 0) return
    const t = setTimeout(() => this.drop(socket, 'header'), this.limits.headerTimeoutMs)
    t.unref()
    this.timers.set(socket, t)
  }

  private drop(socket: Socket, why: 'header' | 'idle'): void {
    if (socket.destroyed) return
    if (this.hooks.timedOut?.(socket, why) !== true) {
      socket.destroy()
      return
    }
    // Destroyed at once, the farewell could be lost: still buffered, or discarded by a reset.
    socket.on('data', () => {})
    socket.end()
    setTimeout(() => socket.destroy(), REFUSAL_GRACE_MS).unref()
  }

  private refuse(socket: Socket): void {
    socket.on('error', () => {})
    // Incoming bytes are read and dropped: unread ones would make the close a reset that loses the refusal.
    socket.on('data', () => {})
    if (this.hooks.refuse) this.hooks.refuse(socket, () => socket.end())
    else socket.end()
    setTimeout(() => socket.destroy(), REFUSAL_GRACE_MS).unref()
  }
}

/** Fills in the defaults and checks the values (non-negative integers, at least one connection). */
export function resolveNetLimits(limits: Partial<NetLimits> = {}): NetLimits {
  const out = {...DEFAULT_NET_LIMITS}
  for (const [k, v] of Object.entries(limits) as Array<[keyof NetLimits, number | undefined]>) {
    if (v === undefined) continue
    if (!Number.isInteger(v) || v < 0 || (k === 'maxConnections' && v < 1)) throw new RangeError(`${k} must be a ${k === 'maxConnections' ? 'positive' : 'non-negative'} integer, got ${v}`)
    out[k] = v
  }
  return out
}

/**
 * createServer options that make Node's HTTP server enforce the header timeout itself (it answers
 * 408 and closes), checked often enough that the timeout holds to within a quarter of its value.
 */
export function httpServerLimits(limits: NetLimits): Pick<ServerOptions, 'connectionsCheckingInterval' | 'headersTimeout' | 'requestTimeout'> {
  if (limits.headerTimeoutMs <= 0) return {headersTimeout: 0, requestTimeout: 0}
  return {
    connectionsCheckingInterval: Math.max(100, Math.min(30_000, Math.floor(limits.headerTimeoutMs / 4))),
    headersTimeout: limits.headerTimeoutMs,
    // A whole request (body included) may take longer than its headers: Node's default, or more.
    requestTimeout: Math.max(300_000, limits.headerTimeoutMs),
  }
}
