import type {GetPromptResult, Prompt} from '@modelcontextprotocol/sdk/types.js'

import {closest, UsageError} from '@toolkit/kit'

import type {GwContext} from './context.js'

import {parseToolArguments} from './call.js'
import {allPages, requireCapability} from './capability.js'
import {withServer} from './context.js'

export type PromptRecord = {[k: string]: unknown; server: string} & Prompt

export function listPrompts(ctx: GwContext, server: string): Promise<PromptRecord[]> {
  return withServer(ctx, server, async ({client}) => {
    requireCapability(client, server, 'prompts')
    const prompts = await allPages(async (cursor) => {
      const r = await client.listPrompts(cursor ? {cursor} : undefined)
      return {items: r.prompts, nextCursor: r.nextCursor}
    })
    return prompts.map((p) => ({...p, server}))
  })
}

export interface PromptResultRecord {
  [k: string]: unknown
  description?: string
  messages: GetPromptResult['messages']
  prompt: string
  server: string
}

/**
 * `prompts/get` with `key=value` arguments (or one JSON object of strings, as the protocol wants).
 * The prompt must exist and its required arguments be given before anything is asked.
 */
export function getPrompt(ctx: GwContext, server: string, name: string, argv: string[]): Promise<PromptResultRecord> {
  const args = parseToolArguments(argv)
  for (const [k, v] of Object.entries(args)) {
    if (typeof v !== 'string') throw new UsageError(`prompt argument ${k}: prompt arguments are text, got ${JSON.stringify(v)}`, 'invalid_arguments')
  }
  return withServer(ctx, server, async ({client}) => {
    requireCapability(client, server, 'prompts')
    const prompts = await allPages(async (cursor) => {
      const r = await client.listPrompts(cursor ? {cursor} : undefined)
      return {items: r.prompts, nextCursor: r.nextCursor}
    })
    const prompt = prompts.find((p) => p.name === name)
    if (!prompt) {
      const guess = closest(name, prompts.map((p) => p.name))
      throw new UsageError(`server "${server}" has no prompt "${name}"${guess ? `; did you mean "${guess}"?` : ''}`, 'unknown_prompt')
    }
    const missing = (prompt.arguments ?? []).filter((a) => a.required && args[a.name] === undefined).map((a) => a.name)
    if (missing.length > 0) throw new UsageError(`prompt "${name}" needs ${missing.map((m) => `${m}=...`).join(' ')}`, 'invalid_arguments')
    const r = await client.getPrompt({arguments: args as Record<string, string>, name})
    return {description: r.description, messages: r.messages, prompt: name, server}
  })
}

/** `role: text` per message; non-text content summarised by type. */
export function promptText(messages: GetPromptResult['messages']): string {
  return messages
    .map((m) => {
      const c = m.content
      const body = c.type === 'text' ? c.text : c.type === 'resource' ? `(resource ${c.resource.uri})` : c.type === 'resource_link' ? `(resource link ${c.uri})` : `(${c.type})`
      return `${m.role}: ${body}`
    })
    .join('\n')
}
