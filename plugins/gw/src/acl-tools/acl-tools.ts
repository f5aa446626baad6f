import type {Tool} from '@modelcontextprotocol/sdk/types.js'

import {closest, UsageError} from '@toolkit/kit'

import type {GwContext} from '../client/context.js'

import {serverKey} from '../client/config.js'
import {findServer} from '../client/context.js'
import {readToolCache} from '../client/tool-cache.js'
import {listTools} from '../client/tools.js'
import {type Access, evaluate, TOOL_SEPARATOR} from '../proxy/acl.js'
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

/** `<server>__<tool>` split on the longest configured server name it starts with. */
function splitTool(ctx: GwContext, full: string): {server: string; tool: string} {
  const servers = Object.keys(ctx.config.servers).sort((a, b) => b.length - a.length)
  const server = servers.find((s) => full.startsWith(`${s}${TOOL_SEPARATOR}`) && full.length > s.length + TOOL_SEPARATOR.length)
  if (server) return {server, tool: full.slice(server.length + TOOL_SEPARATOR.length)}
  const guess = closest(full.split(TOOL_SEPARATOR)[0], servers)
  throw new UsageError(
    `"${full}" is not <server>${TOOL_SEPARATOR}<tool> for a configured server${guess ? ` (did you mean "${guess}${TOOL_SEPARATOR}..."?)` : servers.length > 0 ? ` (servers: ${servers.join(', ')})` : ' (no servers configured)'}`,
    'unknown_tool',
  )
}

export interface CheckRequest {
  /** The access class to assume, skipping the lookup. */
  access?: Access
  offline: boolean
  roles: string[]
  subject: string
  tool: string
}

/**
 * The proxy's decision for one user and one tool, and the rule that made it. The access class
 * comes from --access, the operator's override, or the tool's annotations (the cached tool list,
 * else one listing over the network); a tool the server does not list is judged a write tool,
 * as the proxy judges it.
 */
export async function checkAccess(ctx: GwContext, r: CheckRequest): Promise<DecisionRecord> {
  const policy = loadPolicy(ctx.config)
  const {server, tool} = splitTool(ctx, r.tool)
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
  const decision = evaluate(policy.acl, {provider: 'cli', roles: r.roles, subject: r.subject}, {access: cls.access, server, tool})
  return {access: cls.access, access_reason: cls.reason, allowed: decision.allowed, roles: r.roles, rule: decision.rule, server, subject: r.subject, tool: `${server}${TOOL_SEPARATOR}${tool}`}
}
