import type {ReadResourceResult, Resource, ResourceTemplate} from '@modelcontextprotocol/sdk/types.js'

import type {GwContext} from './context.js'

import {allPages, requireCapability} from './capability.js'
import {withServer} from './context.js'

export type ResourceRecord = {[k: string]: unknown; kind: 'resource'; server: string} & Resource
export type TemplateRecord = {[k: string]: unknown; kind: 'template'; server: string} & ResourceTemplate

/** The server's resources and resource templates (every page of both lists). */
export function listResources(ctx: GwContext, server: string): Promise<Array<ResourceRecord | TemplateRecord>> {
  return withServer(ctx, server, async ({client}) => {
    requireCapability(client, server, 'resources')
    const resources = await allPages(async (cursor) => {
      const r = await client.listResources(cursor ? {cursor} : undefined)
      return {items: r.resources, nextCursor: r.nextCursor}
    })
    // Templates are optional in the protocol: a server without them answers "method not found".
    const templates = await allPages(async (cursor) => {
      const r = await client.listResourceTemplates(cursor ? {cursor} : undefined)
      return {items: r.resourceTemplates, nextCursor: r.nextCursor}
    }).catch(() => [] as ResourceTemplate[])
    return [...resources.map((r) => ({...r, kind: 'resource' as const, server})), ...templates.map((t) => ({...t, kind: 'template' as const, server}))]
  })
}

export interface ReadRecord {
  [k: string]: unknown
  contents: ReadResourceResult['contents']
  server: string
  uri: string
}

export function readResource(ctx: GwContext, server: string, uri: string): Promise<ReadRecord> {
  return withServer(ctx, server, async ({client}) => {
    requireCapability(client, server, 'resources')
    const r = await client.readResource({uri})
    return {contents: r.contents, server, uri}
  })
}

/** Text contents as they are; binary ones summarised (type and size), never dumped on a terminal. */
export function contentsText(contents: ReadResourceResult['contents']): string {
  return contents
    .map((c) => ('text' in c && typeof c.text === 'string' ? c.text : `(binary ${c.mimeType ?? 'data'}, ${Buffer.byteLength(String((c as {blob?: string}).blob ?? ''), 'base64')} bytes: use --format json)`))
    .join('\n')
}
