import {randomUUID} from 'node:crypto'
import {createServer, type IncomingMessage, type ServerResponse} from 'node:http'
import type {Socket} from 'node:net'

import {BodyTooLargeError, readBody} from '@toolkit/kit'

import type {GitEngine} from '../../engine/engine.js'
import {isEngineError} from '../../engine/errors.js'
import type {Doc, RunningServer, ServerContext, WriteOptions} from '../../engine/types.js'
import type {Health} from '../health.js'
import type {ServerMetrics} from '../metrics.js'
import {listen} from '../listen.js'

export interface RestServerOptions {
  health: Health
  host: string
  /** Largest request body accepted (default 1 MiB); larger gets 413. */
  maxBodyBytes?: number
  metrics: ServerMetrics
  port: number
}

type Query = URLSearchParams

class HttpError extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly headers: Record<string, string> = {}) {
    super(message)
  }
}

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
  reserved: 400,
  too_large: 413,
  unavailable: 503,
}

const JSON_TYPE = 'application/json; charset=utf-8'
const EMPTY_QUERY = new URLSearchParams()

/**
 * The REST adapter on bare node:http (no framework: routing is a split on `/`, which keeps the
 * per-request overhead close to a bare server's). Every route calls the engine API; see
 * docs/svc-rest.md for the routes and the error shape `{"error": {"code", "message"}}`.
 */
export async function startRestServer(ctx: ServerContext, options: RestServerOptions): Promise<RunningServer> {
  const engine = ctx.engine as GitEngine
  const log = ctx.logger.child('svc.rest')
  const maxBody = options.maxBodyBytes ?? 1024 * 1024
  const {health, metrics} = options
  let draining = false
  let inFlight = 0
  const sockets = new Set<Socket>()

  const send = (req: IncomingMessage, res: ServerResponse, started: bigint, route: string, status: number, body: Buffer | string, type = JSON_TYPE): void => {
    if (draining) res.setHeader('connection', 'close')
    res.writeHead(status, {'content-length': Buffer.byteLength(body), 'content-type': type})
    res.end(body)
    metrics.httpRequest(req.method ?? 'GET', route, status, Number(process.hrtime.bigint() - started) / 1e9)
  }
  const json = (req: IncomingMessage, res: ServerResponse, started: bigint, route: string, status: number, value: unknown): void =>
    send(req, res, started, route, status, JSON.stringify(value))

  const readJsonBody = async (req: IncomingMessage): Promise<unknown> => {
    let body: Buffer
    try {
      body = await readBody(req, maxBody)
    } catch (error) {
      throw error instanceof BodyTooLargeError ? new HttpError(413, 'too_large', error.message) : error
    }
    const text = body.toString('utf8')
    if (text.trim() === '') throw new HttpError(400, 'invalid_json', 'request body is empty; send a JSON document')
    try {
      return JSON.parse(text)
    } catch (error) {
      throw new HttpError(400, 'invalid_json', `request body is not valid JSON: ${(error as Error).message}`)
    }
  }

  const writeOptions = (req: IncomingMessage, q: Query, res: ServerResponse): WriteOptions => {
    const requestId = headerValue(req, 'x-request-id') ?? randomUUID()
    res.setHeader('x-request-id', requestId)
    return {branch: q.get('branch') ?? undefined, meta: {origin: 'rest', requestId, user: headerValue(req, 'x-svc-user')}}
  }

  const handle = async (req: IncomingMessage, res: ServerResponse, started: bigint): Promise<void> => {
    const url = req.url ?? '/'
    const qi = url.indexOf('?')
    const path = qi === -1 ? url : url.slice(0, qi)
    const q = qi === -1 ? EMPTY_QUERY : new URLSearchParams(url.slice(qi + 1))
    const method = req.method ?? 'GET'
    const seg = path.split('/').filter((s) => s.length > 0).map((s) => decodeSegment(s))
    const branch = q.get('branch') ?? undefined

    if (seg.length === 1 && (seg[0] === 'healthz' || seg[0] === 'health' || seg[0] === 'metrics')) {
      allow(method, ['GET', 'HEAD'])
      if (seg[0] === 'healthz') {
        const live = health.liveness()
        send(req, res, started, '/healthz', draining || !live.ok ? 503 : 200, draining ? 'draining\n' : live.ok ? 'ok\n' : `${live.reason}\n`, 'text/plain; charset=utf-8')
      } else if (seg[0] === 'health') {
        const h = await health.checks()
        json(req, res, started, '/health', h.status === 'healthy' ? 200 : 503, h)
      } else {
        send(req, res, started, '/metrics', 200, await metrics.registry.metrics(), metrics.registry.contentType)
      }
      return
    }
    if (seg[0] !== 'api' || seg[1] !== 'v1') throw new HttpError(404, 'not_found', `no route ${method} ${path}; routes start with /api/v1 (see docs/svc-rest.md)`)
    if (draining) throw new HttpError(503, 'unavailable', 'server is shutting down', {connection: 'close'})
    const [, , resource, a, b, extra] = seg

    switch (resource) {
      case 'documents':
      case 'get':
      case 'save':
      case 'delete':
      case 'history': {
        // /api/v1/get|delete|history/:id and POST /api/v1/save are chrondb-compatible aliases.
        const alias = resource !== 'documents'
        const id = a
        const sub = alias ? resource : b
        if (extra !== undefined || (alias && b !== undefined)) break
        if (resource === 'save' && a === undefined) {
          allow(method, ['POST', 'PUT'])
          return putDoc(req, res, q, started, undefined, '/api/v1/save')
        }
        if (id === undefined) {
          if (alias) break
          allow(method, ['GET', 'POST'])
          if (method === 'POST') return putDoc(req, res, q, started, undefined, '/api/v1/documents')
          const r = engine.listIds({branch, cursor: q.get('cursor') ?? undefined, limit: num(q, 'limit'), prefix: q.get('prefix') ?? undefined, table: q.get('table') ?? undefined})
          const docs = await Promise.all(r.ids.map((i) => engine.getRaw(i, {branch})))
          const body = `{"documents":[${docs.filter((d) => d !== undefined).map((d) => d.toString('utf8')).join(',')}]${r.nextCursor === undefined ? '' : `,"nextCursor":${JSON.stringify(r.nextCursor)}`}}`
          send(req, res, started, '/api/v1/documents', 200, body)
          return
        }
        if (sub === undefined || sub === 'get' || sub === 'delete') {
          const route = alias ? `/api/v1/${resource}/:id` : '/api/v1/documents/:id'
          if (sub === 'get') allow(method, ['GET', 'HEAD'])
          else if (sub === 'delete') allow(method, ['DELETE'])
          else allow(method, ['GET', 'HEAD', 'PUT', 'DELETE'])
          if (method === 'PUT') return putDoc(req, res, q, started, id, route)
          if (method === 'DELETE') {
            const r = await engine.delete(id, writeOptions(req, q, res))
            if (!r.existed) throw new HttpError(404, 'not_found', `document ${r.id} not found on branch ${r.branch}`)
            json(req, res, started, route, 200, r)
            return
          }
          const raw = await engine.getRaw(id, {branch})
          if (raw === undefined) throw new HttpError(404, 'not_found', `document ${id} not found on branch ${branch ?? 'main'}`)
          send(req, res, started, route, 200, raw)
          return
        }
        allow(method, ['GET'])
        if (sub === 'history') {
          const r = await engine.history(id, {branch, cursor: q.get('cursor') ?? undefined, limit: num(q, 'limit')})
          json(req, res, started, alias ? '/api/v1/history/:id' : '/api/v1/documents/:id/history', 200, r)
          return
        }
        if (sub === 'as-of') {
          const commit = q.get('commit') ?? undefined
          const time = q.get('time') ?? undefined
          if (!commit && !time) throw new HttpError(400, 'invalid_argument', 'as-of needs ?commit=<id> or ?time=<RFC 3339 or epoch ms>')
          const doc = await engine.asOf(id, {branch, commit, time})
          if (doc === undefined) throw new HttpError(404, 'not_found', `document ${id} did not exist at ${commit ?? time}`)
          json(req, res, started, '/api/v1/documents/:id/as-of', 200, doc)
          return
        }
        if (sub === 'diff') {
          const from = q.get('from')
          if (!from) throw new HttpError(400, 'invalid_argument', 'diff needs ?from=<commit> (and optionally &to=<commit>)')
          const changes = await engine.diff(id, {branch, from, to: q.get('to') ?? undefined})
          json(req, res, started, '/api/v1/documents/:id/diff', 200, {changes, from, id, to: q.get('to') ?? 'current'})
          return
        }
        break
      }

      case 'search': {
        if (a !== undefined) break
        allow(method, ['GET'])
        const query = q.get('q') ?? q.get('query')
        if (!query) throw new HttpError(400, 'invalid_argument', 'search needs ?q=<query>')
        const r = await engine.search(query, {branch, limit: num(q, 'limit'), offset: num(q, 'offset'), table: q.get('table') ?? undefined})
        json(req, res, started, '/api/v1/search', 200, r)
        return
      }

      case 'tables': {
        if (a !== undefined) break
        allow(method, ['GET'])
        const tables = await engine.tables({branch})
        json(req, res, started, '/api/v1/tables', 200, {tables: await Promise.all(tables.map(async (t) => ({documents: await engine.count({branch, table: t}), name: t})))})
        return
      }

      case 'branches': {
        if (b !== undefined) break
        if (a === undefined) {
          allow(method, ['GET', 'POST'])
          if (method === 'GET') {
            json(req, res, started, '/api/v1/branches', 200, {branches: await engine.branches()})
            return
          }
          const body = (await readJsonBody(req)) as {from?: unknown; name?: unknown}
          if (typeof body !== 'object' || body === null || typeof body.name !== 'string') throw new HttpError(400, 'invalid_argument', 'send {"name": "<branch>", "from": "<branch>"}')
          if (body.from !== undefined && typeof body.from !== 'string') throw new HttpError(400, 'invalid_argument', '"from" must be a branch name')
          json(req, res, started, '/api/v1/branches', 201, await engine.createBranch(body.name, {from: body.from}))
          return
        }
        allow(method, ['DELETE'])
        await engine.removeBranch(a)
        json(req, res, started, '/api/v1/branches/:name', 200, {name: a, removed: true})
        return
      }

      case 'health': {
        if (a !== undefined) break
        allow(method, ['GET', 'HEAD'])
        const rec = await health.record()
        json(req, res, started, '/api/v1/health', rec.status === 'ok' ? 200 : 503, rec)
        return
      }

      default:
        break
    }
    throw new HttpError(404, 'not_found', `no route ${method} ${path} (see docs/svc-rest.md)`)
  }

  const putDoc = async (req: IncomingMessage, res: ServerResponse, q: Query, started: bigint, pathId: string | undefined, route: string): Promise<void> => {
    const body = await readJsonBody(req)
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new HttpError(400, 'invalid_document', 'a document must be a JSON object')
    const doc = body as Doc
    if (pathId !== undefined) {
      if (doc.id !== undefined && doc.id !== pathId && String(doc.id) !== pathId) {
        throw new HttpError(400, 'invalid_id', `the id in the body (${JSON.stringify(doc.id)}) differs from the id in the path (${JSON.stringify(pathId)})`)
      }
      doc.id = pathId
    } else if (doc.id === undefined) throw new HttpError(400, 'invalid_id', 'the document needs an "id" field (table:key)')
    const r = await engine.put(doc, writeOptions(req, q, res))
    json(req, res, started, route, 200, r)
    return
  }

  const server = createServer({keepAliveTimeout: 65_000}, (req, res) => {
    const started = process.hrtime.bigint()
    inFlight++
    handle(req, res, started)
      .catch((error: unknown) => {
        let status = 500
        let code = 'internal'
        let message = 'internal error'
        if (error instanceof HttpError) {
          ;({code, message, status} = error)
          for (const [k, v] of Object.entries(error.headers)) res.setHeader(k, v)
        } else if (isEngineError(error)) {
          status = STATUS[error.code] ?? 500
          code = error.code
          message = error.message
        } else {
          log.error('request failed', {error: (error as Error)?.message, method: req.method, url: req.url})
        }
        if (res.headersSent) {
          res.destroy()
          return
        }
        // An unread oversized body would be parsed as the next request: close instead.
        if (status === 413) res.setHeader('connection', 'close')
        json(req, res, started, status === 404 ? 'unmatched' : 'error', status, {error: {code, message}})
      })
      .finally(() => {
        inFlight--
      })
  })
  server.on('clientError', (err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-type: application/json\r\n\r\n{"error":{"code":"bad_request","message":"malformed HTTP request"}}')
    else socket.destroy()
  })
  server.on('connection', (socket: Socket) => {
    sockets.add(socket)
    ctx.metrics.connectionOpened('rest')
    socket.on('close', () => {
      sockets.delete(socket)
      ctx.metrics.connectionClosed('rest')
    })
  })
  const port = await listen(server, options.host, options.port, 'REST')
  log.info('REST server listening', {host: options.host, port})
  return {
    async close() {
      draining = true
      server.close()
      server.closeIdleConnections()
      const until = Date.now() + 10_000
      while (inFlight > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10))
      server.closeAllConnections()
      for (const s of sockets) s.destroy()
    },
    port,
  }
}

function allow(method: string, methods: string[]): void {
  if (!methods.includes(method)) throw new HttpError(405, 'method_not_allowed', `method ${method} is not allowed here; use ${methods.join(', ')}`, {allow: methods.join(', ')})
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

function num(q: Query, name: string): number | undefined {
  const v = q.get(name)
  if (v === null || v === '') return undefined
  const n = Number(v)
  if (!Number.isInteger(n) || n < 0) throw new HttpError(400, 'invalid_argument', `${name} must be a non-negative integer, got ${JSON.stringify(v)}`)
  return n
}
