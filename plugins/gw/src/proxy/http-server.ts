import type {StreamableHTTPServerTransport} from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import {randomUUID} from 'node:crypto'
import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http'
import type {AddressInfo} from 'node:net'

import {BodyTooLargeError, ConnectionGuard, drainRefusedBody, httpServerLimits, type NetLimits, readBody} from '@toolkit/kit'

import type {User} from './acl.js'
import type {AsStore} from './as-store.js'
import {type AggregatorContext, createAggregatingServer, forwardPoolEvents, toolHandlers} from './aggregator.js'
import {catalogHandlers} from './catalog-handlers.js'
import type {ProxyAuth} from './server-auth.js'
import {type AuthorizationServer, createAuthorizationServer} from './oauth-server.js'
import type {AuthResult} from './auth-providers/types.js'
import {TokenBuckets} from './limits.js'
import {type Session, SessionRegistry} from './sessions.js'
import {sseEndpoints} from './sse-endpoint.js'
import type {UpstreamPool} from './upstreams.js'

export interface HttpProxyOptions {
  /** The authorization server's state when replicas share a store; in-process (and `stateFile`) when omitted. */
  asStore?: AsStore
  audit?: AggregatorContext['audit']
  auth: ProxyAuth
  host: string
  log?: (message: string) => void
  /** Open sessions per user counted over all replicas (see shared-sessions.ts); per process only when omitted. */
  sharedSessions?: ConstructorParameters<typeof SessionRegistry>[1]
  /** The per-user request limit shared with other replicas (see shared-rate.ts); per process only when omitted. */
  sharedRate?: {hit(key: string): number}
  /** The per-address request limit shared with other replicas, likewise. */
  sharedAddressRate?: {hit(key: string): number}
  /** The /register flood limits shared with other replicas (see shared-registrations.ts). */
  sharedRegistrations?: import('./shared-registrations.js').SharedRegistrationLimits
  /** Largest accepted JSON-RPC request body. */
  maxBodyBytes?: number
  /** Connection count and header timeout (kit's net-limits; DEFAULT_NET_LIMITS when absent). */
  net?: Partial<NetLimits>
  /** Sessions, load and their limits; see `SessionLimits`. */
  limits?: Partial<SessionLimits>
  pool: UpstreamPool
  port: number
}

/** What one user (or one address) may take of the proxy; docs/gw-proxy.md "Limits". */
export interface SessionLimits {
  /** Requests per second per client address on /mcp (burst twice that); 0 = off. */
  addressRate: number
  /** Open sessions in total; when full, the least recently used one is closed to make room. */
  maxSessions: number
  maxSessionsPerSubject: number
  /** Sessions idle this long are closed. */
  sessionIdleMs: number
  /** Requests per second per subject on /mcp (burst twice that); 0 = off. */
  subjectRate: number
}

export const DEFAULT_LIMITS: SessionLimits = {addressRate: 500, maxSessions: 10_000, maxSessionsPerSubject: 100, sessionIdleMs: 30 * 60_000, subjectRate: 200}

export interface HttpProxy {
  close(): Promise<void>
  /** A reloaded configuration's providers, ACL and warnings (the oauth_as settings must be unchanged). */
  update(auth: ProxyAuth): void
  readonly port: number
  /** The MCP endpoint, `http://host:port/mcp`. */
  readonly url: string
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost'])

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.end()
    return
  }
  const text = JSON.stringify(body)
  res.writeHead(status, {'cache-control': 'no-store', 'content-length': Buffer.byteLength(text), 'content-type': 'application/json', ...headers})
  res.end(text)
}

function rpcError(res: ServerResponse, status: number, code: number, message: string, headers?: Record<string, string>): void {
  send(res, status, {error: {code, message}, id: null, jsonrpc: '2.0'}, headers)
}

/** A refused body: a 413 is read to its end (kit's drainRefusedBody) so the sending client gets the answer, not a reset. */
function refuseBody(req: IncomingMessage, res: ServerResponse, error: BodyError): void {
  if (error.status === 413) drainRefusedBody(req, res)
  rpcError(res, error.status, error.code, error.message)
}

class BodyError extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
  ) {
    super(message)
  }
}

async function readJson(req: IncomingMessage, limit: number): Promise<unknown> {
  let body: Buffer
  try {
    body = await readBody(req, limit)
  } catch (error) {
    throw error instanceof BodyTooLargeError ? new BodyError(413, -32600, error.message) : error
  }
  try {
    return JSON.parse(body.toString('utf8'))
  } catch (error) {
    throw new BodyError(400, -32700, `Parse error: ${(error as Error).message}`)
  }
}

type FastRequest = {id: number | string; method: 'tools/call'; params: {_meta?: Record<string, unknown>; arguments?: Record<string, unknown>; name: string}} | {id: number | string; method: 'tools/list'; params?: unknown}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * A well-formed single tools/list or tools/call request in an established session: the only
 * shapes the fast path answers. Anything else (batches, other methods, odd params) goes to the
 * SDK transport, which owns validation and its error replies.
 */
function fastRequest(body: unknown): FastRequest | undefined {
  if (!isPlainObject(body) || body.jsonrpc !== '2.0' || (typeof body.id !== 'string' && typeof body.id !== 'number')) return undefined
  if (body.method === 'tools/list') return body.params === undefined || (isPlainObject(body.params) && body.params.cursor === undefined) ? (body as FastRequest) : undefined
  if (body.method !== 'tools/call' || !isPlainObject(body.params)) return undefined
  const p = body.params
  if (typeof p.name !== 'string') return undefined
  if (p.arguments !== undefined && !isPlainObject(p.arguments)) return undefined
  if (p._meta !== undefined && !isPlainObject(p._meta)) return undefined
  return body as FastRequest
}

/** Whose session count a new session uses: anonymous users all share one subject, so theirs are counted per address. */
function ownerOf(req: IncomingMessage, user: User): string {
  return user.provider === 'none' ? `${user.subject}@${req.socket.remoteAddress}` : user.subject
}

function isInitialize(body: unknown): boolean {
  const one = (m: unknown) => typeof m === 'object' && m !== null && (m as {method?: unknown}).method === 'initialize'
  return Array.isArray(body) ? body.some(one) : one(body)
}

/**
 * The HTTP front of `gw serve --http`: `/mcp` (Streamable HTTP, one MCP session per client,
 * JSON responses), `/health`, and, with `oauth_as`, the authorization server's routes. Every
 * /mcp request is authenticated by the provider chain before its body is read.
 */
export async function startHttpProxy(o: HttpProxyOptions): Promise<HttpProxy> {
  const [{StreamableHTTPServerTransport}, {SUPPORTED_PROTOCOL_VERSIONS}] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ])
  const log = o.log ?? (() => {})
  const limit = o.maxBodyBytes ?? 4 * 1024 * 1024
  const limits: SessionLimits = {...DEFAULT_LIMITS, ...Object.fromEntries(Object.entries(o.limits ?? {}).filter(([, v]) => v !== undefined))}
  const idleMs = limits.sessionIdleMs
  const byAddress = new TokenBuckets(limits.addressRate, limits.addressRate * 2)
  const bySubject = new TokenBuckets(limits.subjectRate, limits.subjectRate * 2)
  const tooMany = (res: ServerResponse, seconds: number, message: string) => rpcError(res, 429, -32_000, message, {'retry-after': String(seconds)})
  const {pool} = o
  let auth = o.auth
  const ctx: AggregatorContext = {
    acl: auth.acl,
    audit: o.audit,
    onDecision: (d) => {
      if (!d.allowed) log(`denied ${d.subject} -> ${d.tool} by ${d.rule}`)
    },
    pool,
  }
  const handlers = toolHandlers(ctx)
  const catalog = catalogHandlers(ctx)
  const as: AuthorizationServer | undefined = auth.oauthAs ? await createAuthorizationServer(auth.oauthAs, log, o.asStore, o.sharedRegistrations) : undefined
  const resourceMetadata = auth.oauthAs ? `${new URL(auth.oauthAs.resource).origin}/.well-known/oauth-protected-resource${new URL(auth.oauthAs.resource).pathname}` : undefined
  const sessions = new SessionRegistry({idleMs, perOwner: limits.maxSessionsPerSubject, total: limits.maxSessions}, o.sharedSessions)

  // DNS-rebinding protection: on a loopback bind, a browser page on another origin must not reach us.
  const allowedHosts = LOOPBACK.has(o.host) ? new Set([...LOOPBACK, '[::1]', ...(auth.oauthAs ? [new URL(auth.oauthAs.issuer).hostname] : [])]) : undefined
  const hostOk = (req: IncomingMessage): boolean => {
    if (!allowedHosts) return true
    const h = req.headers.host
    if (!h) return false
    const hostname = h.startsWith('[') ? h.slice(0, h.indexOf(']') + 1) : h.split(':')[0]
    return allowedHosts.has(hostname.toLowerCase())
  }

  const unauthorized = (res: ServerResponse, r: Extract<AuthResult, {ok: false}>, presented: boolean) => {
    const params = [`realm="toolkit-gw"`]
    if (presented) params.push('error="invalid_token"', `error_description="${r.error.replaceAll('"', "'")}"`)
    if (resourceMetadata) params.push(`resource_metadata="${resourceMetadata}"`)
    send(res, 401, {error: presented ? 'invalid_token' : 'unauthorized', error_description: r.error}, {'www-authenticate': `Bearer ${params.join(', ')}`})
  }

  // Unauthenticated: server names and states only. No URL (it may carry a key), no error text
  // (it may quote the upstream), no tool, user or provider detail.
  const health = () => {
    const upstreams = pool.status().map((u) => ({name: u.name, state: u.state}))
    return {
      status: upstreams.every((u) => u.state === 'up' || u.state === 'idle') ? 'ok' : 'degraded',
      upstreams,
      warnings: auth.warnings,
    }
  }

  const sse = sseEndpoints({
    owner: ownerOf,
    async readBody(req, res) {
      try {
        return {body: await readJson(req, limit)}
      } catch (error) {
        if (!(error instanceof BodyError)) throw error
        refuseBody(req, res, error)
        return undefined
      }
    },
    reject: (res, status, message, retryAfter) => rpcError(res, status, status === 404 ? -32_001 : -32_000, message, retryAfter ? {'retry-after': String(retryAfter)} : {}),
    server: () => createAggregatingServer(ctx, undefined, handlers, catalog),
    sessions,
  })

  const handleMcp = async (req: IncomingMessage, res: ServerResponse, user: User) => {
    let body: unknown
    if (req.method === 'POST') {
      try {
        body = await readJson(req, limit)
      } catch (error) {
        if (error instanceof BodyError) {
          refuseBody(req, res, error)
          return
        }
        throw error
      }
    } else if (req.method !== 'GET' && req.method !== 'DELETE') {
      rpcError(res, 405, -32000, `method ${req.method} is not allowed on /mcp`, {allow: 'GET, POST, DELETE'})
      return
    }
    ;(req as IncomingMessage & {auth?: unknown}).auth = {clientId: user.subject, extra: {user}, scopes: [], token: ''}
    const id = req.headers['mcp-session-id']
    if (typeof id === 'string') {
      const s = sessions.get(id)
      if (!s) {
        rpcError(res, 404, -32001, 'Session not found: initialize a new session')
        return
      }
      if (s.kind !== 'streamable') {
        rpcError(res, 400, -32000, 'this session belongs to the legacy SSE transport: post to its /messages endpoint')
        return
      }
      if (s.subject !== user.subject) {
        rpcError(res, 403, -32000, 'this session belongs to another user')
        return
      }
      s.lastSeen = Date.now()
      const fast = req.method === 'POST' ? fastRequest(body) : undefined
      if (fast && fastHeadersOk(req)) {
        await answerFast(res, id, fast, user)
        return
      }
      await (s.transport as StreamableHTTPServerTransport).handleRequest(req, res, body)
      return
    }
    if (req.method !== 'POST' || !isInitialize(body)) {
      rpcError(res, 400, -32000, 'Bad Request: no Mcp-Session-Id header; send an initialize request first')
      return
    }
    const owner = ownerOf(req, user)
    const admission = await sessions.admit(owner, user.subject)
    if (!admission.ok) {
      tooMany(res, 60, admission.message)
      return
    }
    const server = await createAggregatingServer(ctx, undefined, handlers, catalog)
    let session: Session | undefined
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      enableJsonResponse: true,
      onsessioninitialized: (sid) => {
        session = {kind: 'streamable', lastSeen: Date.now(), owner, server, subject: user.subject, transport}
        sessions.add(sid, session)
      },
      sessionIdGenerator: randomUUID,
    })
    transport.onclose = () => {
      if (transport.sessionId && session) sessions.forget(transport.sessionId, session)
    }
    await server.connect(transport)
    await transport.handleRequest(req, res, body)
  }

  // The checks the SDK transport would make on these headers; a request failing one takes the SDK path and gets its error reply.
  const fastHeadersOk = (req: IncomingMessage): boolean => {
    const accept = req.headers.accept ?? ''
    const version = req.headers['mcp-protocol-version']
    return (
      accept.includes('application/json') &&
      accept.includes('text/event-stream') &&
      (req.headers['content-type'] ?? '').includes('application/json') &&
      (version === undefined || (typeof version === 'string' && SUPPORTED_PROTOCOL_VERSIONS.includes(version)))
    )
  }

  /**
   * tools/list and tools/call in an established session, answered without the SDK transport's
   * Node-to-web-stream conversion: the same handlers, the same JSON response the transport
   * sends in JSON-response mode (see bench/gw-proxy.mjs for why).
   */
  const answerFast = async (res: ServerResponse, sessionId: string, r: FastRequest, user: User) => {
    let reply: Record<string, unknown>
    const abort = new AbortController()
    const onClose = () => {
      if (!res.writableFinished) abort.abort()
    }
    res.once('close', onClose)
    try {
      const result = r.method === 'tools/list' ? await handlers.listTools(user) : await handlers.callTool(user, r.params, abort.signal)
      reply = {id: r.id, jsonrpc: '2.0', result}
    } catch (error) {
      const e = error as {code?: unknown; data?: unknown; message?: unknown}
      const code = typeof e.code === 'number' && Number.isSafeInteger(e.code) ? e.code : -32603
      reply = {error: {code, message: typeof e.message === 'string' ? e.message : 'Internal error', ...(e.data === undefined ? {} : {data: e.data})}, id: r.id, jsonrpc: '2.0'}
    } finally {
      res.off('close', onClose)
    }
    if (abort.signal.aborted) return
    send(res, 200, reply, {'mcp-session-id': sessionId})
  }

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (!hostOk(req)) {
      rpcError(res, 403, -32000, `Invalid Host header: ${req.headers.host ?? '(none)'}`)
      return
    }
    const q = req.url?.indexOf('?') ?? -1
    const path = q === -1 ? (req.url ?? '/') : req.url!.slice(0, q)
    if (path === '/mcp' || path === '/mcp/' || path === '/sse' || path === '/messages') {
      // Per address before authentication (which costs more, and which a guesser would hammer).
      const address = req.socket.remoteAddress ?? ''
      const addressWait = byAddress.take(address) || (o.sharedAddressRate?.hit(address) ?? 0)
      if (addressWait > 0) {
        tooMany(res, addressWait, 'too many requests from this address')
        return
      }
      const pending = auth.chain.authenticate({headers: req.headers, remoteAddress: req.socket.remoteAddress})
      const r = pending instanceof Promise ? await pending : pending
      if (!r.ok) {
        unauthorized(res, r, req.headers.authorization !== undefined)
        return
      }
      // Ending a session (DELETE) is never refused for rate: refusing it would only keep the session,
      // and the user's session count, up longer.
      const ending = req.method === 'DELETE'
      const subjectWait = ending ? 0 : bySubject.take(r.user.subject) || (o.sharedRate?.hit(r.user.subject) ?? 0)
      if (subjectWait > 0) {
        tooMany(res, subjectWait, `too many requests for "${r.user.subject}"`)
        return
      }
      if (path === '/sse') await sse.open(req, res, r.user)
      else if (path === '/messages') await sse.message(req, res, r.user)
      else await handleMcp(req, res, r.user)
      return
    }
    if (path === '/health' || path === '/healthz') {
      send(res, 200, health())
      return
    }
    const notFound = () => send(res, 404, {error: 'not_found', error_description: `no route for ${req.method} ${path}`})
    if (as) as.handle(req, res, notFound)
    else notFound()
  }

  const guard = new ConnectionGuard(o.net)
  const http: Server = createServer(httpServerLimits(guard.limits), (req, res) => {
    if (guard.refuseRequest(req, res)) return
    handle(req, res).catch((error) => {
      log(`request failed: ${(error as Error).message}`)
      rpcError(res, 500, -32603, 'Internal error')
    })
  })
  http.keepAliveTimeout = 65_000
  guard.watchHttp(http)
  const sweep = setInterval(() => {
    sessions.sweep()
    byAddress.sweep()
    bySubject.sweep()
  }, Math.min(60_000, idleMs))
  sweep.unref()
  const stopEvents = forwardPoolEvents(pool, () => sessions.servers())

  await new Promise<void>((resolve, reject) => {
    http.once('error', reject)
    http.listen(o.port, o.host, () => {
      http.off('error', reject)
      resolve()
    })
  })
  const port = (http.address() as AddressInfo).port
  const hostForUrl = o.host.includes(':') ? `[${o.host}]` : o.host
  return {
    async close() {
      clearInterval(sweep)
      stopEvents()
      await as?.close()
      await sessions.closeAll()
      http.closeAllConnections()
      await new Promise<void>((resolve) => {
        http.close(() => resolve())
      })
    },
    port,
    update(next) {
      auth = next
      ctx.acl = next.acl
    },
    url: `http://${hostForUrl}:${port}/mcp`,
  }
}
