import {damageMessage, EngineError, isEngineError} from '../engine/errors.js'
import {checkExactJson} from '../engine/exact-json.js'
import {canonicalId} from '../engine/ids.js'
import type {Damage, Doc, Engine, Json} from '../engine/types.js'

/**
 * The embedded protocol's operations: one table from an operation name to an engine call. The
 * language bindings speak it over a child process's stdin/stdout (docs/svc-embed-protocol.md);
 * names are the bindings' own (snake_case), results are the engine's JSON shapes.
 */
export type Params = Record<string, unknown>
type Handler = (engine: Engine, p: Params) => Promise<unknown>

/** Extra operations a host adds (SQL, backups) without this module importing them. */
export type ExtraOperations = Record<string, (p: Params) => Promise<unknown>>

function str(p: Params, name: string, optional?: false): string
function str(p: Params, name: string, optional: true): string | undefined
function str(p: Params, name: string, optional = false): string | undefined {
  const v = p[name]
  if (v === undefined || v === null) {
    if (optional) return undefined
    throw new EngineError('invalid_argument', `"${name}" is required`)
  }
  if (typeof v !== 'string') throw new EngineError('invalid_argument', `"${name}" must be a string`)
  return v
}

function int(p: Params, name: string): number | undefined {
  const v = p[name]
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new EngineError('invalid_argument', `"${name}" must be a non-negative integer`)
  return v
}

function doc(p: Params): Doc {
  const d = p.doc
  if (d === null || typeof d !== 'object' || Array.isArray(d)) throw new EngineError('invalid_document', '"doc" must be a JSON object')
  const id = str(p, 'id', true)
  return (id === undefined ? d : {...(d as Record<string, Json>), id}) as Doc
}

const branchOf = (p: Params) => ({branch: str(p, 'branch', true)})
const meta = {meta: {origin: 'embed'}}

const OPERATIONS: Record<string, Handler> = {
  async branches(e) {
    return e.branches()
  },
  async create_branch(e, p) {
    return e.createBranch(str(p, 'name'), {from: str(p, 'from', true)})
  },
  async delete(e, p) {
    return e.delete(str(p, 'id'), {...branchOf(p), ...meta})
  },
  async diff(e, p) {
    return e.diff(str(p, 'id'), {...branchOf(p), from: str(p, 'from'), to: str(p, 'to', true)})
  },
  async get(e, p) {
    return (await e.get(str(p, 'id'), branchOf(p))) ?? null
  },
  async get_as_of(e, p) {
    const time = p.time
    if (time !== undefined && typeof time !== 'string' && typeof time !== 'number') throw new EngineError('invalid_argument', '"time" must be RFC 3339 text or epoch milliseconds')
    return (await e.asOf(str(p, 'id'), {...branchOf(p), commit: str(p, 'commit', true), time: time as number | string | undefined})) ?? null
  },
  async get_many(e, p) {
    const ids = p.ids
    if (!Array.isArray(ids) || ids.some((i) => typeof i !== 'string')) throw new EngineError('invalid_argument', '"ids" must be an array of strings')
    // A damaged document fails alone: null in its place, and an error naming it in `errors`.
    const skipped: Damage[] = []
    const docs = (await e.getMany(ids as string[], {...branchOf(p), skipped})).map((d) => d ?? null)
    if (skipped.length === 0) return docs
    const bad = new Map(skipped.map((d) => [d.id, d]))
    const errors: ItemError[] = []
    for (const [index, id] of (ids as string[]).entries()) {
      const d = docs[index] === null ? bad.get(canonicalId(id)) : undefined
      if (d) errors.push({code: 'damaged', id, index, message: damageMessage(d)})
    }
    return new PartialResult(docs, errors)
  },
  async history(e, p) {
    return e.history(str(p, 'id'), {...branchOf(p), cursor: str(p, 'cursor', true), limit: int(p, 'limit')})
  },
  async list(e, p) {
    // Named as REST names it, so both transports of a binding answer the same shape.
    const order = str(p, 'order', true) as 'asc' | 'desc' | undefined
    const r = await e.list({...branchOf(p), cursor: str(p, 'cursor', true), limit: int(p, 'limit'), order, prefix: str(p, 'prefix', true), table: str(p, 'table', true)})
    return r.nextCursor === undefined ? {documents: r.docs} : {documents: r.docs, nextCursor: r.nextCursor}
  },
  async ping() {
    return 'pong'
  },
  async put(e, p) {
    return e.put(doc(p), {...branchOf(p), ...meta})
  },
  async remove_branch(e, p) {
    await e.removeBranch(str(p, 'name'))
    return {name: p.name, removed: true}
  },
  async search(e, p) {
    return e.search(str(p, 'query'), {...branchOf(p), limit: int(p, 'limit'), offset: int(p, 'offset'), table: str(p, 'table', true)})
  },
  async tables(e, p) {
    return e.tables(branchOf(p))
  },
}

/** A result some of whose items failed alone: the reply carries `errors` (one per failed item) beside `result`. */
class PartialResult {
  constructor(
    readonly result: unknown,
    readonly errors: ItemError[],
  ) {}
}

export interface ItemError {
  code: string
  id: string
  index: number
  message: string
}

export interface Reply {
  error?: {code: string; message: string}
  /** Items of the result that failed alone (get_many: a damaged document), the rest answered. */
  errors?: ItemError[]
  id: Json
  result?: unknown
}

export interface Request {
  id: Json
  op: string
  params: Params
}

/** How a request orders against the ones sent before it (see serveLines). */
export type RequestKind = 'exclusive' | 'read' | 'write'

const WRITES = new Set(['create_branch', 'delete', 'put', 'remove_branch'])

/** Added operations (SQL, which may write; backups; restores) are exclusive: they see every earlier request's effect and hold later ones. */
export function kindOf(op: string): RequestKind {
  if (WRITES.has(op)) return 'write'
  if (Object.hasOwn(OPERATIONS, op)) return 'read'
  return 'exclusive'
}

/**
 * Parses one request line; a malformed one, or one holding a number a double would not keep as
 * written, throws an EngineError carrying the id it had, if any.
 */
export function parseRequest(line: string): Request {
  let request: unknown
  try {
    request = JSON.parse(line)
  } catch {
    throw new EngineError('invalid_argument', 'a request must be one JSON object per line')
  }
  if (request === null || typeof request !== 'object' || Array.isArray(request)) throw new EngineError('invalid_argument', 'a request must be a JSON object')
  const r = request as {id?: Json; op?: unknown; params?: unknown} & Record<string, unknown>
  const id = r.id ?? null
  const params = r.params ?? {}
  if (typeof r.op !== 'string') throw Object.assign(new EngineError('invalid_argument', 'a request needs "op"'), {requestId: id})
  if (params === null || typeof params !== 'object' || Array.isArray(params)) throw Object.assign(new EngineError('invalid_argument', '"params" must be a JSON object'), {requestId: id})
  if (onlyTextBesideId(r, params as Params, line)) return {id, op: r.op, params: params as Params}
  try {
    checkExactJson(line)
  } catch (error) {
    throw Object.assign(error as Error, {requestId: id})
  }
  return {id, op: r.op, params: params as Params}
}

/** A line that starts with a plain integer id of up to 15 digits (one a double holds as written). */
const PLAIN_ID = /^\{"id":(\d{1,15})[,}]/

/**
 * True when the request can hold no number but its id, and that id is exact as written, so the
 * character-by-character number check can be skipped: only `id`, `op` and `params` at the top,
 * and every parameter text or a list of texts (a get_many of thousands of ids, the hot request of
 * a reading pipeline). Anything else takes the full check.
 */
function onlyTextBesideId(r: Record<string, unknown>, params: Params, line: string): boolean {
  for (const key in r) if (key !== 'id' && key !== 'op' && key !== 'params') return false
  for (const key in params) {
    const v = params[key]
    if (typeof v === 'string') continue
    if (!Array.isArray(v)) return false
    for (const item of v) if (typeof item !== 'string') return false
  }
  if (r.id === undefined || typeof r.id === 'string') return true
  // A repeated "id" key could hide another literal behind the one at the start: the value kept must be the one matched.
  const m = PLAIN_ID.exec(line)
  return m !== null && typeof r.id === 'number' && String(r.id) === m[1]
}

export function errorReply(error: unknown, id: Json): Reply {
  if (isEngineError(error)) return {error: {code: error.code, message: error.message}, id}
  const code = (error as {code?: unknown}).code
  return {error: {code: typeof code === 'string' ? code : 'internal', message: (error as Error).message ?? String(error)}, id}
}

/** Runs one parsed request; never throws (a failure is an error reply). */
export async function answer(engine: Engine, request: Request, extra: ExtraOperations = {}): Promise<Reply> {
  const {id, op, params} = request
  try {
    const own = Object.hasOwn(OPERATIONS, op) ? OPERATIONS[op] : undefined
    if (own) {
      const result = await own(engine, params)
      return result instanceof PartialResult ? {errors: result.errors, id, result: result.result} : {id, result}
    }
    const added = Object.hasOwn(extra, op) ? extra[op] : undefined
    if (added) return {id, result: await added(params)}
    throw new EngineError('invalid_argument', `unknown operation "${op}"; operations: ${operationNames(extra).join(', ')}`)
  } catch (error) {
    return errorReply(error, id)
  }
}

export function operationNames(extra: ExtraOperations = {}): string[] {
  return [...Object.keys(OPERATIONS), ...Object.keys(extra)].sort()
}
