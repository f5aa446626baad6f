import type {CallToolResult, Tool} from '@modelcontextprotocol/sdk/types.js'

import {closest, ToolkitError, UsageError} from '@toolkit/kit'

import type {GwContext} from './context.js'

import {serverKey} from './servers-file.js'
import {findServer, withServer} from './context.js'
import {readToolCache, writeToolCache} from './tool-cache.js'
import {fetchAllTools} from './tools.js'

type Schema = {items?: unknown; properties?: Record<string, {type?: unknown}>; type?: unknown}

function typesOf(schema: {type?: unknown} | undefined): string[] {
  if (!schema?.type) return []
  return Array.isArray(schema.type) ? schema.type.map(String) : [String(schema.type)]
}

/** A `key=value` value typed by the schema: numbers, booleans, arrays and objects are parsed. */
function coerce(key: string, raw: string, schema: {type?: unknown} | undefined): unknown {
  const types = typesOf(schema)
  if (types.includes('string') || types.length === 0) return raw
  if (types.includes('integer') || types.includes('number')) {
    const n = Number(raw)
    if (raw.trim() !== '' && Number.isFinite(n)) return n
  }
  if (types.includes('boolean') && (raw === 'true' || raw === 'false')) return raw === 'true'
  if (types.includes('null') && raw === 'null') return null
  if (types.includes('array') || types.includes('object')) {
    try {
      return JSON.parse(raw)
    } catch (error) {
      throw new UsageError(`argument ${key}: not valid JSON (${(error as Error).message})`, 'invalid_arguments')
    }
  }
  // Left as text: schema validation names the mismatch.
  return raw
}

/**
 * Tool arguments from the command line: one JSON object (`'{"a":1}'`), or `key=value` pairs
 * typed by the input schema, or `key:=<json>` for a raw JSON value. Both forms can be mixed;
 * later keys win.
 */
export function parseToolArguments(argv: string[], inputSchema: Schema = {}): Record<string, unknown> {
  const args: Record<string, unknown> = {}
  for (const item of argv) {
    if (item.trimStart().startsWith('{')) {
      let parsed: unknown
      try {
        parsed = JSON.parse(item)
      } catch (error) {
        throw new UsageError(`arguments are not valid JSON: ${(error as Error).message}`, 'invalid_arguments')
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new UsageError('arguments must be a JSON object', 'invalid_arguments')
      Object.assign(args, parsed)
      continue
    }
    const m = /^([^=:]+?)(:=|=)([\s\S]*)$/.exec(item)
    if (!m) throw new UsageError(`argument "${item}" is neither a JSON object nor key=value`, 'invalid_arguments')
    const [, key, op, value] = m
    if (op === ':=') {
      try {
        args[key] = JSON.parse(value)
      } catch (error) {
        throw new UsageError(`argument ${key}: not valid JSON (${(error as Error).message})`, 'invalid_arguments')
      }
    } else {
      args[key] = coerce(key, value, inputSchema.properties?.[key])
    }
  }
  return args
}

/** Checks arguments against the tool's input schema before anything is sent. */
export async function validateArguments(tool: Tool, args: Record<string, unknown>): Promise<void> {
  const {AjvJsonSchemaValidator} = await import('@modelcontextprotocol/sdk/validation/ajv')
  let check
  try {
    check = new AjvJsonSchemaValidator().getValidator(tool.inputSchema as never)
  } catch {
    // A schema our validator cannot compile is the server's problem: let the server judge.
    return
  }
  const result = check(args)
  if (!result.valid) {
    throw new UsageError(`arguments do not match the input schema of tool "${tool.name}": ${result.errorMessage}`, 'invalid_arguments')
  }
}

export interface CallRecord {
  [k: string]: unknown
  content: CallToolResult['content']
  isError: boolean
  server: string
  structuredContent?: Record<string, unknown>
  tool: string
}

/** The readable form of a result: text items as they are, other items summarised. */
export function resultText(r: Pick<CallRecord, 'content' | 'structuredContent'>): string {
  const parts: string[] = []
  for (const c of r.content ?? []) {
    switch (c.type) {
      case 'text': {
        parts.push(c.text)
        break
      }
      case 'image':
      case 'audio': {
        parts.push(`[${c.type} ${c.mimeType}, ${Math.floor((c.data.length * 3) / 4)} bytes]`)
        break
      }
      case 'resource_link': {
        parts.push(`[resource ${c.uri}${c.name ? ` (${c.name})` : ''}]`)
        break
      }
      case 'resource': {
        const res = c.resource as {text?: string; uri: string}
        parts.push(typeof res.text === 'string' ? res.text : `[resource ${res.uri}]`)
        break
      }
      default: {
        parts.push(JSON.stringify(c))
      }
    }
  }
  if (r.structuredContent !== undefined) parts.push(JSON.stringify(r.structuredContent, null, 2))
  return parts.join('\n')
}

export class ToolError extends ToolkitError {
  constructor(
    message: string,
    readonly record: CallRecord,
  ) {
    super(message, {code: 'tool_error', exit: 1})
    this.name = 'ToolError'
  }
}

export interface CallOptions {
  /** Per-request timeout in milliseconds (the SDK's default is 60 s). */
  timeoutMs?: number
}

/**
 * Calls one tool: arguments parsed and validated against the listed input schema first, then
 * sent. A result flagged `isError` is returned as a record and also thrown as a ToolError.
 */
export async function callTool(ctx: GwContext, server: string, toolName: string, argv: string[], options: CallOptions = {}): Promise<CallRecord> {
  const key = serverKey(findServer(ctx, server))
  return withServer(ctx, server, async ({client}) => {
    // The cached list saves a round trip; anything it would refuse is re-checked against a fresh list.
    let tools = await readToolCache(key, ctx.env)
    let fresh = false
    const refresh = async (): Promise<Tool[]> => {
      fresh = true
      tools = await fetchAllTools(client)
      await writeToolCache(key, tools, ctx.env)
      return tools
    }
    const prepare = async (list: Tool[]): Promise<Record<string, unknown>> => {
      const tool = list.find((t) => t.name === toolName)
      if (!tool) {
        const guess = closest(toolName, list.map((t) => t.name))
        throw new UsageError(`server "${server}" has no tool "${toolName}"${guess ? `; did you mean "${guess}"?` : ''}`, 'unknown_tool')
      }
      const args = parseToolArguments(argv, tool.inputSchema as Schema)
      await validateArguments(tool, args)
      return args
    }
    let args: Record<string, unknown>
    try {
      args = await prepare(tools ?? (await refresh()))
    } catch (error) {
      if (fresh || !(error instanceof UsageError)) throw error
      args = await prepare(await refresh())
    }
    const result = (await client.callTool({arguments: args, name: toolName}, undefined, {
      signal: ctx.signal,
      timeout: options.timeoutMs,
    })) as CallToolResult
    const record: CallRecord = {content: result.content ?? [], isError: Boolean(result.isError), server, tool: toolName}
    if (result.structuredContent !== undefined) record.structuredContent = result.structuredContent
    return record
  })
}
