import type {Tool} from '@modelcontextprotocol/sdk/types.js'

import {closest, UsageError} from '@toolkit/kit'

import type {GwContext} from '../client/context.js'

import {serverKey} from '../client/servers-file.js'
import {findServer} from '../client/context.js'
import {readToolCache} from '../client/tool-cache.js'
import {listPrompts} from '../client/prompts.js'
import {listResources} from '../client/resources.js'
import {listTools} from '../client/tools.js'
import {type Access, evaluate, TOOL_SEPARATOR, type ToolRef} from '../proxy/acl.js'
import {nameCatalog, readRef, resourceTarget} from '../proxy/catalog.js'
import {type Classified, classifyTool, loadPolicy} from './policy.js'

export interface ToolAccessRecord {
  [k: string]: unknown
  access: Access
  name: string
  reason: string
  server: string
  tool: string
}

export interface DecisionRecord {
  [k: string]: unknown
  access: Access
  access_reason: string
  allowed: boolean
  /** What was checked; `tool` is then the name the ACL judged it by (`<server>__<name>`). */
  kind: 'prompt' | 'resource' | 'tool'
  /** The proxied prompt name or resource URI checked (prompts and resources). */
  target?: string
  roles: string[]
  rule: string
  server: string
  subject: string
  tool: string
}

/** The server's tools: the cached list when `offline` (or when still fresh), else listed over the network. */
async function toolsOf(ctx: GwContext, server: string, offline: boolean): Promise<Array<Pick<Tool, 'annotations' | 'name'>>> {
  const entry = findServer(ctx, server)
  const cached = await readToolCache(serverKey(entry), ctx.env)
  if (cached) return cached
  if (offline) throw new UsageError(`no cached tool list for "${server}" (--offline); run \`toolkit gw tools ${server}\` once, or leave out --offline`, 'no_tool_list')
  return listTools(ctx, server)
}

/** Every tool of a server as read or write, with the reason, as the proxy's ACL will see it. */
export async function classifyServer(ctx: GwContext, server: string, options: {offline: boolean}): Promise<ToolAccessRecord[]> {
  const policy = loadPolicy(ctx.config)
  const tools = await toolsOf(ctx, server, options.offline)
  return tools.map((t) => ({name: `${server}${TOOL_SEPARATOR}${t.name}`, server, tool: t.name, ...classifyTool(policy, server, t.name, t.annotations)}))
}

/** `<server>__<name>` split on the longest configured server name it starts with. */
function splitName(ctx: GwContext, full: string, what = 'tool'): {server: string; tool: string} {
  const servers = Object.keys(ctx.config.servers).sort((a, b) => b.length - a.length)
  const server = servers.find((s) => full.startsWith(`${s}${TOOL_SEPARATOR}`) && full.length > s.length + TOOL_SEPARATOR.length)
  if (server) return {server, tool: full.slice(server.length + TOOL_SEPARATOR.length)}
  const guess = closest(full.split(TOOL_SEPARATOR)[0], servers)
  throw new UsageError(
    `"${full}" is not <server>${TOOL_SEPARATOR}<${what}> for a configured server${guess ? ` (did you mean "${guess}${TOOL_SEPARATOR}..."?)` : servers.length > 0 ? ` (servers: ${servers.join(', ')})` : ' (no servers configured)'}`,
    'unknown_tool',
  )
}

export interface CheckRequest {
  /** The access class to assume, skipping the lookup (tools only). */
  access?: Access
  offline: boolean
  /** A proxied prompt name, `<server>__<prompt>`, instead of a tool. */
  prompt?: string
  /** A proxied resource URI, `<server>__<uri>`, instead of a tool. */
  resource?: string
  roles: string[]
  subject: string
  tool?: string
}

/**
 * The proxy's decision for one user and one tool, and the rule that made it. The access class
 * comes from --access, the operator's override, or the tool's annotations (the cached tool list,
 * else one listing over the network); a tool the server does not list is judged a write tool,
 * as the proxy judges it.
 */
export async function checkAccess(ctx: GwContext, r: CheckRequest): Promise<DecisionRecord> {
  if (r.prompt !== undefined) return checkPrompt(ctx, r, r.prompt)
  if (r.resource !== undefined) return checkResource(ctx, r, r.resource)
  if (r.tool === undefined) throw new UsageError('name what to check: --tool, --prompt or --resource', 'missing_target')
  const policy = loadPolicy(ctx.config)
  const {server, tool} = splitName(ctx, r.tool)
  let cls: Classified
  if (r.access) cls = {access: r.access, reason: 'given (--access)'}
  else if (policy.overrides.get(server)?.(tool)) cls = classifyTool(policy, server, tool, undefined)
  else {
    const tools = await toolsOf(ctx, server, r.offline)
    const found = tools.find((t) => t.name === tool)
    if (!found) {
      const guess = closest(tool, tools.map((t) => t.name))
      throw new UsageError(`server "${server}" has no tool "${tool}"${guess ? `; did you mean "${server}${TOOL_SEPARATOR}${guess}"?` : ''} (the proxy would judge an unlisted tool as write: pass --access write to check that)`, 'unknown_tool')
    }
    cls = classifyTool(policy, server, tool, found.annotations)
  }
  return decide(ctx, r, {access: cls.access, server, tool}, cls.reason, 'tool')
}

/** Evaluates `ref` with the proxy's `evaluate` and shapes the record. */
function decide(ctx: GwContext, r: CheckRequest, ref: ToolRef, reason: string, kind: DecisionRecord['kind'], target?: string): DecisionRecord {
  const policy = loadPolicy(ctx.config)
  const decision = evaluate(policy.acl, {provider: 'cli', roles: r.roles, subject: r.subject}, ref)
  return {
    access: ref.access,
    access_reason: reason,
    allowed: decision.allowed,
    kind,
    roles: r.roles,
    rule: decision.rule,
    server: ref.server,
    subject: r.subject,
    ...(target === undefined ? {} : {target}),
    tool: `${ref.server}${TOOL_SEPARATOR}${ref.tool}`,
  }
}

/**
 * A prompt is judged as a read of a tool named like it, listed or not (as the proxy judges
 * prompts/get and completions of its arguments). Online, the server's listing must have it.
 */
async function checkPrompt(ctx: GwContext, r: CheckRequest, full: string): Promise<DecisionRecord> {
  loadPolicy(ctx.config)
  const {server, tool: name} = splitName(ctx, full, 'prompt')
  if (!r.offline) {
    const names = (await listPrompts(ctx, server)).map((p) => p.name)
    if (!names.includes(name)) {
      const guess = closest(name, names)
      throw new UsageError(`server "${server}" has no prompt "${name}"${guess ? `; did you mean "${server}${TOOL_SEPARATOR}${guess}"?` : ''}`, 'unknown_prompt')
    }
  }
  return decide(ctx, r, readRef(server, name), 'prompts are reads', 'prompt', full)
}

/**
 * A resource URI is judged as the proxy judges resources/read: by the listed resource's name,
 * else by the server's template it fits, else by the URI itself. That needs the server's
 * listing, so it is never offline.
 */
async function checkResource(ctx: GwContext, r: CheckRequest, full: string): Promise<DecisionRecord> {
  loadPolicy(ctx.config)
  const {server, tool: uri} = splitName(ctx, full, 'uri')
  if (r.offline) throw new UsageError('--resource needs the server\'s resource listing (a URI is judged by its resource\'s or template\'s name): leave out --offline', 'offline_resource')
  const listing = await listResources(ctx, server)
  const raw = {prompts: [], resources: listing.filter((x) => x.kind === 'resource'), templates: listing.filter((x) => x.kind === 'template'), tools: []}
  const catalog = nameCatalog(server, raw, undefined)
  const byUri = new Map(catalog.resources.map((x) => [x.fullUri, x]))
  const at = await resourceTarget(server, uri, (u) => byUri.get(u), catalog.templates)
  const reason = {resource: `resource "${at.ref.tool}" (resources are reads)`, template: `template "${at.ref.tool}" it fits (resources are reads)`, uri: 'no listed resource or template: judged by the URI (resources are reads)'}[at.by]
  return decide(ctx, r, at.ref, reason, 'resource', full)
}
