import {randomUUID} from 'node:crypto'
import {createServer, type IncomingMessage, type ServerResponse} from 'node:http'

import {ConnectionGuard, Connections, drainRefusedBody, httpServerLimits, type NetLimits} from '@toolkit/kit'

import {isEngineError} from '../../engine/errors.js'
import type {RunningServer, ServerContext, WriteOptions} from '../../engine/types.js'
import {httpAnswering, httpTurn, httpTurnDone} from '../backpressure.js'
import type {Health} from '../health.js'
import type {ServerMetrics} from '../metrics.js'
import {listen} from '../listen.js'

import {branchRoutes} from './branches.js'
import {documentRoutes} from './documents.js'
import {opsRoutes} from './ops-routes.js'
import {DEFAULT_MAX_DEPTH, type JsonLimits, readJsonBody} from './json-body.js'
import {HttpError, type RestContext, type RestReply, type RestRequest, type Route, Router} from './router.js'
import {queryRoutes} from './query.js'
import {searchRoutes} from './search.js'
import {systemRoutes} from './system.js'
import {type UiOptions, uiRoutes} from '../ui/routes.js'

export {HttpError, type RestContext, type RestReply, type RestRequest, type Route} from './router.js'

export interface RestServerOptions {
  health: Health
  host: string
  /** Largest request body accepted (default 1 MiB); larger gets 413. */
  maxBodyBytes?: number
  /** Connection count and timeouts (kit's DEFAULT_NET_LIMITS when absent). */
  net?: Partial<NetLimits>
  /** Deepest JSON nesting accepted in a body (default 128); deeper gets 400 `too_deep`. */
  maxJsonDepth?: number
  metrics: ServerMetrics
  port: number
  /** Serve the console at /ui (servers/ui); undefined leaves it off. */
  ui?: UiOptions
}

/** Every route set of the API; a new one is one entry here (see router.ts). */
const ROUTE_SETS: Array<(ctx: RestContext) => Route[]> = [documentRoutes, searchRoutes, branchRoutes, queryRoutes, opsRoutes]

const STATUS: Record<string, number> = {
  branch_exists: 409,
  branch_not_found: 404,
  closed: 503,
  conflict: 409,
  internal: 500,
  invalid_argument: 400,
  invalid_document: 400,
  invalid_id: 400,
  locked: 503,
  not_found: 404,
  read_only: 403,
  reserved: 400,
  too_large: 413,
  unavailable: 503,
}

const JSON_TYPE = 'application/json; charset=utf-8'
const EMPTY_QUERY = new URLSearchParams()

/**
 * The REST adapter on bare node:http (no framework: routing is a lookup in a small table, which
 * keeps the per-request overhead close to a bare server's). Every route calls the engine API; see
 * docs/svc-rest.md for the routes and the error shape `{"error": {"code", "message"}}`.
 */
export async function startRestServer(ctx: ServerContext, options: RestServerOptions): Promise<RunningServer> {
  const log = ctx.logger.child('svc.rest')
  const limits = {maxBytes: options.maxBodyBytes ?? 1024 * 1024, maxDepth: options.maxJsonDepth ?? DEFAULT_MAX_DEPTH}
  const {metrics} = options
  let draining = false
  let inFlight = 0
  const restCtx: RestContext = {engine: ctx.engine, health: options.health, log, metrics}
  const router = new Router([...systemRoutes(restCtx, () => draining), ...ROUTE_SETS.flatMap((set) => set(restCtx)), ...(options.ui ? uiRoutes(options.ui) : [])])

  const send = (req: IncomingMessage, res: ServerResponse, started: bigint, label: string, reply: RestReply): void => {
    const status = reply.status ?? 200
    if (draining) res.setHeader('connection', 'close')
    const type = ('type' in reply && reply.type) || JSON_TYPE
    if ('parts' in reply) {
      res.writeHead(status, {'content-length': reply.parts.reduce((n, p) => n + p.length, 0), 'content-type': type})
      res.cork()
      for (const p of coalesce(reply.parts)) res.write(p)
      res.uncork()
      res.end()
    } else {
      const body = 'json' in reply ? JSON.stringify(reply.json) : reply.body
      res.writeHead(status, {'content-length': typeof body === 'string' ? Buffer.byteLength(body) : body.length, 'content-type': type})
      res.end(body)
    }
    metrics.httpRequest(req.method ?? 'GET', label, status, Number(process.hrtime.bigint() - started) / 1e9)
  }

  const fail = (req: IncomingMessage, res: ServerResponse, started: bigint, error: unknown): void => {
    const {code, fields, headers, message, status} = errorReply(error)
    if (status === 500) log.error('request failed', {error: (error as Error)?.message, method: req.method, url: req.url})
    if (res.headersSent) {
      res.destroy()
      return
    }
    for (const [k, v] of Object.entries(headers)) res.setHeader(k, v)
    if (status === 413) drainRefusedBody(req, res)
    send(req, res, started, status === 404 ? 'unmatched' : 'error', {json: {error: {code, message, ...fields}}, status})
  }

  const done = (req: IncomingMessage, res: ServerResponse): void => {
    inFlight--
    httpTurnDone(req.socket, res)
  }

  /** The route's handler called: its answer, or a promise of it when it waits (Git, a body, a write). */
  const dispatch = (req: IncomingMessage, res: ServerResponse): {label: string; reply: Promise<RestReply> | RestReply} => {
    const url = req.url ?? '/'
    const qi = url.indexOf('?')
    const path = qi === -1 ? url : url.slice(0, qi)
    const query = qi === -1 ? EMPTY_QUERY : new URLSearchParams(url.slice(qi + 1))
    const method = req.method ?? 'GET'
    const found = router.match(method, pathSegments(path))
    if (found === undefined) {
      const hint = path.startsWith('/api/v1/') ? '' : '; routes start with /api/v1'
      throw new HttpError(404, 'not_found', `no route ${method} ${path}${hint} (see docs/svc-rest.md)`)
    }
    if ('allow' in found) {
      throw new HttpError(405, 'method_not_allowed', `method ${method} is not allowed here; use ${found.allow.join(', ')}`, {allow: found.allow.join(', ')})
    }
    if (draining && !found.route.whileDraining) throw new HttpError(503, 'unavailable', 'server is shutting down', {connection: 'close'})
    return {label: found.route.path, reply: found.route.handler(new HandlerRequest(req, res, method, found.params, path, query, limits))}
  }

  /**
   * Answers one request. A handler that answers at once (a document in memory) is answered in
   * the same turn, with no promise: an async function, its await and a .catch/.finally chain were
   * a tenth of the CPU of a GET by id (issue 13).
   */
  const answer = (req: IncomingMessage, res: ServerResponse, started: bigint): void => {
    let label: string
    let reply: Promise<RestReply> | RestReply
    try {
      ;({label, reply} = dispatch(req, res))
    } catch (error) {
      fail(req, res, started, error)
      done(req, res)
      return
    }
    if (reply instanceof Promise) {
      reply
        .then((r) => send(req, res, started, label, r))
        .catch((error: unknown) => fail(req, res, started, error))
        .finally(() => done(req, res))
      return
    }
    try {
      send(req, res, started, label, reply)
    } catch (error) {
      fail(req, res, started, error)
    }
    done(req, res)
  }

  const guard = new ConnectionGuard(options.net)
  const server = createServer({...httpServerLimits(guard.limits), keepAliveTimeout: 65_000}, (req, res) => {
    if (guard.refuseRequest(req, res)) return
    const started = process.hrtime.bigint()
    inFlight++
    const turn = httpTurn(req.socket, res)
    if (turn === undefined) answer(req, res, started)
    else void turn.then(() => answer(req, res, started))
  })
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    // The header timeout (kit's net-limits): the answer Node itself would give.
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT' && socket.writable) socket.end('HTTP/1.1 408 Request Timeout\r\nconnection: close\r\n\r\n')
    else if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-type: application/json\r\n\r\n{"error":{"code":"bad_request","message":"malformed HTTP request"}}')
    else socket.destroy()
  })
  // A request in flight is one whose answer is not yet written out (backpressure.ts keeps each connection's latest).
  guard.watchHttp(server, {busy: httpAnswering})
  const connections = new Connections(server, {closed: () => ctx.metrics.connectionClosed('rest'), opened: () => ctx.metrics.connectionOpened('rest')})
  const port = await listen(server, options.host, options.port, 'REST')
  log.info('REST server listening', {host: options.host, port})
  return {
    async close() {
      draining = true
      await connections.shutdown({busy: () => inFlight > 0, graceMs: 0})
    },
    port,
  }
}

/** Buffers this large are written as they are; runs of smaller ones are joined (one write, not thousands). */
const OWN_WRITE_BYTES = 64 * 1024

function coalesce(parts: Buffer[]): Buffer[] {
  const out: Buffer[] = []
  let run: Buffer[] = []
  for (const p of parts) {
    if (p.length < OWN_WRITE_BYTES) {
      run.push(p)
      continue
    }
    if (run.length > 0) out.push(Buffer.concat(run))
    run = []
    out.push(p)
  }
  if (run.length > 0) out.push(Buffer.concat(run))
  return out
}

function errorReply(error: unknown): {code: string; fields: Record<string, unknown>; headers: Record<string, string>; message: string; status: number} {
  if (error instanceof HttpError) return {code: error.code, fields: error.fields, headers: error.headers, message: error.message, status: error.status}
  if (isEngineError(error)) return {code: error.code, fields: {}, headers: {}, message: error.message, status: STATUS[error.code] ?? 500}
  return {code: 'internal', fields: {}, headers: {}, message: 'internal error', status: 500}
}

/** One request as handlers see it: a class, so a request allocates no closures. */
class HandlerRequest implements RestRequest {
  readonly branch: string | undefined

  constructor(
    readonly raw: IncomingMessage,
    readonly res: ServerResponse,
    readonly method: string,
    readonly params: Record<string, string>,
    readonly path: string,
    readonly query: URLSearchParams,
    private readonly limits: JsonLimits,
  ) {
    this.branch = query === EMPTY_QUERY ? undefined : (query.get('branch') ?? undefined)
  }

  json(): Promise<unknown> {
    return readJsonBody(this.raw, this.limits)
  }

  writeOptions(): WriteOptions {
    return writeOptions(this.raw, this.query, this.res)
  }
}

function writeOptions(req: IncomingMessage, q: URLSearchParams, res: ServerResponse): WriteOptions {
  const requestId = headerValue(req, 'x-request-id') ?? randomUUID()
  res.setHeader('x-request-id', requestId)
  return {branch: q.get('branch') ?? undefined, meta: {origin: 'rest', requestId, user: headerValue(req, 'x-svc-user')}}
}

/** The path's non-empty segments, percent-decoded (only those holding a `%` need it). */
function pathSegments(path: string): string[] {
  const out: string[] = []
  for (const s of path.split('/')) if (s.length > 0) out.push(s.includes('%') ? decodeSegment(s) : s)
  return out
}

function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s)
  } catch {
    throw new HttpError(400, 'invalid_id', `malformed percent-encoding in path segment ${JSON.stringify(s)}`)
  }
}

function headerValue(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name]
  return Array.isArray(v) ? v[0] : v
}
