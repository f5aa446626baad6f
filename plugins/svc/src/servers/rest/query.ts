/** `POST /api/v1/query`: SQL over HTTP through the same query layer as the PostgreSQL server. */
import {createQueryEngine, type QueryEngine, type SqlError} from '../../query/index.js'
import {jsonValue} from '../../query/json-value.js'

import {HttpError, type RestContext, type RestReply, type RestRequest, type Route} from './router.js'

/** HTTP status by SQLSTATE class (the first two characters), then by whole code. */
const BY_CLASS: Record<string, number> = {
  '0A': 400, // feature not supported
  '22': 400, // data exception
  '23': 409, // integrity constraint violation
  '25': 409, // invalid transaction state
  '3F': 404, // invalid schema name (no such branch)
  '40': 409, // transaction rollback
  '42': 400, // syntax error or access rule violation
  '53': 503, // insufficient resources
  '54': 400, // program limit exceeded (statement too large or complex)
  '55': 503, // object not in prerequisite state (locked)
  '57': 503, // operator intervention (shutting down, cancelled)
}
const BY_CODE: Record<string, number> = {'42P01': 404, '42704': 404}

export function sqlStatus(sqlstate: string): number {
  return BY_CODE[sqlstate] ?? BY_CLASS[sqlstate.slice(0, 2)] ?? 500
}

/** A SQL error as `{"error": {"code": "sql_error", "sqlstate", "message", "detail"?, "hint"?, "position"?}}`. */
function sqlHttpError(e: SqlError): HttpError {
  return new HttpError(sqlStatus(e.code), 'sql_error', e.message, {}, {detail: e.detail, hint: e.hint, position: e.position, sqlstate: e.code})
}

export function queryRoutes({engine}: RestContext): Route[] {
  let qe: QueryEngine | undefined

  const query = async (r: RestRequest): Promise<RestReply> => {
    const body = (await r.json()) as {branch?: unknown; params?: unknown; sql?: unknown}
    if (typeof body !== 'object' || body === null || Array.isArray(body) || typeof body.sql !== 'string' || body.sql.trim() === '') {
      throw new HttpError(400, 'invalid_argument', 'send {"sql": "<statement>", "params": [...], "branch": "<branch>"}')
    }
    if (body.params !== undefined && !Array.isArray(body.params)) throw new HttpError(400, 'invalid_argument', '"params" must be an array (values for $1, $2, ...)')
    const branch = body.branch ?? r.branch
    if (branch !== undefined && typeof branch !== 'string') throw new HttpError(400, 'invalid_argument', '"branch" must be a branch name')
    qe ??= createQueryEngine(engine)
    const settings = new Map<string, string>()
    // A branch is a schema: `public` is main.
    if (branch !== undefined && branch !== 'main') settings.set('search_path', `"${branch.replaceAll('"', '""')}"`)
    const session = qe.session({settings, user: r.raw.headers['x-svc-user']?.toString() ?? 'rest'})
    const outcome = await qe.execute(body.sql, body.params ?? [], session)
    // A transaction the text opened and did not close ends with the request.
    if (session.tx) await qe.execute('ROLLBACK', [], session)
    if (outcome.error) throw sqlHttpError(outcome.error)
    const last = outcome.results.at(-1)
    return {
      body: JSON.stringify(
        {columns: last?.columns?.map((c) => c.name) ?? [], command: last?.tag ?? '', notices: outcome.notices.length > 0 ? outcome.notices : undefined, rows: last?.rows ?? []},
        jsonValue,
      ),
    }
  }

  return [{handler: query, methods: ['POST'], path: '/api/v1/query'}]
}
