import type {Server} from '@modelcontextprotocol/sdk/server/index.js'
import type {CallToolResult, Tool} from '@modelcontextprotocol/sdk/types.js'
import {closest} from '@toolkit/kit'

import {type CompiledAcl, evaluate, TOOL_SEPARATOR, type ToolRef, type User} from './acl.js'
import {type CatalogHandlers, catalogHandlers, type SubscriptionTarget} from './catalog-handlers.js'
import {INVALID_PARAMS, MAX_ARGUMENT_DEPTH, nestedDeeperThan, shortParamsError} from './params.js'
import {type UpstreamPool, UpstreamUnavailableError} from './upstreams.js'

/** JSON-RPC error code for a call the ACL denies (server-defined range). */
export const ACCESS_DENIED = -32003
const INTERNAL_ERROR = -32603

/**
 * A JSON-RPC error as the SDK server serializes it (code, message, data). Unlike McpError, the
 * message is not prefixed with "MCP error <code>:", which clients add again on their side.
 */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: Record<string, unknown>,
  ) {
    super(message)
  }
}

export const PROXY_INFO = {name: 'toolkit-gw-proxy', version: '0.1.0'}

export interface AuditEntry {
  allowed: boolean
  /** Milliseconds the upstream took (allowed calls). */
  ms?: number
  outcome: 'denied' | 'error' | 'ok' | 'tool_error' | 'unknown_tool'
  provider: string
  rule?: string
  subject: string
  time: string
  tool: string
}

export interface AggregatorContext {
  acl: CompiledAcl | undefined
  /** One entry per tools/call, after it finished. Arguments and results are never included. */
  audit?: (entry: AuditEntry) => void
  /** Optional audit hook: every tools/call decision. */
  onDecision?: (entry: {allowed: boolean; rule: string; subject: string; tool: string}) => void
  pool: UpstreamPool
}

/** The authenticated user of a request, as the HTTP front attached it (see http-server.ts). */
export function userOf(extra: {authInfo?: {extra?: Record<string, unknown>}}, fallback?: User): User {
  const u = extra.authInfo?.extra?.user as User | undefined
  if (u) return u
  if (fallback) return fallback
  throw new Error('request reached the MCP server without an authenticated user')
}

export interface ToolHandlers {
  callTool(user: User, params: {_meta?: unknown; arguments?: Record<string, unknown>; name: string}, signal?: AbortSignal): Promise<CallToolResult>
  listTools(user: User): Promise<{tools: Tool[]}> | {tools: Tool[]}
}

/** tools/list and tools/call for one user, shared by the SDK server and the HTTP fast path. */
export function toolHandlers(ctx: AggregatorContext): ToolHandlers {
  const visibleTools = (user: User) => {
    const tools: Tool[] = []
    for (const t of ctx.pool.tools()) {
      if (evaluate(ctx.acl, user, t.ref).allowed) tools.push(t.tool)
    }
    return {tools}
  }
  return {
    async callTool(user, params, signal) {
      const name = params.name
      // A lazy server that never ran has no listing yet: start it before judging the name.
      if (!ctx.pool.tool(name) && ctx.pool.cold) await ctx.pool.warm()
      let t = ctx.pool.tool(name)
      const audit = (e: Pick<AuditEntry, 'allowed' | 'ms' | 'outcome' | 'rule'>) =>
        ctx.audit?.({...e, provider: user.provider, subject: user.subject, time: new Date().toISOString(), tool: name})
      const judge = (ref: ToolRef, access: string) => {
        const decision = evaluate(ctx.acl, user, ref)
        ctx.onDecision?.({allowed: decision.allowed, rule: decision.rule, subject: user.subject, tool: name})
        if (decision.allowed) return decision
        audit({allowed: false, outcome: 'denied', rule: decision.rule})
        throw new RpcError(ACCESS_DENIED, `access denied: "${user.subject}" may not call ${name} (${access} tool), decided by ${decision.rule}`, {
          access,
          rule: decision.rule,
          subject: user.subject,
          tool: name,
        })
      }
      if (!t) {
        const owner = ctx.pool.serverOf(name)
        if (owner !== undefined && ctx.pool.unavailable(owner)) {
          // The ACL speaks before anything is said about the upstream: judged on the tool as last
          // listed, or as a write tool when it never was (the stricter class).
          const known = ctx.pool.knownTool(name)
          judge(known?.ref ?? {access: 'write', server: owner, tool: name.slice(owner.length + TOOL_SEPARATOR.length)}, known?.access ?? 'write')
          // A reconnect within the connection timeout (and the call's own) before answering an outage: a redeploy goes unnoticed.
          await ctx.pool.revive(owner, undefined, signal)
          t = ctx.pool.tool(name)
          const outage = t ? undefined : ctx.pool.unavailable(owner)
          if (outage) {
            audit({allowed: true, outcome: 'error'})
            throw new RpcError(INTERNAL_ERROR, outage.message, {server: owner})
          }
        }
        if (!t) {
          audit({allowed: false, outcome: 'unknown_tool'})
          const visible = [...ctx.pool.tools()].filter((x) => evaluate(ctx.acl, user, x.ref).allowed).map((x) => x.fullName)
          const hint = closest(name, visible)
          throw new RpcError(INVALID_PARAMS, `unknown tool "${name}"${hint ? ` (did you mean "${hint}"?)` : ''}`)
        }
      }
      const decision = judge(t.ref, t.access)
      // Absurdly deep arguments fail this call alone; they never reach (and upset) the upstream.
      if (nestedDeeperThan(params.arguments, MAX_ARGUMENT_DEPTH)) {
        audit({allowed: true, outcome: 'error', rule: decision.rule})
        throw new RpcError(INVALID_PARAMS, `arguments are nested deeper than ${MAX_ARGUMENT_DEPTH} levels`)
      }
      const started = performance.now()
      try {
        const result = await ctx.pool.call(name, params.arguments, params._meta as Record<string, unknown> | undefined, signal)
        audit({allowed: true, ms: Math.round(performance.now() - started), outcome: result.isError ? 'tool_error' : 'ok', rule: decision.rule})
        return result
      } catch (error) {
        audit({allowed: true, ms: Math.round(performance.now() - started), outcome: 'error', rule: decision.rule})
        if (error instanceof UpstreamUnavailableError) throw new RpcError(INTERNAL_ERROR, error.message, {server: t.server})
        throw error
      }
    },
    listTools(user) {
      if (ctx.pool.cold) return ctx.pool.warm().then(() => visibleTools(user))
      return visibleTools(user)
    },
  }
}

/** The resource URIs each session subscribed to (updates are passed on only to those). */
const subscriptions = new WeakMap<Server, Map<string, SubscriptionTarget>>()

/**
 * Passes one pool event on to a session: list_changed of the kind that changed, or a resource
 * update the session subscribed to.
 */
export function notify(server: Server, event: 'prompts' | 'resources' | 'tools' | {updated: string}): void {
  const done = () => {}
  if (event === 'tools') server.sendToolListChanged().catch(done)
  else if (event === 'resources') server.sendResourceListChanged().catch(done)
  else if (event === 'prompts') server.sendPromptListChanged().catch(done)
  else if (subscriptions.get(server)?.has(event.updated)) server.sendResourceUpdated({uri: event.updated}).catch(done)
}

/**
 * Passes the pool's events on to every session `sessions()` yields (list_changed per kind,
 * subscribed resource updates); returns the function that stops it.
 */
export function forwardPoolEvents(pool: UpstreamPool, sessions: () => Iterable<Server>): () => void {
  const each = (event: Parameters<typeof notify>[1]) => () => {
    for (const s of sessions()) notify(s, event)
  }
  const handlers: Array<[string, (uri?: string) => void]> = [
    ['changed', each('tools')],
    ['resourcesChanged', each('resources')],
    ['promptsChanged', each('prompts')],
    ['resourceUpdated', (uri) => each({updated: String(uri)})()],
  ]
  for (const [event, h] of handlers) pool.on(event, h)
  return () => {
    for (const [event, h] of handlers) pool.off(event, h)
  }
}

/**
 * One MCP server object (per HTTP session, or the single stdio session) whose tools are the
 * union of the upstreams' tools, filtered per user by the ACL.
 */
export async function createAggregatingServer(
  ctx: AggregatorContext,
  fixedUser?: User,
  handlers = toolHandlers(ctx),
  catalog: CatalogHandlers = catalogHandlers(ctx),
): Promise<Server> {
  const [{Server}, t] = await Promise.all([import('@modelcontextprotocol/sdk/server/index.js'), import('@modelcontextprotocol/sdk/types.js')])
  const server = new Server(PROXY_INFO, {
    capabilities: {completions: {}, prompts: {listChanged: true}, resources: {listChanged: true, subscribe: true}, tools: {listChanged: true}},
    instructions: 'Tools, resources and prompts of several MCP servers, named <server>__<name> (resource URIs <server>__<uri>).',
  })
  const user = (extra: {authInfo?: {extra?: Record<string, unknown>}}) => userOf(extra, fixedUser)
  server.setRequestHandler(t.ListToolsRequestSchema, (_req, extra) => handlers.listTools(user(extra)))
  server.setRequestHandler(t.CallToolRequestSchema, (req, extra) => handlers.callTool(user(extra), req.params, extra.signal))
  server.setRequestHandler(t.ListResourcesRequestSchema, (_req, extra) => catalog.listResources(user(extra)))
  server.setRequestHandler(t.ListResourceTemplatesRequestSchema, (_req, extra) => catalog.listResourceTemplates(user(extra)))
  server.setRequestHandler(t.ReadResourceRequestSchema, (req, extra) => catalog.readResource(user(extra), req.params.uri, extra.signal))
  server.setRequestHandler(t.ListPromptsRequestSchema, (_req, extra) => catalog.listPrompts(user(extra)))
  server.setRequestHandler(t.GetPromptRequestSchema, (req, extra) => catalog.getPrompt(user(extra), req.params, extra.signal))
  server.setRequestHandler(t.CompleteRequestSchema, (req, extra) => catalog.complete(user(extra), req.params, extra.signal))
  // One hold on the upstream subscription per URI this session subscribed to, given back when it
  // unsubscribes or ends: the upstream is unsubscribed only when no session holds the URI.
  const subscribed = new Map<string, SubscriptionTarget>()
  subscriptions.set(server, subscribed)
  server.setRequestHandler(t.SubscribeRequestSchema, async (req, extra) => {
    const at = await catalog.subscribe(user(extra), req.params.uri, extra.signal)
    // Subscribing twice is one subscription: the second hold goes back at once, as does the hold
    // of a session that ended while the upstream answered (its onclose has already run).
    if (subscribed.has(req.params.uri) || extra.signal.aborted) await catalog.unsubscribe(at)
    else subscribed.set(req.params.uri, at)
    return {}
  })
  server.setRequestHandler(t.UnsubscribeRequestSchema, async (req) => {
    const at = subscribed.get(req.params.uri)
    subscribed.delete(req.params.uri)
    if (at) await catalog.unsubscribe(at)
    return {}
  })
  const ended = server.onclose
  server.onclose = () => {
    ended?.()
    const held = [...subscribed.values()]
    subscribed.clear()
    for (const at of held) catalog.unsubscribe(at).catch(() => {})
  }
  // Params that fail the SDK's validation get a short -32602, not the validator's dump.
  const table = (server as unknown as {_requestHandlers: Map<string, (request: {method: string}, extra: unknown) => Promise<unknown>>})._requestHandlers
  for (const [method, handler] of table) {
    table.set(method, async (request, extra) => {
      try {
        return await handler(request, extra)
      } catch (error) {
        throw shortParamsError(error, method)
      }
    })
  }
  return server
}
