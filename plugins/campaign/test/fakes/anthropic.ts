import type {ServerResponse} from 'node:http'

import type {Brain, BrainRequest, BrainTurn} from './brain.js'
import {counter, cut, type Fake, type FakeOptions, type Handler, normalise, pieces, type Script, sse, startFake, tokensOf} from './server.js'

/**
 * A loopback Anthropic Messages API: `POST /v1/messages` (streamed as SSE or one JSON body),
 * `POST /v1/messages/count_tokens`. The real `@anthropic-ai/sdk` and `claude -p` run against it
 * with `ANTHROPIC_BASE_URL` set to `fake.url`.
 *
 * Usage reports prompt caching like the real API: the first request whose system prompt or tools
 * carry `cache_control` writes the prefix (`cache_creation_input_tokens`), later requests with
 * the same prefix read it (`cache_read_input_tokens`).
 */
export function startAnthropic(arg?: Brain | FakeOptions | Script): Promise<Fake> {
  const options = normalise(arg)
  const cached = new Set<string>()
  const messageId = counter('msg_fake')
  const toolId = counter('toolu_fake')

  const messages: Handler = async (_req, res, body, ctx) => {
    const b = body as AnthropicRequest
    const request = toBrain(b)
    const total = tokensOf({m: b.messages, s: b.system, t: b.tools})
    const decision = await ctx.decide(request, total)
    if (decision.reply === null) return error(res, decision.fault.status, decision.fault.message, decision.fault.retryAfter)
    const {reply} = decision
    const fault = decision.fault?.kind ?? null

    // Prompt caching: the prefix is the tools and the system prompt when they ask to be cached.
    const wantsCache = JSON.stringify([b.tools ?? [], b.system ?? '']).includes('"cache_control"')
    const prefix = wantsCache ? tokensOf({s: b.system, t: b.tools}) : 0
    const key = JSON.stringify([b.model, b.tools, b.system])
    const read = wantsCache && cached.has(key) ? prefix : 0
    const created = wantsCache && !cached.has(key) ? prefix : 0
    if (wantsCache) cached.add(key)
    const usage = {cache_creation_input_tokens: created, cache_read_input_tokens: read, input_tokens: Math.max(1, total - read - created), output_tokens: 0}

    const content: Array<Record<string, unknown>> = []
    if (reply.text) content.push({text: reply.text, type: 'text'})
    for (const c of reply.calls) content.push({id: toolId(), input: c.input, name: c.name, type: 'tool_use'})
    usage.output_tokens = Math.max(1, tokensOf(content))
    const stopReason = reply.calls.length > 0 ? 'tool_use' : 'end_turn'
    const message = {content, id: messageId(), model: b.model, role: 'assistant', stop_reason: stopReason, stop_sequence: null, type: 'message', usage}

    if (!b.stream) {
      res.writeHead(200, {'content-type': 'application/json', 'request-id': `req_${message.id}`}).end(JSON.stringify(message))
      return
    }
    const s = sse(res)
    s.send('message_start', {message: {...message, content: [], stop_reason: null, usage: {...usage, output_tokens: 1}}, type: 'message_start'})
    s.send('ping', {type: 'ping'})
    let malformedDone = false
    for (const [index, block] of content.entries()) {
      if (block.type === 'text') {
        s.send('content_block_start', {content_block: {text: '', type: 'text'}, index, type: 'content_block_start'})
        for (const p of pieces(String(block.text))) s.send('content_block_delta', {delta: {text: p, type: 'text_delta'}, index, type: 'content_block_delta'})
        if (fault === 'cut') return cut(res)
      } else {
        s.send('content_block_start', {content_block: {id: block.id, input: {}, name: block.name, type: 'tool_use'}, index, type: 'content_block_start'})
        let json = JSON.stringify(block.input)
        if (fault === 'malformed' && !malformedDone) {
          json = json.slice(0, Math.max(1, Math.floor(json.length / 2))) + ',"oops'
          malformedDone = true
        }
        for (const p of pieces(json, 64)) s.send('content_block_delta', {delta: {partial_json: p, type: 'input_json_delta'}, index, type: 'content_block_delta'})
        if (fault === 'cut') return cut(res)
      }
      s.send('content_block_stop', {index, type: 'content_block_stop'})
    }
    if (fault === 'cut') return cut(res)
    if (fault === 'stream-error') {
      s.send('error', {error: {message: 'Overloaded', type: 'overloaded_error'}, type: 'error'})
      return s.end()
    }
    s.send('message_delta', {delta: {stop_reason: stopReason, stop_sequence: null}, type: 'message_delta', usage: {output_tokens: usage.output_tokens}})
    s.send('message_stop', {type: 'message_stop'})
    s.end()
  }

  const countTokens: Handler = async (_req, res, body) => {
    const b = body as AnthropicRequest
    res.writeHead(200, {'content-type': 'application/json'}).end(JSON.stringify({input_tokens: tokensOf({m: b.messages, s: b.system, t: b.tools})}))
  }

  return startFake(
    options,
    (method, path) => (method !== 'POST' ? undefined : path === '/v1/messages' ? messages : path === '/v1/messages/count_tokens' ? countTokens : undefined),
    (res) => error(res, 401, 'invalid x-api-key'),
  )
}

const ERROR_TYPES: Record<number, string> = {400: 'invalid_request_error', 401: 'authentication_error', 403: 'permission_error', 404: 'not_found_error', 413: 'request_too_large', 429: 'rate_limit_error', 500: 'api_error', 529: 'overloaded_error'}

/** An error in Anthropic's shape: `{type: "error", error: {type, message}}`. */
function error(res: ServerResponse, status: number, message?: string, retryAfter?: number): void {
  const type = ERROR_TYPES[status] ?? 'api_error'
  const headers: Record<string, string> = {'content-type': 'application/json', 'request-id': `req_fake_${status}`}
  if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter)
  res.writeHead(status, headers).end(JSON.stringify({error: {message: message ?? type.replaceAll('_', ' '), type}, type: 'error'}))
}

interface AnthropicBlock {
  content?: Array<{text?: string; type: string}> | string
  id?: string
  input?: unknown
  is_error?: boolean
  name?: string
  text?: string
  tool_use_id?: string
  type: string
}

interface AnthropicRequest {
  messages: Array<{content: AnthropicBlock[] | string; role: 'assistant' | 'user'}>
  model: string
  stream?: boolean
  system?: Array<{text: string; type: string}> | string
  tools?: Array<{name?: string; type?: string}>
}

function toBrain(b: AnthropicRequest): BrainRequest {
  const system = typeof b.system === 'string' ? b.system : (b.system ?? []).map((x) => x.text).join('\n')
  const turns: BrainTurn[] = b.messages.map((m) => {
    const blocks: AnthropicBlock[] = typeof m.content === 'string' ? [{text: m.content, type: 'text'}] : m.content
    return {
      calls: blocks.filter((x) => x.type === 'tool_use').map((x) => ({id: String(x.id), input: x.input, name: String(x.name)})),
      results: blocks
        .filter((x) => x.type === 'tool_result')
        .map((x) => ({content: typeof x.content === 'string' ? x.content : (x.content ?? []).map((c) => c.text ?? '').join(''), id: String(x.tool_use_id), isError: x.is_error === true})),
      role: m.role,
      text: blocks
        .filter((x) => x.type === 'text')
        .map((x) => x.text)
        .join('\n'),
    }
  })
  return {model: b.model, system, tools: (b.tools ?? []).map((t) => t.name ?? '').filter(Boolean), turns}
}
