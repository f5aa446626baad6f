import type {Client} from '@modelcontextprotocol/sdk/client/index.js'
import type {Prompt, Resource, ResourceTemplate, Tool} from '@modelcontextprotocol/sdk/types.js'

import {type Access, classify, TOOL_SEPARATOR, type ToolRef} from './acl.js'

export interface ProxiedTool {
  access: Access
  /** `<server>__<tool>`, the name clients see. */
  fullName: string
  /** What the ACL evaluates. */
  ref: ToolRef
  server: string
  /** The tool as clients see it (renamed). */
  tool: Tool
  /** The upstream's own tool name. */
  upstreamName: string
}

/** A resource of an upstream, its URI prefixed `<server>__` so two servers' URIs cannot collide. */
export interface ProxiedResource {
  /** `<server>__<uri>`, the URI clients see. */
  fullUri: string
  /** What the ACL evaluates: a read of a tool named like the resource. */
  ref: ToolRef
  resource: Resource
  server: string
  upstreamUri: string
}

export interface ProxiedTemplate {
  ref: ToolRef
  server: string
  template: ResourceTemplate
  /** The upstream's own template, to match a URI a client built from it. */
  upstreamTemplate: string
}

export interface ProxiedPrompt {
  /** `<server>__<prompt>`. */
  fullName: string
  prompt: Prompt
  ref: ToolRef
  server: string
  upstreamName: string
}

/** What an upstream offers as its listings arrived, before naming and classification. */
export interface RawCatalog {
  prompts: Prompt[]
  resources: Resource[]
  templates: ResourceTemplate[]
  tools: Tool[]
}

export interface Catalog {
  prompts: ProxiedPrompt[]
  resources: ProxiedResource[]
  templates: ProxiedTemplate[]
  tools: ProxiedTool[]
}

export const EMPTY_RAW: RawCatalog = {prompts: [], resources: [], templates: [], tools: []}

/** Every page of one listing; bounded, so a server that pages forever cannot hang the proxy. */
async function pages<T>(list: (cursor?: string) => Promise<{items: T[]; nextCursor?: string}>): Promise<T[]> {
  const all: T[] = []
  let cursor: string | undefined
  for (let page = 0; page < 100; page++) {
    const r = await list(cursor)
    all.push(...r.items)
    cursor = r.nextCursor
    if (!cursor) break
  }
  return all
}

const METHOD_NOT_FOUND = -32_601

const params = (cursor?: string) => (cursor ? {cursor} : undefined)

/**
 * Lists one kind of an upstream's catalog, only when the server declares it: a server of
 * resources or prompts alone answers tools/list with "method not found", which is no outage.
 */
export async function listKind(client: Client, kind: 'prompts' | 'resources' | 'tools', raw: RawCatalog): Promise<RawCatalog> {
  const caps = client.getServerCapabilities()
  if (kind === 'tools') {
    if (!caps?.tools) return {...raw, tools: []}
    const tools = await pages(async (c) => {
      const r = await client.listTools(params(c))
      return {items: r.tools, nextCursor: r.nextCursor}
    })
    return {...raw, tools}
  }
  if (kind === 'resources') {
    if (!caps?.resources) return {...raw, resources: [], templates: []}
    const [resources, templates] = await Promise.all([
      pages(async (c) => {
        const r = await client.listResources(params(c))
        return {items: r.resources, nextCursor: r.nextCursor}
      }),
      // Templates are optional in practice: a server without them answers "method not found".
      pages(async (c) => {
        const r = await client.listResourceTemplates(params(c))
        return {items: r.resourceTemplates, nextCursor: r.nextCursor}
      }).catch((error: unknown) => {
        if ((error as {code?: unknown})?.code === METHOD_NOT_FOUND) return []
        throw error
      }),
    ])
    return {...raw, resources, templates}
  }
  if (!caps?.prompts) return {...raw, prompts: []}
  return {
    ...raw,
    prompts: await pages(async (c) => {
      const r = await client.listPrompts(params(c))
      return {items: r.prompts, nextCursor: r.nextCursor}
    }),
  }
}

const prefixed = (server: string, name: string) => `${server}${TOOL_SEPARATOR}${name}`

/** What the ACL evaluates for a prompt, a resource or a template: a read of a tool named like it. */
export const readRef = (server: string, name: string): ToolRef => ({access: 'read', server, tool: name})

/** The ACL's view of one resource URI of `server`, and what gave it its name. */
export interface ResourceTarget {
  /** `resource`: a listed resource (judged by its name); `template`: the template it fits (by the template's name); `uri`: neither (by the URI itself). */
  by: 'resource' | 'template' | 'uri'
  ref: ToolRef
  server: string
  upstreamUri: string
}

let uriTemplates: typeof import('@modelcontextprotocol/sdk/shared/uriTemplate.js') | undefined

/**
 * How a read of `upstreamUri` at `server` is judged, by the proxy and by `gw acl check` alike:
 * as the listed resource of that URI, else as the first of the server's templates it fits, else
 * as a read of a tool named like the URI.
 */
export async function resourceTarget(
  server: string,
  upstreamUri: string,
  listed: (fullUri: string) => ProxiedResource | undefined,
  templates: Iterable<ProxiedTemplate>,
): Promise<ResourceTarget> {
  const r = listed(prefixed(server, upstreamUri))
  if (r) return {by: 'resource', ref: r.ref, server, upstreamUri}
  const {UriTemplate} = (uriTemplates ??= await import('@modelcontextprotocol/sdk/shared/uriTemplate.js'))
  for (const t of templates) {
    if (t.server === server && new UriTemplate(t.upstreamTemplate).match(upstreamUri) !== null) return {by: 'template', ref: t.ref, server, upstreamUri}
  }
  return {by: 'uri', ref: readRef(server, upstreamUri), server, upstreamUri}
}

/**
 * Names everything `<server>__<name>` (URIs `<server>__<uri>`) and classifies it for the ACL:
 * tools by the operator's override or their annotations, resources and prompts as reads of a
 * tool named like them.
 */
export function nameCatalog(server: string, raw: RawCatalog, override: ((tool: string) => Access | undefined) | undefined): Catalog {
  const read = (name: string): ToolRef => readRef(server, name)
  return {
    prompts: raw.prompts.map((p) => ({fullName: prefixed(server, p.name), prompt: {...p, name: prefixed(server, p.name)}, ref: read(p.name), server, upstreamName: p.name})),
    resources: raw.resources.map((r) => ({
      fullUri: prefixed(server, r.uri),
      ref: read(r.name),
      resource: {...r, name: prefixed(server, r.name), uri: prefixed(server, r.uri)},
      server,
      upstreamUri: r.uri,
    })),
    templates: raw.templates.map((t) => ({
      ref: read(t.name),
      server,
      template: {...t, name: prefixed(server, t.name), uriTemplate: prefixed(server, t.uriTemplate)},
      upstreamTemplate: t.uriTemplate,
    })),
    tools: raw.tools.map((t) => {
      const access = classify(override, t.name, t.annotations)
      const fullName = prefixed(server, t.name)
      return {access, fullName, ref: {access, server, tool: t.name}, server, tool: {...t, name: fullName}, upstreamName: t.name}
    }),
  }
}
