import type OpenAI from 'openai'

import type {ToolCall, Turn} from './conversation.js'
import type {ModelClient, ModelRequest, ModelResponse} from './loop.js'

export interface OpenAISettings {
  /** Null: no key (a local server); the SDK is given a placeholder it sends instead. */
  apiKey: null | string
  baseUrl: null | string
  keyVariable: string
  model: string
  vendor: string
}

async function sdk(s: OpenAISettings): Promise<OpenAI> {
  const {default: OpenAISdk} = await import('openai')
  // Retries are the loop's, so the run can say it is waiting.
  return new OpenAISdk({apiKey: s.apiKey ?? 'no-key', maxRetries: 0, ...(s.baseUrl ? {baseURL: s.baseUrl} : {})})
}

function parseArguments(id: string, name: string, args: string): ToolCall {
  const call: ToolCall = {id, input: {}, name}
  try {
    call.input = args.trim() === '' ? {} : JSON.parse(args)
  } catch (error) {
    call.malformed = (error as Error).message
  }
  return call
}

/**
 * `openai`: the Responses API, streamed. It is OpenAI's interface for tool-using models (the
 * one its newest models are documented against, and what codex speaks), and with `store: false`
 * nothing is kept on OpenAI's side: the whole conversation is sent each turn, as with the others.
 */
export async function createResponsesClient(s: OpenAISettings): Promise<ModelClient> {
  const client = await sdk(s)
  return {
    keyVariable: s.keyVariable,
    model: s.model,
    async respond(r: ModelRequest): Promise<ModelResponse> {
      const stream = await client.responses.create(
        {
          input: toInput(r.turns),
          instructions: r.system,
          model: s.model,
          store: false,
          stream: true,
          tools: r.tools.map((t) => ({description: t.description, name: t.name, parameters: t.input_schema, strict: false, type: 'function' as const})),
        },
        {signal: r.signal},
      )
      let text = ''
      const calls: ToolCall[] = []
      let done: null | OpenAI.Responses.Response = null
      for await (const ev of stream) {
        if (ev.type === 'response.output_text.delta') text += ev.delta
        else if (ev.type === 'response.output_item.done' && ev.item.type === 'function_call') calls.push(parseArguments(ev.item.call_id, ev.item.name, ev.item.arguments))
        else if (ev.type === 'response.completed' || ev.type === 'response.incomplete') done = ev.response
        else if (ev.type === 'response.failed') throw new Error(`the response failed: ${ev.response.error?.message ?? 'no reason given'}`)
        else if (ev.type === 'error') throw new Error(`the stream reported an error: ${ev.message}`)
      }
      if (!done) throw new Error('the response stream ended before response.completed')
      const u = done.usage
      const cached = u?.input_tokens_details?.cached_tokens ?? 0
      return {
        calls,
        raw: {output: done.output, status: done.status},
        text,
        tokens: {cache_read: cached, cache_write: 0, input: (u?.input_tokens ?? 0) - cached, output: u?.output_tokens ?? 0},
      }
    },
    secrets: s.apiKey ? [s.apiKey] : [],
    vendor: s.vendor,
  }
}

function toInput(turns: readonly Turn[]): OpenAI.Responses.ResponseInputItem[] {
  const items: OpenAI.Responses.ResponseInputItem[] = []
  for (const t of turns) {
    if (t.role === 'assistant') {
      if (t.text !== '') items.push({content: t.text, role: 'assistant'})
      for (const c of t.calls) items.push({arguments: c.malformed === undefined ? JSON.stringify(c.input) : '{}', call_id: c.id, name: c.name, type: 'function_call'})
    } else if (t.results.length > 0) {
      for (const res of t.results) items.push({call_id: res.id, output: res.content, type: 'function_call_output'})
    } else items.push({content: t.text, role: 'user'})
  }
  return items
}

/**
 * `openai-compatible`: Chat Completions, streamed, which is what Ollama, vLLM, llama.cpp's
 * server, OpenRouter, Groq and DeepSeek all speak; usage comes in the last chunk
 * (`stream_options.include_usage`).
 */
export async function createChatClient(s: OpenAISettings): Promise<ModelClient> {
  const client = await sdk(s)
  return {
    keyVariable: s.keyVariable,
    model: s.model,
    async respond(r: ModelRequest): Promise<ModelResponse> {
      const stream = await client.chat.completions.create(
        {
          messages: [{content: r.system, role: 'system'}, ...toMessages(r.turns)],
          model: s.model,
          stream: true,
          stream_options: {include_usage: true},
          tools: r.tools.map((t) => ({function: {description: t.description, name: t.name, parameters: t.input_schema}, type: 'function' as const})),
        },
        {signal: r.signal},
      )
      let text = ''
      const partial: Array<{args: string; id: string; name: string}> = []
      let finish: null | string = null
      let usage: null | OpenAI.CompletionUsage = null
      for await (const chunk of stream) {
        const error = (chunk as unknown as {error?: {message?: string}}).error
        if (error) throw new Error(`the stream reported an error: ${error.message ?? 'no reason given'}`)
        if (chunk.usage) usage = chunk.usage
        const choice = chunk.choices[0]
        if (!choice) continue
        text += choice.delta?.content ?? ''
        for (const tc of choice.delta?.tool_calls ?? []) {
          partial[tc.index] ??= {args: '', id: '', name: ''}
          const p = partial[tc.index]
          if (tc.id) p.id = tc.id
          if (tc.function?.name) p.name += tc.function.name
          if (tc.function?.arguments) p.args += tc.function.arguments
        }
        if (choice.finish_reason) finish = choice.finish_reason
      }
      if (finish === null) throw new Error('the response stream ended before a finish_reason')
      const cached = usage?.prompt_tokens_details?.cached_tokens ?? 0
      const calls = partial.filter(Boolean).map((p, i) => parseArguments(p.id || `call_${i}`, p.name, p.args))
      return {
        calls,
        raw: {content: text, finish_reason: finish, tool_calls: partial.filter(Boolean)},
        text,
        tokens: {cache_read: cached, cache_write: 0, input: (usage?.prompt_tokens ?? 0) - cached, output: usage?.completion_tokens ?? 0},
      }
    },
    secrets: s.apiKey ? [s.apiKey] : [],
    vendor: s.vendor,
  }
}

function toMessages(turns: readonly Turn[]): OpenAI.Chat.ChatCompletionMessageParam[] {
  const out: OpenAI.Chat.ChatCompletionMessageParam[] = []
  for (const t of turns) {
    if (t.role === 'assistant') {
      out.push({
        content: t.text === '' ? null : t.text,
        role: 'assistant',
        ...(t.calls.length > 0 ? {tool_calls: t.calls.map((c) => ({function: {arguments: c.malformed === undefined ? JSON.stringify(c.input) : '{}', name: c.name}, id: c.id, type: 'function' as const}))} : {}),
      })
    } else if (t.results.length > 0) {
      for (const res of t.results) out.push({content: res.content, role: 'tool', tool_call_id: res.id})
    } else out.push({content: t.text, role: 'user'})
  }
  return out
}
