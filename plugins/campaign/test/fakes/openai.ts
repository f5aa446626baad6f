import type {ServerResponse} from 'node:http'

import type {Brain, BrainRequest, BrainTurn} from './brain.js'
import {counter, cut, type Fake, fakePicture, type FakeOptions, type Handler, normalise, pieces, type Script, sse, startFake, tokensOf} from './server.js'

/**
 * A loopback OpenAI API with both tool-calling wire formats:
 * - `POST /v1/responses` (the Responses API, streamed: `response.created`,
 *   `response.output_item.added|done`, `response.output_text.delta`,
 *   `response.function_call_arguments.delta`, `response.completed` with usage), which the
 *   `openai` SDK and `codex exec` speak;
 * - `POST /v1/chat/completions` (Chat Completions, streamed as `chat.completion.chunk`s ending
 *   with `data: [DONE]`, usage in the last chunk with `stream_options.include_usage`), which
 *   Ollama, vLLM and llama.cpp's server speak.
 * - `POST /v1/images/generations` (b64_json pictures of the requested size).
 * Give clients `${fake.url}/v1` as the base URL.
 */
export function startOpenAI(arg?: Brain | FakeOptions | Script): Promise<Fake> {
  const options = normalise(arg)
  const responseId = counter('resp_fake')
  const itemId = counter('item_fake')
  const callId = counter('call_fake')

  const responses: Handler = async (_req, res, body, ctx) => {
    const b = body as ResponsesRequest
    const request = responsesToBrain(b)
    const inputTokens = tokensOf({i: b.input, s: b.instructions, t: b.tools})
    const decision = await ctx.decide(request, inputTokens)
    if (decision.reply === null) return error(res, decision.fault.status, decision.fault.message, decision.fault.retryAfter)
    const {reply} = decision
    const fault = decision.fault?.kind ?? null
    const output: Array<Record<string, unknown>> = []
    if (reply.text) output.push({content: [{annotations: [], text: reply.text, type: 'output_text'}], id: itemId(), role: 'assistant', status: 'completed', type: 'message'})
    for (const [i, c] of reply.calls.entries()) {
      let args = JSON.stringify(c.input)
      if (fault === 'malformed' && i === 0) args = args.slice(0, Math.max(1, Math.floor(args.length / 2))) + ',"oops'
      output.push({arguments: args, call_id: callId(), id: itemId(), name: c.name, status: 'completed', type: 'function_call'})
    }
    const outputTokens = Math.max(1, tokensOf(output))
    const usage = {input_tokens: inputTokens, input_tokens_details: {cached_tokens: 0}, output_tokens: outputTokens, output_tokens_details: {reasoning_tokens: 0}, total_tokens: inputTokens + outputTokens}
    const base = {created_at: Math.floor(Date.now() / 1000), error: null, id: responseId(), incomplete_details: null, instructions: b.instructions ?? null, model: b.model, object: 'response', parallel_tool_calls: true, tool_choice: 'auto', tools: b.tools ?? []}
    const done = {...base, output, status: 'completed', usage}
    if (!b.stream) {
      res.writeHead(200, {'content-type': 'application/json', 'x-request-id': `req_${base.id}`}).end(JSON.stringify(done))
      return
    }
    const s = sse(res)
    let seq = 0
    const send = (type: string, data: Record<string, unknown>) => s.send(type, {...data, sequence_number: seq++, type})
    send('response.created', {response: {...base, output: [], status: 'in_progress', usage: null}})
    send('response.in_progress', {response: {...base, output: [], status: 'in_progress', usage: null}})
    for (const [outputIndex, item] of output.entries()) {
      const id = String(item.id)
      if (item.type === 'message') {
        const text = ((item.content as Array<{text: string}>)[0]).text
        send('response.output_item.added', {item: {...item, content: [], status: 'in_progress'}, output_index: outputIndex})
        send('response.content_part.added', {content_index: 0, item_id: id, output_index: outputIndex, part: {annotations: [], text: '', type: 'output_text'}})
        for (const delta of pieces(text)) send('response.output_text.delta', {content_index: 0, delta, item_id: id, logprobs: [], output_index: outputIndex})
        if (fault === 'cut') return cut(res)
        send('response.output_text.done', {content_index: 0, item_id: id, logprobs: [], output_index: outputIndex, text})
        send('response.content_part.done', {content_index: 0, item_id: id, output_index: outputIndex, part: {annotations: [], text, type: 'output_text'}})
      } else {
        send('response.output_item.added', {item: {...item, arguments: '', status: 'in_progress'}, output_index: outputIndex})
        for (const delta of pieces(String(item.arguments), 64)) send('response.function_call_arguments.delta', {delta, item_id: id, output_index: outputIndex})
        if (fault === 'cut') return cut(res)
        send('response.function_call_arguments.done', {arguments: item.arguments, item_id: id, output_index: outputIndex})
      }
      send('response.output_item.done', {item, output_index: outputIndex})
    }
    if (fault === 'cut') return cut(res)
    if (fault === 'stream-error') {
      send('response.failed', {response: {...done, error: {code: 'server_error', message: 'The server had an error while processing your request.'}, status: 'failed'}})
      return s.end()
    }
    send('response.completed', {response: done})
    s.end()
  }

  const chat: Handler = async (_req, res, body, ctx) => {
    const b = body as ChatRequest
    const request = chatToBrain(b)
    const inputTokens = tokensOf({m: b.messages, t: b.tools})
    const decision = await ctx.decide(request, inputTokens)
    if (decision.reply === null) return error(res, decision.fault.status, decision.fault.message, decision.fault.retryAfter)
    const {reply} = decision
    const fault = decision.fault?.kind ?? null
    const calls = reply.calls.map((c, i) => {
      let args = JSON.stringify(c.input)
      if (fault === 'malformed' && i === 0) args = args.slice(0, Math.max(1, Math.floor(args.length / 2))) + ',"oops'
      return {function: {arguments: args, name: c.name}, id: callId(), type: 'function'}
    })
    const outputTokens = Math.max(1, tokensOf({c: calls, t: reply.text}))
    const usage = {completion_tokens: outputTokens, prompt_tokens: inputTokens, total_tokens: inputTokens + outputTokens}
    const finish = calls.length > 0 ? 'tool_calls' : 'stop'
    const id = `chatcmpl-${responseId()}`
    const created = Math.floor(Date.now() / 1000)
    if (!b.stream) {
      const message = {content: reply.text || null, role: 'assistant', ...(calls.length > 0 ? {tool_calls: calls} : {})}
      res.writeHead(200, {'content-type': 'application/json'}).end(JSON.stringify({choices: [{finish_reason: finish, index: 0, message}], created, id, model: b.model, object: 'chat.completion', usage}))
      return
    }
    const s = sse(res)
    const chunk = (delta: Record<string, unknown>, finishReason: null | string = null, extra: Record<string, unknown> = {}) =>
      s.send(null, {choices: [{delta, finish_reason: finishReason, index: 0}], created, id, model: b.model, object: 'chat.completion.chunk', ...extra})
    chunk({content: '', role: 'assistant'})
    if (reply.text) for (const p of pieces(reply.text)) chunk({content: p})
    for (const [index, c] of calls.entries()) {
      chunk({tool_calls: [{function: {arguments: '', name: c.function.name}, id: c.id, index, type: 'function'}]})
      for (const p of pieces(c.function.arguments, 64)) chunk({tool_calls: [{function: {arguments: p}, index}]})
      if (fault === 'cut') return cut(res)
    }
    if (fault === 'cut') return cut(res)
    if (fault === 'stream-error') {
      s.send(null, {error: {message: 'The server had an error while processing your request.', type: 'server_error'}})
      return s.end()
    }
    chunk({}, finish)
    if (b.stream_options?.include_usage) s.send(null, {choices: [], created, id, model: b.model, object: 'chat.completion.chunk', usage})
    s.raw('data: [DONE]\n\n')
    s.end()
  }

  const images: Handler = async (_req, res, body) => {
    const b = body as {prompt?: string; size?: string}
    const [w, h] = (b.size ?? '1024x1024').split('x').map(Number)
    const png = await fakePicture(options, b.prompt ?? '', w, h)
    if (png === null) return error(res, 500, 'The server had an error while processing your request.')
    res.writeHead(200, {'content-type': 'application/json'}).end(JSON.stringify({created: Math.floor(Date.now() / 1000), data: [{b64_json: png.toString('base64')}], usage: {input_tokens: 50, output_tokens: 1000, total_tokens: 1050}}))
  }

  const models: Handler = async (_req, res) => {
    res.writeHead(200, {'content-type': 'application/json'}).end(JSON.stringify({data: [{created: 0, id: 'fake-model', object: 'model', owned_by: 'fake'}], object: 'list'}))
  }

  return startFake(
    options,
    (method, path) => {
      if (method === 'GET' && path === '/v1/models') return models
      if (method !== 'POST') return undefined
      if (path === '/v1/images/generations') return images
      return path === '/v1/responses' ? responses : path === '/v1/chat/completions' ? chat : undefined
    },
    (res) => error(res, 401, 'Incorrect API key provided.'),
  )
}

const CODES: Record<number, [string, null | string]> = {
  400: ['invalid_request_error', 'context_length_exceeded'],
  401: ['invalid_request_error', 'invalid_api_key'],
  403: ['invalid_request_error', 'unsupported_country_region_territory'],
  429: ['requests', 'rate_limit_exceeded'],
  500: ['server_error', null],
  503: ['server_error', null],
}

/** An error in OpenAI's shape: `{error: {message, type, param, code}}`. */
function error(res: ServerResponse, status: number, message?: string, retryAfter?: number): void {
  const [type, code] = CODES[status] ?? ['server_error', null]
  const headers: Record<string, string> = {'content-type': 'application/json', 'x-request-id': `req_fake_${status}`}
  if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter)
  res.writeHead(status, headers).end(JSON.stringify({error: {code, message: message ?? `fake ${status}`, param: null, type}}))
}

type Content = Array<{text?: string; type: string}> | null | string

const textOf = (c: Content | undefined): string => (typeof c === 'string' ? c : (c ?? []).map((x) => x.text ?? '').join(''))

interface ResponsesRequest {
  input: Array<Record<string, unknown>> | string
  instructions?: string
  model: string
  stream?: boolean
  tools?: Array<{name?: string; type: string}>
}

function responsesToBrain(b: ResponsesRequest): BrainRequest {
  const items = typeof b.input === 'string' ? [{content: b.input, role: 'user', type: 'message'}] : b.input
  const turns: BrainTurn[] = []
  const system: string[] = b.instructions ? [b.instructions] : []
  for (const item of items) {
    const type = item.type ?? 'message'
    if (type === 'message') {
      const role = String(item.role)
      if (role === 'system' || role === 'developer') system.push(textOf(item.content as Content))
      else turns.push({calls: [], results: [], role: role === 'assistant' ? 'assistant' : 'user', text: textOf(item.content as Content)})
    } else if (type === 'function_call') {
      let input: unknown
      try {
        input = JSON.parse(String(item.arguments))
      } catch {
        input = String(item.arguments)
      }
      turns.push({calls: [{id: String(item.call_id), input, name: String(item.name)}], results: [], role: 'assistant', text: ''})
    } else if (type === 'function_call_output') {
      const out = item.output
      const content = typeof out === 'string' ? out : textOf(out as Content)
      turns.push({calls: [], results: [{content, id: String(item.call_id), isError: false}], role: 'user', text: ''})
    }
  }
  return {model: b.model, system: system.join('\n'), tools: (b.tools ?? []).map((t) => t.name ?? '').filter(Boolean), turns}
}

interface ChatRequest {
  messages: Array<{content?: Content; role: string; tool_call_id?: string; tool_calls?: Array<{function: {arguments: string; name: string}; id: string}>}>
  model: string
  stream?: boolean
  stream_options?: {include_usage?: boolean}
  tools?: Array<{function: {name: string}; type: string}>
}

function chatToBrain(b: ChatRequest): BrainRequest {
  const system: string[] = []
  const turns: BrainTurn[] = []
  for (const m of b.messages) {
    if (m.role === 'system' || m.role === 'developer') system.push(textOf(m.content))
    else if (m.role === 'tool') turns.push({calls: [], results: [{content: textOf(m.content), id: String(m.tool_call_id), isError: false}], role: 'user', text: ''})
    else {
      const calls = (m.tool_calls ?? []).map((c) => {
        let input: unknown
        try {
          input = JSON.parse(c.function.arguments)
        } catch {
          input = c.function.arguments
        }
        return {id: c.id, input, name: c.function.name}
      })
      turns.push({calls, results: [], role: m.role === 'assistant' ? 'assistant' : 'user', text: textOf(m.content)})
    }
  }
  return {model: b.model, system: system.join('\n'), tools: (b.tools ?? []).map((t) => t.function?.name ?? '').filter(Boolean), turns}
}
