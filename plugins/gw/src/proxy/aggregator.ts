import type {Server} from '@modelcontextprotocol/sdk/server/index.js'
import type {CallToolResult, Tool} from '@modelcontextprotocol/sdk/types.js'
import {closest} from '@toolkit/kit'

import {type CompiledAcl, evaluate, TOOL_SEPARATOR, type ToolRef, type User} from './acl.js'
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
  listTools(user: User): {tools: Tool[]}
}

/** tools/list and tools/call for one user, shared by the SDK server and the HTTP fast path. */
export function toolHandlers(ctx: AggregatorContext): ToolHandlers {
  return {
    async callTool(user, params, signal) {
      const name = params.name
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
          // One reconnect within the call's budget before answering an outage: a redeploy goes unnoticed.
          await ctx.pool.revive(owner)
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
      const tools: Tool[] = []
      for (const t of ctx.pool.tools()) {
        if (evaluate(ctx.acl, user, t.ref).allowed) tools.push(t.tool)
      }
      return {tools}
    },
  }
}

/**
 * One MCP server object (per HTTP session, or the single stdio session) whose tools are the
 * union of the upstreams' tools, filtered per user by the ACL.
 */
export async function createAggregatingServer(ctx: AggregatorContext, fixedUser?: User, handlers = toolHandlers(ctx)): Promise<Server> {
  const [{Server}, types] = await Promise.all([import('@modelcontextprotocol/sdk/server/index.js'), import('@modelcontextprotocol/sdk/types.js')])
  const {CallToolRequestSchema, ListToolsRequestSchema} = types
  const server = new Server(PROXY_INFO, {
    capabilities: {tools: {listChanged: true}},
    instructions: 'Tools of several MCP servers, named <server>__<tool>.',
  })
  server.setRequestHandler(ListToolsRequestSchema, (_req, extra) => handlers.listTools(userOf(extra, fixedUser)))
  server.setRequestHandler(CallToolRequestSchema, (req, extra) => handlers.callTool(userOf(extra, fixedUser), req.params, extra.signal))
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
