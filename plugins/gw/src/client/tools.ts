import type {Client} from '@modelcontextprotocol/sdk/client/index.js'
import type {Tool} from '@modelcontextprotocol/sdk/types.js'

import type {GwContext} from './context.js'

import {serverKey} from './servers-file.js'
import {findServer, withServer} from './context.js'
import {writeToolCache} from './tool-cache.js'

const MAX_PAGES = 100

/** All tools of a session, following `nextCursor` (bounded, in case a server loops). */
export async function fetchAllTools(client: Client): Promise<Tool[]> {
  const tools: Tool[] = []
  let cursor: string | undefined
  for (let page = 0; page < MAX_PAGES; page++) {
    const res = await client.listTools(cursor ? {cursor} : undefined)
    tools.push(...res.tools)
    cursor = res.nextCursor
    if (!cursor) break
  }
  return tools
}

export interface ToolRecord {
  [k: string]: unknown
  annotations?: Tool['annotations']
  description?: string
  inputSchema: Tool['inputSchema']
  name: string
  outputSchema?: Tool['outputSchema']
  server: string
  title?: string
}

export function toolRecord(server: string, t: Tool): ToolRecord {
  const r: ToolRecord = {inputSchema: t.inputSchema, name: t.name, server}
  if (t.title ?? t.annotations?.title) r.title = t.title ?? t.annotations?.title
  if (t.description) r.description = t.description
  if (t.outputSchema) r.outputSchema = t.outputSchema
  if (t.annotations) r.annotations = t.annotations
  return r
}

/** `name(a: string, b?: number)`: a tool's signature on one line. */
export function signature(t: Pick<Tool, 'inputSchema' | 'name'>): string {
  const props = (t.inputSchema.properties ?? {}) as Record<string, {type?: unknown}>
  const required = new Set(t.inputSchema.required ?? [])
  const params = Object.entries(props).map(([k, v]) => `${k}${required.has(k) ? '' : '?'}: ${Array.isArray(v.type) ? v.type.join('|') : (v.type ?? 'any')}`)
  return `${t.name}(${params.join(', ')})`
}

export function listTools(ctx: GwContext, server: string): Promise<ToolRecord[]> {
  const key = serverKey(findServer(ctx, server))
  return withServer(ctx, server, async ({client}) => {
    const tools = await fetchAllTools(client)
    await writeToolCache(key, tools, ctx.env)
    return tools.map((t) => toolRecord(server, t))
  })
}
