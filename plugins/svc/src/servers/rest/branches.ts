/** Branches: list, create, remove. */
import {HttpError, type RestContext, type RestReply, type RestRequest, type Route} from './router.js'

export function branchRoutes({engine}: RestContext): Route[] {
  const create = async (r: RestRequest): Promise<RestReply> => {
    const body = (await r.json()) as {from?: unknown; name?: unknown}
    if (typeof body !== 'object' || body === null || typeof body.name !== 'string') throw new HttpError(400, 'invalid_argument', 'send {"name": "<branch>", "from": "<branch>"}')
    if (body.from !== undefined && typeof body.from !== 'string') throw new HttpError(400, 'invalid_argument', '"from" must be a branch name')
    return {json: await engine.createBranch(body.name, {from: body.from}), status: 201}
  }

  const remove = async (r: RestRequest): Promise<RestReply> => {
    await engine.removeBranch(r.params.name)
    return {json: {name: r.params.name, removed: true}}
  }

  return [
    {handler: async () => ({json: {branches: await engine.branches()}}), methods: ['GET'], path: '/api/v1/branches'},
    {handler: create, methods: ['POST'], path: '/api/v1/branches'},
    {handler: remove, methods: ['DELETE'], path: '/api/v1/branches/:name'},
  ]
}
