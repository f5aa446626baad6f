/** Full-text search and the table listing. */
import {HttpError, intParam, type RestContext, type RestReply, type RestRequest, type Route, stringParam} from './router.js'

export function searchRoutes({engine}: RestContext): Route[] {
  const search = async (r: RestRequest): Promise<RestReply> => {
    const query = r.query.get('q') ?? r.query.get('query')
    if (!query) throw new HttpError(400, 'invalid_argument', 'search needs ?q=<query>')
    return {json: await engine.search(query, {branch: r.branch, limit: intParam(r.query, 'limit'), offset: intParam(r.query, 'offset'), table: stringParam(r.query, 'table')})}
  }

  const tables = async (r: RestRequest): Promise<RestReply> => {
    const names = await engine.tables({branch: r.branch})
    return {json: {tables: await Promise.all(names.map(async (name) => ({documents: await engine.count({branch: r.branch, table: name}), name})))}}
  }

  return [
    {handler: search, methods: ['GET'], path: '/api/v1/search'},
    {handler: tables, methods: ['GET'], path: '/api/v1/tables'},
  ]
}
