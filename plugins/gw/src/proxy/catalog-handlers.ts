import type {CompleteRequest, CompleteResult, GetPromptResult, Prompt, ReadResourceResult, Resource, ResourceTemplate} from '@modelcontextprotocol/sdk/types.js'

import {evaluate, TOOL_SEPARATOR, type ToolRef, type User} from './acl.js'
import {ACCESS_DENIED, type AggregatorContext, RpcError} from './aggregator.js'
import {type ProxiedPrompt, readRef, resourceTarget} from './catalog.js'
import {INVALID_PARAMS} from './params.js'
import {UpstreamUnavailableError} from './upstreams.js'

const INTERNAL_ERROR = -32_603

export interface CatalogHandlers {
  /**
   * completion/complete: judged as a read of the prompt or resource template it completes (the
   * same rule that decides prompts/get or resources/read), then asked of that upstream.
   */
  complete(user: User, params: CompleteRequest['params'], signal?: AbortSignal): Promise<CompleteResult>
  getPrompt(user: User, params: {arguments?: Record<string, string>; name: string}, signal?: AbortSignal): Promise<GetPromptResult>
  listPrompts(user: User): Promise<{prompts: Prompt[]}>
  listResources(user: User): Promise<{resources: Resource[]}>
  listResourceTemplates(user: User): Promise<{resourceTemplates: ResourceTemplate[]}>
  readResource(user: User, uri: string, signal?: AbortSignal): Promise<ReadResourceResult>
  /**
   * Checks the ACL and takes one hold on the upstream's subscription; the session keeps the URI
   * to pass updates on, and the returned target to give the hold back with `unsubscribe`.
   */
  subscribe(user: User, uri: string, signal?: AbortSignal): Promise<SubscriptionTarget>
  /** Gives back one hold taken by `subscribe` (the upstream is unsubscribed when the last one goes). */
  unsubscribe(target: SubscriptionTarget): Promise<void>
}

/** Where a proxied resource URI is subscribed: the upstream and its own URI. */
export interface SubscriptionTarget {
  server: string
  upstreamUri: string
}

const prefix = (server: string, uri: string) => `${server}${TOOL_SEPARATOR}${uri}`

/** Contents of a read or an embedded resource carry the upstream's URI: give them the proxied one. */
function rewriteUris<T>(server: string, items: T[]): T[] {
  return items.map((c) => {
    const item = c as {resource?: {uri?: unknown}; uri?: unknown}
    if (typeof item.uri === 'string') return {...c, uri: prefix(server, item.uri)}
    if (item.resource && typeof item.resource.uri === 'string') return {...c, resource: {...item.resource, uri: prefix(server, item.resource.uri)}}
    return c
  })
}

/**
 * resources/list, resources/templates/list, resources/read, resources/subscribe, prompts/list
 * and prompts/get for one user: everything named `<server>__<name>` (URIs `<server>__<uri>`),
 * filtered by the same ACL as tools, each resource and prompt judged as a read of a tool named
 * like it. The ACL decides before anything is said about the upstream.
 */
export function catalogHandlers(ctx: AggregatorContext): CatalogHandlers {
  const {pool} = ctx
  const allowed = (user: User, ref: ToolRef) => evaluate(ctx.acl, user, ref).allowed
  const deny = (user: User, what: string, ref: ToolRef) => {
    const d = evaluate(ctx.acl, user, ref)
    ctx.onDecision?.({allowed: d.allowed, rule: d.rule, subject: user.subject, tool: what})
    if (!d.allowed) throw new RpcError(ACCESS_DENIED, `access denied: "${user.subject}" may not read ${what}, decided by ${d.rule}`, {rule: d.rule, subject: user.subject})
  }
  const outage = (error: unknown, server: string) => {
    if (error instanceof UpstreamUnavailableError) return new RpcError(INTERNAL_ERROR, error.message, {server})
    return error
  }

  /**
   * A server that is down is given one reconnection (within the connection timeout and the
   * request's own) before its outage is reported, as tools/call does: a redeploy goes unnoticed.
   */
  const revived = async (server: string, signal?: AbortSignal): Promise<void> => {
    if (pool.unavailable(server)) await pool.revive(server, undefined, signal)
  }

  /**
   * The upstream and the ACL reference of a proxied URI: a listed resource, a template it fits, or
   * the bare URI. A server that is down is judged by its last listing, so the rule that decides
   * while it is up decides while it is down too.
   */
  const locate = async (uri: string): Promise<{ref: ToolRef; server: string; upstreamUri: string}> => {
    const listed = pool.resource(uri)
    if (listed) return {ref: listed.ref, server: listed.server, upstreamUri: listed.upstreamUri}
    const server = pool.serverOf(uri)
    if (server === undefined) throw new RpcError(INVALID_PARAMS, `unknown resource "${uri}": proxied URIs start with <server>${TOOL_SEPARATOR}`)
    const last = pool.unavailable(server) ? pool.lastCatalog(server) : undefined
    const lastListed = (fullUri: string) => last?.resources.find((r) => r.fullUri === fullUri)
    return resourceTarget(server, uri.slice(server.length + TOOL_SEPARATOR.length), lastListed, last ? last.templates : pool.templates())
  }

  /**
   * A prompt the user may read, reconnecting its server first when it is down; the ACL speaks
   * before an unknown or unavailable one is reported.
   */
  const promptFor = async (user: User, name: string, signal?: AbortSignal): Promise<ProxiedPrompt> => {
    const p = pool.prompt(name)
    if (p) {
      deny(user, name, p.ref)
      return p
    }
    const server = pool.serverOf(name)
    if (server !== undefined) {
      const last = pool.unavailable(server) ? pool.lastCatalog(server)?.prompts.find((x) => x.fullName === name) : undefined
      deny(user, name, last?.ref ?? readRef(server, name.slice(server.length + TOOL_SEPARATOR.length)))
      await revived(server, signal)
      const back = pool.prompt(name)
      if (back) return back
      const down = pool.unavailable(server)
      if (down) throw outage(down, server)
    }
    throw new RpcError(INVALID_PARAMS, `unknown prompt "${name}"`)
  }

  const completeAt = async (server: string, params: CompleteRequest['params'], signal?: AbortSignal): Promise<CompleteResult> => {
    try {
      return await pool.complete(server, params, signal)
    } catch (error) {
      throw outage(error, server)
    }
  }

  const warm = async () => {
    if (pool.cold) await pool.warm()
  }

  return {
    async complete(user, params, signal) {
      await warm()
      const {ref} = params
      if (ref.type === 'ref/prompt') {
        const p = await promptFor(user, String(ref.name), signal)
        return completeAt(p.server, {...params, ref: {...ref, name: p.upstreamName}}, signal)
      }
      const uri = String((ref as {uri?: unknown}).uri)
      const owner = pool.serverOf(uri)
      const down = owner !== undefined && pool.unavailable(owner) ? pool.lastCatalog(owner)?.templates : undefined
      const template = (down ?? pool.templates()).find((t) => t.template.uriTemplate === uri)
      if (template) {
        deny(user, uri, template.ref)
        await revived(template.server, signal)
        return completeAt(template.server, {...params, ref: {...ref, uri: template.upstreamTemplate}}, signal)
      }
      const at = await locate(uri)
      deny(user, uri, at.ref)
      await revived(at.server, signal)
      return completeAt(at.server, {...params, ref: {...ref, uri: at.upstreamUri}}, signal)
    },
    async getPrompt(user, params, signal) {
      await warm()
      const p = await promptFor(user, params.name, signal)
      try {
        const r = await pool.getPrompt(p, params.arguments, signal)
        return {...r, messages: r.messages.map((m) => ({...m, content: rewriteUris(p.server, [m.content])[0]}))}
      } catch (error) {
        throw outage(error, p.server)
      }
    },
    async listPrompts(user) {
      await warm()
      return {prompts: [...pool.prompts()].filter((p) => allowed(user, p.ref)).map((p) => p.prompt)}
    },
    async listResources(user) {
      await warm()
      return {resources: [...pool.resources()].filter((r) => allowed(user, r.ref)).map((r) => r.resource)}
    },
    async listResourceTemplates(user) {
      await warm()
      return {resourceTemplates: pool.templates().filter((t) => allowed(user, t.ref)).map((t) => t.template)}
    },
    async readResource(user, uri, signal) {
      await warm()
      const at = await locate(uri)
      deny(user, uri, at.ref)
      await revived(at.server, signal)
      try {
        const r = await pool.readResource(at.server, at.upstreamUri, signal)
        return {...r, contents: rewriteUris(at.server, r.contents)}
      } catch (error) {
        throw outage(error, at.server)
      }
    },
    async subscribe(user, uri, signal) {
      await warm()
      const at = await locate(uri)
      deny(user, uri, at.ref)
      await revived(at.server, signal)
      try {
        await pool.subscribe(at.server, at.upstreamUri, signal)
      } catch (error) {
        throw outage(error, at.server)
      }
      return {server: at.server, upstreamUri: at.upstreamUri}
    },
    unsubscribe: (target) => pool.unsubscribe(target.server, target.upstreamUri),
  }
}
