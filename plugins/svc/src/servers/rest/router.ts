/**
 * The REST route table: each route is a method list, a path pattern (`/api/v1/documents/:id`) and
 * a small handler that returns the answer as a value. Route sets live in their own files and are
 * listed once in `index.ts`; a new set is `export function xRoutes(ctx: RestContext): Route[]`.
 */
import type {IncomingMessage, ServerResponse} from 'node:http'

import type {Engine, Logger, WriteOptions} from '../../engine/types.js'
import type {Health} from '../health.js'
import type {ServerMetrics} from '../metrics.js'

/** An answer with a status and headers; thrown anywhere below a handler. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
    /** More fields of the error object (a SQL error's `sqlstate`, ...). */
    readonly fields: Record<string, unknown> = {},
  ) {
    super(message)
  }
}

/** What every route set is built from. */
export interface RestContext {
  engine: Engine
  health: Health
  log: Logger
  metrics: ServerMetrics
}

/** One request as handlers see it. */
export interface RestRequest {
  /** `?branch=`, undefined for the default branch. */
  readonly branch: string | undefined
  readonly method: string
  /** Values of the pattern's `:name` segments, percent-decoded. */
  readonly params: Record<string, string>
  readonly path: string
  readonly query: URLSearchParams
  /** The body as JSON (bounded in size and nesting, numbers exact; see json-body.ts). */
  json(): Promise<unknown>
  readonly raw: IncomingMessage
  readonly res: ServerResponse
  /** Branch and who-wrote metadata for a write; sets the X-Request-Id response header. */
  writeOptions(): WriteOptions
}

/** A handler's answer: JSON (`json`), or bytes sent as they are (`body`, JSON unless `type` says). */
export type RestReply =
  | {body: Buffer | string; status?: number; type?: string}
  | {json: unknown; status?: number}
  /** A body sent as these buffers in order, never joined into one copy (large listings, issue 24). */
  | {parts: Buffer[]; status?: number; type?: string}

export type Handler = (r: RestRequest) => Promise<RestReply> | RestReply

export interface Route {
  handler: Handler
  /** GET routes also answer HEAD. */
  methods: readonly string[]
  /** `/api/v1/documents/:id/history`; also the route's label in metrics. */
  path: string
  /** Served while the server drains (probes, metrics); other routes answer 503 then. */
  whileDraining?: boolean
}

interface Compiled {
  methods: Set<string>
  route: Route
  /** A literal segment, or null for a parameter named in `names` at the same position. */
  segments: Array<null | string>
  names: Array<string | undefined>
}

export type Match = {params: Record<string, string>; route: Route} | {allow: string[]}

export class Router {
  /** Routes by segment count: a lookup compares only patterns of the request's length. */
  private readonly bySize = new Map<number, Compiled[]>()

  constructor(routes: Iterable<Route>) {
    for (const route of routes) this.add(route)
  }

  add(route: Route): void {
    const parts = route.path.split('/').filter((p) => p.length > 0)
    const methods = new Set(route.methods)
    if (methods.has('GET')) methods.add('HEAD')
    const compiled: Compiled = {
      methods,
      names: parts.map((p) => (p.startsWith(':') ? p.slice(1) : undefined)),
      route,
      segments: parts.map((p) => (p.startsWith(':') ? null : p)),
    }
    const list = this.bySize.get(parts.length) ?? []
    list.push(compiled)
    this.bySize.set(parts.length, list)
  }

  /** The route for `method` on the decoded path segments, the methods the path allows, or undefined. */
  match(method: string, segments: string[]): Match | undefined {
    const candidates = this.bySize.get(segments.length)
    if (!candidates) return undefined
    let allow: Set<string> | undefined
    for (const c of candidates) {
      if (!literalsMatch(c.segments, segments)) continue
      if (c.methods.has(method)) {
        const params: Record<string, string> = {}
        for (let i = 0; i < c.names.length; i++) if (c.names[i] !== undefined) params[c.names[i] as string] = segments[i]
        return {params, route: c.route}
      }
      allow ??= new Set()
      for (const m of c.methods) allow.add(m)
    }
    return allow ? {allow: [...allow]} : undefined
  }
}

function literalsMatch(pattern: Array<null | string>, segments: string[]): boolean {
  for (let i = 0; i < pattern.length; i++) if (pattern[i] !== null && pattern[i] !== segments[i]) return false
  return true
}

/** `?name=` as a non-negative integer, undefined when absent. */
export function intParam(q: URLSearchParams, name: string): number | undefined {
  const v = q.get(name)
  if (v === null || v === '') return undefined
  const n = Number(v)
  if (!Number.isInteger(n) || n < 0) throw new HttpError(400, 'invalid_argument', `${name} must be a non-negative integer, got ${JSON.stringify(v)}`)
  return n
}

export function stringParam(q: URLSearchParams, name: string): string | undefined {
  return q.get(name) ?? undefined
}
