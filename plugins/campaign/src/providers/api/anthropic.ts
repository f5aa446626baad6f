import type Anthropic from '@anthropic-ai/sdk'

import type {ToolCall, Turn} from './conversation.js'
import type {ModelClient, ModelRequest, ModelResponse} from './loop.js'

export interface AnthropicSettings {
  apiKey: string
  /** Null: the SDK's default, or ANTHROPIC_BASE_URL, which the SDK reads itself. */
  baseUrl: null | string
  maxTokens: number
  model: string
}

/**
 * The Messages API through `@anthropic-ai/sdk`, streamed. The raw events are read here rather
 * than through the SDK's message accumulator so that a tool call whose JSON is broken is
 * answered as a refused call the model can redo, instead of losing the whole response.
 * The system prompt and the tool definitions are marked for prompt caching: they are the same
 * on every turn of a mission and across missions of a kind.
 */
export async function createAnthropicClient(s: AnthropicSettings): Promise<ModelClient> {
  const {default: AnthropicSdk} = await import('@anthropic-ai/sdk')
  // Retries are the loop's, so the run can say it is waiting.
  const client = new AnthropicSdk({apiKey: s.apiKey, maxRetries: 0, ...(s.baseUrl ? {baseURL: s.baseUrl} : {})})
  return {
    keyVariable: 'ANTHROPIC_API_KEY',
    model: s.model,
    async respond(r: ModelRequest): Promise<ModelResponse> {
      const tools: Anthropic.Tool[] = r.tools.map((t, i) => ({
        description: t.description,
        input_schema: t.input_schema as Anthropic.Tool.InputSchema,
        name: t.name,
        // One breakpoint after the last tool caches every tool definition.
        ...(i === r.tools.length - 1 ? {cache_control: {type: 'ephemeral' as const}} : {}),
      }))
      const stream = await client.messages.create(
        {
          max_tokens: s.maxTokens,
          messages: toMessages(r.turns),
          model: s.model,
          stream: true,
          system: [{cache_control: {type: 'ephemeral'}, text: r.system, type: 'text'}],
          tools,
        },
        {signal: r.signal},
      )
      const blocks: Array<{id?: string; json: string; name?: string; text: string; type: string}> = []
      const tokens = {cache_read: 0, cache_write: 0, input: 0, output: 0}
      let stop: null | string = null
      let ended = false
      for await (const ev of stream) {
        switch (ev.type) {
          case 'message_start': {
            const u = ev.message.usage
            tokens.input = u.input_tokens
            tokens.cache_read = u.cache_read_input_tokens ?? 0
            tokens.cache_write = u.cache_creation_input_tokens ?? 0
            tokens.output = u.output_tokens
            break
          }
          case 'content_block_start': {
            const b = ev.content_block
            blocks[ev.index] = b.type === 'tool_use' ? {id: b.id, json: '', name: b.name, text: '', type: b.type} : {json: '', text: b.type === 'text' ? b.text : '', type: b.type}
            break
          }
          case 'content_block_delta': {
            const b = blocks[ev.index]
            if (ev.delta.type === 'text_delta') b.text += ev.delta.text
            else if (ev.delta.type === 'input_json_delta') b.json += ev.delta.partial_json
            break
          }
          case 'message_delta': {
            stop = ev.delta.stop_reason
            tokens.output = ev.usage.output_tokens
            break
          }
          case 'message_stop': {
            ended = true
            break
          }
          default:
        }
      }
      if (!ended) throw new Error('the response stream ended before message_stop')
      const calls: ToolCall[] = []
      for (const b of blocks) {
        if (b?.type !== 'tool_use') continue
        const call: ToolCall = {id: String(b.id), input: {}, name: String(b.name)}
        try {
          call.input = b.json.trim() === '' ? {} : JSON.parse(b.json)
        } catch (error) {
          call.malformed = stop === 'max_tokens' ? 'the response hit max_tokens in the middle of the call' : (error as Error).message
        }
        calls.push(call)
      }
      const text = blocks
        .filter((b) => b?.type === 'text')
        .map((b) => b.text)
        .join('')
      return {calls, raw: {content: blocks.filter(Boolean).map((b) => (b.type === 'tool_use' ? {id: b.id, input: b.json, name: b.name, type: b.type} : {text: b.text, type: b.type})), stop_reason: stop}, text, tokens}
    },
    secrets: [s.apiKey],
    vendor: 'anthropic',
  }
}

function toMessages(turns: readonly Turn[]): Anthropic.MessageParam[] {
  return turns.map((t): Anthropic.MessageParam => {
    if (t.role === 'assistant') {
      const content: Anthropic.ContentBlockParam[] = []
      if (t.text !== '') content.push({text: t.text, type: 'text'})
      for (const c of t.calls) content.push({id: c.id, input: c.malformed === undefined ? c.input : {}, name: c.name, type: 'tool_use'})
      // The API refuses an empty assistant message; a response with nothing in it still took a turn.
      if (content.length === 0) content.push({text: '(no reply)', type: 'text'})
      return {content, role: 'assistant'}
    }
    if (t.results.length === 0) return {content: t.text, role: 'user'}
    return {content: t.results.map((r) => ({content: r.content, is_error: r.isError || undefined, tool_use_id: r.id, type: 'tool_result' as const})), role: 'user'}
  })
}
