/** Documents: put, get, list, delete, history, as-of and diff, plus chrondb's alias paths. */
import type {Damage, Doc} from '../../engine/types.js'

import {skipDamaged} from '../../engine/errors.js'

import {HttpError, intParam, type RestContext, type RestReply, type RestRequest, type Route, stringParam} from './router.js'

const COMMA = Buffer.from(',')

/** `?order=asc|desc`; anything else reaches the engine, which refuses it naming the value (400). */
const orderParam = (q: URLSearchParams): 'asc' | 'desc' | undefined => stringParam(q, 'order') as 'asc' | 'desc' | undefined

export function documentRoutes({engine}: RestContext): Route[] {
  const put = async (r: RestRequest, pathId: string | undefined): Promise<RestReply> => {
    const body = await r.json()
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new HttpError(400, 'invalid_document', 'a document must be a JSON object')
    const doc = body as Doc
    if (pathId !== undefined) {
      if (doc.id !== undefined && doc.id !== pathId && String(doc.id) !== pathId) {
        throw new HttpError(400, 'invalid_id', `the id in the body (${JSON.stringify(doc.id)}) differs from the id in the path (${JSON.stringify(pathId)})`)
      }
      doc.id = pathId
    } else if (doc.id === undefined) throw new HttpError(400, 'invalid_id', 'the document needs an "id" field (table:key)')
    return {json: await engine.put(doc, r.writeOptions())}
  }

  const found = (r: RestRequest, raw: Buffer | undefined): RestReply => {
    if (raw === undefined) throw new HttpError(404, 'not_found', `document ${r.params.id} not found on branch ${r.branch ?? 'main'}`)
    return {body: raw}
  }

  // A document in memory is answered at once, without a read from Git or a promise.
  const get = (r: RestRequest): Promise<RestReply> | RestReply => {
    const options = {branch: r.branch}
    const cached = engine.getRawIfCached(r.params.id, options)
    return cached === false ? engine.getRaw(r.params.id, options).then((raw) => found(r, raw)) : found(r, cached)
  }

  const remove = async (r: RestRequest): Promise<RestReply> => {
    const result = await engine.delete(r.params.id, r.writeOptions())
    if (!result.existed) throw new HttpError(404, 'not_found', `document ${result.id} not found on branch ${result.branch}`)
    return {json: result}
  }

  const list = async (r: RestRequest): Promise<RestReply> => {
    const q = r.query
    const commit = stringParam(q, 'commit')
    const time = stringParam(q, 'time')
    if (commit !== undefined || time !== undefined) {
      // The table as it stood then: documents parsed from that commit's tree.
      const at = await engine.list({asOf: {commit, time}, branch: r.branch, cursor: stringParam(q, 'cursor'), limit: intParam(q, 'limit'), order: orderParam(q), prefix: stringParam(q, 'prefix'), table: stringParam(q, 'table')})
      return {json: {documents: at.docs, ...(at.nextCursor === undefined ? {} : {nextCursor: at.nextCursor}), ...(at.skipped ? {skipped: at.skipped} : {})}}
    }
    const page = engine.listIds({branch: r.branch, cursor: stringParam(q, 'cursor'), limit: intParam(q, 'limit'), order: orderParam(q), prefix: stringParam(q, 'prefix'), table: stringParam(q, 'table')})
    // One damaged document is left out and named (as engine.list and search do); the rest of the page still answers.
    const skipped: Damage[] = []
    const docs = await Promise.all(page.ids.map((i) => engine.getRaw(i, {branch: r.branch}).catch((error: unknown) => skipDamaged(error, skipped))))
    // Stored bytes pass through unparsed and undecoded: decoding megabytes of documents to a
    // string and encoding them back stalled every other client (issue 24).
    const parts: Buffer[] = [Buffer.from('{"documents":[')]
    for (const d of docs) {
      if (d === undefined) continue
      if (parts.length > 1) parts.push(COMMA)
      parts.push(d)
    }
    const tail = (page.nextCursor === undefined ? '' : `,"nextCursor":${JSON.stringify(page.nextCursor)}`) + (skipped.length === 0 ? '' : `,"skipped":${JSON.stringify(skipped.map(({id, object}) => ({id, object})))}`)
    parts.push(Buffer.from(`]${tail}}`))
    // Written part by part: joining megabyte documents into one buffer was a copy of the whole answer in one turn.
    return {parts}
  }

  const history = async (r: RestRequest): Promise<RestReply> => ({
    json: await engine.history(r.params.id, {branch: r.branch, cursor: stringParam(r.query, 'cursor'), limit: intParam(r.query, 'limit')}),
  })

  const asOf = async (r: RestRequest): Promise<RestReply> => {
    const commit = stringParam(r.query, 'commit')
    const time = stringParam(r.query, 'time')
    if (!commit && !time) throw new HttpError(400, 'invalid_argument', 'as-of needs ?commit=<id> or ?time=<RFC 3339 or epoch ms>')
    const doc = await engine.asOf(r.params.id, {branch: r.branch, commit, time})
    if (doc === undefined) throw new HttpError(404, 'not_found', `document ${r.params.id} did not exist at ${commit ?? time}`)
    return {json: doc}
  }

  const diff = async (r: RestRequest): Promise<RestReply> => {
    const from = stringParam(r.query, 'from')
    if (!from) throw new HttpError(400, 'invalid_argument', 'diff needs ?from=<commit> (and optionally &to=<commit>)')
    const to = stringParam(r.query, 'to')
    const changes = await engine.diff(r.params.id, {branch: r.branch, from, to})
    return {json: {changes, from, id: r.params.id, to: to ?? 'current'}}
  }

  return [
    {handler: list, methods: ['GET'], path: '/api/v1/documents'},
    {handler: (r) => put(r, undefined), methods: ['POST'], path: '/api/v1/documents'},
    {handler: get, methods: ['GET'], path: '/api/v1/documents/:id'},
    {handler: (r) => put(r, r.params.id), methods: ['PUT'], path: '/api/v1/documents/:id'},
    {handler: remove, methods: ['DELETE'], path: '/api/v1/documents/:id'},
    {handler: history, methods: ['GET'], path: '/api/v1/documents/:id/history'},
    {handler: asOf, methods: ['GET'], path: '/api/v1/documents/:id/as-of'},
    {handler: diff, methods: ['GET'], path: '/api/v1/documents/:id/diff'},
    // chrondb's paths, so clients written for it work unchanged.
    {handler: (r) => put(r, undefined), methods: ['POST', 'PUT'], path: '/api/v1/save'},
    {handler: get, methods: ['GET'], path: '/api/v1/get/:id'},
    {handler: remove, methods: ['DELETE'], path: '/api/v1/delete/:id'},
    {handler: history, methods: ['GET'], path: '/api/v1/history/:id'},
  ]
}
