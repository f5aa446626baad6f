import type {EventLog} from '../run/events.js'
import type {Tool, ToolContext} from './tool.js'
import {Refusal} from './tool.js'

export type ToolResult = {error: string; ok: false} | {ok: true; result: unknown}

/**
 * Runs one tool call for a mission: checks the input against the tool's schema, runs it, saves
 * the workspace when a mutating call succeeds, and only then reports `tool_finished`, so every
 * mutation an event reports is already on disk. A refused call changes nothing.
 */
export async function callTool(tools: Tool[], ctx: ToolContext, events: EventLog, save: () => Promise<void> | void, name: string, rawInput: unknown): Promise<ToolResult> {
  const tool = tools.find((t) => t.name === name)
  if (!tool) {
    events.emit({mission: ctx.mission, summary: name, tool: name, type: 'tool_called'})
    const error = `unknown tool "${name}"; tools: ${tools.map((t) => t.name).join(', ')}`
    events.emit({mission: ctx.mission, ok: false, summary: error, tool: name, type: 'tool_finished'})
    return {error, ok: false}
  }
  const parsed = tool.input.safeParse(rawInput ?? {})
  events.emit({mission: ctx.mission, summary: parsed.success ? tool.summary(parsed.data) : name, tool: name, type: 'tool_called'})
  if (!parsed.success) {
    const error = parsed.error.issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`).join('; ')
    events.emit({mission: ctx.mission, ok: false, summary: `invalid input: ${error}`, tool: name, type: 'tool_finished'})
    return {error: `invalid input: ${error}`, ok: false}
  }
  // Tools mutate the live workspace; a refusal after a partial change must not leak, so
  // mutating tools work on a copy that replaces the original only on success. Tools never
  // change `input` (the catalog, the bulk of the file), so only account and missions are copied.
  // A campaign mission's tools change only its own campaign, so only that one is copied.
  const copyAccount = () =>
    ctx.slug === null ? structuredClone(ctx.ws.account) : {...ctx.ws.account, campaigns: ctx.ws.account.campaigns.map((c) => (c.slug === ctx.slug ? structuredClone(c) : c))}
  const work = tool.mutates ? {...ctx.ws, account: copyAccount(), missions: structuredClone(ctx.ws.missions)} : ctx.ws
  const local: ToolContext = tool.mutates ? {...ctx, ws: work} : ctx
  try {
    const result = tool.run(local, parsed.data)
    if (tool.mutates) {
      Object.assign(ctx.ws, work)
      await save()
    }
    if (local.finished) ctx.finished = true
    events.emit({mission: ctx.mission, ok: true, summary: summarise(result), tool: name, type: 'tool_finished'})
    return {ok: true, result}
  } catch (error) {
    if (!(error instanceof Refusal)) throw error
    events.emit({mission: ctx.mission, ok: false, summary: error.message, tool: name, type: 'tool_finished'})
    return {error: error.message, ok: false}
  }
}

function summarise(result: unknown): string {
  if (result && typeof result === 'object') {
    const r = result as Record<string, unknown>
    if (Array.isArray(r.issues)) return `ok, ${r.issues.length} issues`
    if (typeof r.total === 'number') return `${r.total} products`
    if (Array.isArray(r.errors) && Array.isArray(r.warnings)) return `${r.errors.length} errors, ${r.warnings.length} warnings`
  }
  return 'ok'
}
