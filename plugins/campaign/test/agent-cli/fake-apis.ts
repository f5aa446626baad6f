import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http'
import type {AddressInfo} from 'node:net'

import {type Action, missionPromptIn, type PuppetBrain, type ToolOutcome} from './puppet-brain.js'

export interface FakeApi {
  close(): Promise<void>
  /** Every request's path and API key header, for assertions (keys are test values). */
  readonly requests: Array<{auth: string; path: string}>
  readonly url: string
}

type Json = Record<string, unknown>

async function listen(handler: (body: Json, req: IncomingMessage, res: ServerResponse) => Promise<void>): Promise<FakeApi> {
  const requests: FakeApi['requests'] = []
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      requests.push({auth: String(req.headers['x-api-key'] ?? req.headers.authorization ?? ''), path: req.url ?? ''})
      let body: Json = {}
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Json
      } catch {
        // A body that is not JSON is answered like an empty one.
      }
      handler(body, req, res).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500, {'content-type': 'application/json'})
        res.end(JSON.stringify({error: {message: String(error), type: 'api_error'}}))
      })
    })
  })
  await new Promise<void>((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve())
  })
  return {
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
      })
    },
    requests,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
  }
}

function sse(res: ServerResponse, events: Array<[string, Json]>): void {
  res.writeHead(200, {'cache-control': 'no-cache', 'content-type': 'text/event-stream'})
  for (const [event, data] of events) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)
  res.end()
}

/** The tool name the CLI gave our tool (`mcp__campaign__get_brief`, ...). */
function toolName(tools: string[], name: string): string {
  return tools.find((t) => t === name || t.endsWith(`__${name}`)) ?? name
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content
  if (Array.isArray(content)) return content.map((c: Json) => (typeof c.text === 'string' ? c.text : '')).join('')
  return ''
}

/**
 * The Anthropic Messages API (`POST /v1/messages`, SSE when `stream` is true), answering with the
 * brain's actions as `text` and `tool_use` blocks. Requests that are not a mission (Claude Code's
 * own side requests, which carry none of our tools) get a short text answer.
 */
export function startAnthropicFake(brain: PuppetBrain): Promise<FakeApi> {
  let n = 0
  return listen(async (body, req, res) => {
    if (!req.url?.startsWith('/v1/messages')) {
      res.writeHead(404, {'content-type': 'application/json'})
      res.end(JSON.stringify({error: {message: 'not found', type: 'not_found_error'}, type: 'error'}))
      return
    }
    const messages = (body.messages ?? []) as Array<{content: unknown; role: string}>
    const tools = ((body.tools ?? []) as Array<{name: string}>).map((t) => t.name)
    const userTexts = messages.filter((m) => m.role === 'user').flatMap((m) => (typeof m.content === 'string' ? [m.content] : ((m.content ?? []) as Json[]).filter((c) => c.type === 'text').map((c) => String(c.text))))
    const prompt = tools.some((t) => t.endsWith('__finish')) ? missionPromptIn(userTexts) : null
    let action: Action = {text: 'OK.', type: 'end'}
    if (prompt !== null) {
      const last = messages.at(-1)
      const result = Array.isArray(last?.content) ? (last.content as Json[]).find((c) => c.type === 'tool_result') : undefined
      const outcome: null | ToolOutcome = result ? {id: String(result.tool_use_id), isError: result.is_error === true, text: textOf(result.content)} : null
      action = await brain.step(prompt, outcome)
    }
    const model = String(body.model ?? 'claude-test')
    const blocks: Json[] = []
    if (action.text) blocks.push({text: action.text, type: 'text'})
    if (action.type === 'tool') blocks.push({id: action.id, input: action.input, name: toolName(tools, action.name), type: 'tool_use'})
    const stop = action.type === 'tool' ? 'tool_use' : 'end_turn'
    const usage = {cache_creation_input_tokens: 0, cache_read_input_tokens: 0, input_tokens: 100 + JSON.stringify(messages).length / 40, output_tokens: 20}
    usage.input_tokens = Math.round(usage.input_tokens)
    const id = `msg_${++n}`
    if (body.stream !== true) {
      res.writeHead(200, {'content-type': 'application/json'})
      res.end(JSON.stringify({content: blocks, id, model, role: 'assistant', stop_reason: stop, stop_sequence: null, type: 'message', usage}))
      return
    }
    const events: Array<[string, Json]> = [['message_start', {message: {content: [], id, model, role: 'assistant', stop_reason: null, stop_sequence: null, type: 'message', usage: {...usage, output_tokens: 1}}, type: 'message_start'}]]
    for (const [index, b] of blocks.entries()) {
      if (b.type === 'text') {
        events.push(['content_block_start', {content_block: {text: '', type: 'text'}, index, type: 'content_block_start'}], ['content_block_delta', {delta: {text: b.text, type: 'text_delta'}, index, type: 'content_block_delta'}])
      } else {
        const json = JSON.stringify(b.input)
        events.push(['content_block_start', {content_block: {id: b.id, input: {}, name: b.name, type: 'tool_use'}, index, type: 'content_block_start'}])
        // Split the arguments the way a real stream does, so the CLI's partial-JSON parser runs.
        for (let i = 0; i < json.length; i += 200) events.push(['content_block_delta', {delta: {partial_json: json.slice(i, i + 200), type: 'input_json_delta'}, index, type: 'content_block_delta'}])
      }
      events.push(['content_block_stop', {index, type: 'content_block_stop'}])
    }
    events.push(['message_delta', {delta: {stop_reason: stop, stop_sequence: null}, type: 'message_delta', usage: {output_tokens: usage.output_tokens}}], ['message_stop', {type: 'message_stop'}])
    sse(res, events)
  })
}

/**
 * The OpenAI Responses API (`POST /v1/responses`, SSE), answering with the brain's actions as
 * `message` and `function_call` output items and `usage` in `response.completed`.
 */
export function startResponsesFake(brain: PuppetBrain): Promise<FakeApi> {
  let n = 0
  return listen(async (body, req, res) => {
    if (!req.url?.startsWith('/v1/responses')) {
      res.writeHead(404, {'content-type': 'application/json'})
      res.end(JSON.stringify({error: {message: `no route ${req.url}`, type: 'invalid_request_error'}}))
      return
    }
    const input = (Array.isArray(body.input) ? body.input : []) as Json[]
    // Codex groups an MCP server's tools in a `namespace` tool; a call names both.
    const namespaces = new Map<string, string>()
    const tools = ((body.tools ?? []) as Json[]).flatMap((t: Json): string[] => {
      if (t.type === 'namespace' && Array.isArray(t.tools)) {
        return (t.tools as Json[]).map((x) => {
          namespaces.set(`${String(t.name)}__${String(x.name)}`, String(t.name))
          return `${String(t.name)}__${String(x.name)}`
        })
      }
      return typeof t.name === 'string' ? [t.name] : []
    })
    const userTexts = input.filter((i) => i.role === 'user').map((i) => textOf(i.content))
    const prompt = tools.some((t) => t.endsWith('finish')) ? missionPromptIn(userTexts) : null
    let action: Action = {text: 'OK.', type: 'end'}
    if (prompt !== null) {
      const last = input.at(-1)
      const outcome: null | ToolOutcome = last?.type === 'function_call_output' ? outcomeOf(String(last.call_id), last.output) : null
      action = await brain.step(prompt, outcome)
    }
    const id = `resp_${++n}`
    const model = String(body.model ?? 'gpt-test')
    const output: Json[] = []
    if (action.text) output.push({content: [{annotations: [], text: action.text, type: 'output_text'}], id: `msg_${n}`, role: 'assistant', status: 'completed', type: 'message'})
    if (action.type === 'tool') {
      const full = toolName(tools, action.name)
      const namespace = namespaces.get(full)
      const name = namespace === undefined ? full : full.slice(namespace.length + 2)
      output.push({arguments: JSON.stringify(action.input), call_id: action.id, id: `fc_${n}`, name, ...(namespace === undefined ? {} : {namespace}), status: 'completed', type: 'function_call'})
    }
    const inputTokens = Math.round(100 + JSON.stringify(input).length / 40)
    const usage = {input_tokens: inputTokens, input_tokens_details: {cached_tokens: 0}, output_tokens: 20, output_tokens_details: {reasoning_tokens: 0}, total_tokens: inputTokens + 20}
    const response = {created_at: Math.floor(Date.now() / 1000), id, model, object: 'response', output: [] as Json[], status: 'in_progress'}
    const events: Array<[string, Json]> = [['response.created', {response, sequence_number: 0, type: 'response.created'}]]
    for (const [index, item] of output.entries()) {
      if (item.type === 'message') {
        events.push(
          ['response.output_item.added', {item: {...item, content: [], status: 'in_progress'}, output_index: index, type: 'response.output_item.added'}],
          ['response.content_part.added', {content_index: 0, item_id: item.id, output_index: index, part: {annotations: [], text: '', type: 'output_text'}, type: 'response.content_part.added'}],
          ['response.output_text.delta', {content_index: 0, delta: action.text, item_id: item.id, output_index: index, type: 'response.output_text.delta'}],
          ['response.output_text.done', {content_index: 0, item_id: item.id, output_index: index, text: action.text, type: 'response.output_text.done'}],
        )
      } else {
        events.push(['response.output_item.added', {item: {...item, arguments: ''}, output_index: index, type: 'response.output_item.added'}], ['response.function_call_arguments.done', {arguments: item.arguments, item_id: item.id, output_index: index, type: 'response.function_call_arguments.done'}])
      }
      events.push(['response.output_item.done', {item, output_index: index, type: 'response.output_item.done'}])
    }
    events.push(['response.completed', {response: {...response, output, status: 'completed', usage}, type: 'response.completed'}])
    sse(res, events.map(([e, d], i) => [e, {...d, sequence_number: i}]))
  })
}

/** Codex sends an MCP result as text, or as the CallToolResult JSON; errors say so. */
function outcomeOf(id: string, output: unknown): ToolOutcome {
  // Codex puts the call's wall time before the tool's own text.
  let text = (typeof output === 'string' ? output : textOf(output)).replace(/^Wall time: [^\n]*\nOutput:/, '')
  let isError = false
  try {
    const parsed = JSON.parse(text) as Json
    if (parsed && typeof parsed === 'object' && Array.isArray(parsed.content)) {
      isError = parsed.isError === true || parsed.is_error === true
      text = textOf(parsed.content)
    }
  } catch {
    // Plain text: the tool's own message.
  }
  return {id, isError, text}
}
