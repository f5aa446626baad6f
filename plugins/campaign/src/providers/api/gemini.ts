import type {Content, GoogleGenAI} from '@google/genai'

import type {ToolCall, Turn} from './conversation.js'
import type {ModelClient, ModelRequest, ModelResponse} from './loop.js'

export interface GeminiSettings {
  apiKey: string
  /** Null: the SDK's default, or GOOGLE_GEMINI_BASE_URL, which the SDK reads itself. */
  baseUrl: null | string
  model: string
}

/**
 * Gemini through `@google/genai`, streamed (`streamGenerateContent`) with function calling.
 * Function results go back as `{output}` (the JSON text of the tool's result) or `{error}`.
 */
export async function createGeminiClient(s: GeminiSettings): Promise<ModelClient> {
  const {GoogleGenAI: Sdk} = await import('@google/genai')
  // No retryOptions: retries are the loop's, so the run can say it is waiting.
  const ai: GoogleGenAI = new Sdk({apiKey: s.apiKey, ...(s.baseUrl ? {httpOptions: {baseUrl: s.baseUrl}} : {})})
  let callNo = 0
  return {
    keyVariable: 'GEMINI_API_KEY',
    model: s.model,
    async respond(r: ModelRequest): Promise<ModelResponse> {
      const stream = await ai.models.generateContentStream({
        config: {
          abortSignal: r.signal,
          systemInstruction: r.system,
          tools: [{functionDeclarations: r.tools.map((t) => ({description: t.description, name: t.name, parametersJsonSchema: t.input_schema}))}],
        },
        contents: toContents(r.turns),
        model: s.model,
      })
      let text = ''
      const calls: ToolCall[] = []
      let finish: null | string = null
      const tokens = {cache_read: 0, cache_write: 0, input: 0, output: 0}
      const parts: unknown[] = []
      for await (const chunk of stream) {
        const candidate = chunk.candidates?.[0]
        for (const part of candidate?.content?.parts ?? []) {
          parts.push(part)
          if (part.text && !part.thought) text += part.text
          if (part.functionCall) {
            const args = part.functionCall.args
            const call: ToolCall = {id: part.functionCall.id ?? `gemini-call-${++callNo}`, input: args ?? {}, name: part.functionCall.name ?? ''}
            if (args !== undefined && (typeof args !== 'object' || args === null)) call.malformed = 'the arguments are not an object'
            calls.push(call)
          }
        }
        if (candidate?.finishReason) finish = candidate.finishReason
        const u = chunk.usageMetadata
        if (u) {
          const cached = u.cachedContentTokenCount ?? 0
          tokens.cache_read = cached
          tokens.input = (u.promptTokenCount ?? 0) - cached
          tokens.output = (u.candidatesTokenCount ?? 0) + (u.thoughtsTokenCount ?? 0)
        }
      }
      if (finish === null) throw new Error('the response stream ended before a finishReason')
      // A call the model could not form (MALFORMED_FUNCTION_CALL) comes with no parts: ask again.
      if (finish === 'MALFORMED_FUNCTION_CALL' && calls.length === 0) calls.push({id: `gemini-call-${++callNo}`, input: {}, malformed: 'Gemini reported MALFORMED_FUNCTION_CALL', name: 'unknown'})
      return {calls, raw: {finish_reason: finish, parts}, text, tokens}
    },
    secrets: [s.apiKey],
    vendor: 'gemini',
  }
}

function toContents(turns: readonly Turn[]): Content[] {
  return turns.map((t): Content => {
    if (t.role === 'assistant') {
      const parts: NonNullable<Content['parts']> = []
      if (t.text !== '') parts.push({text: t.text})
      for (const c of t.calls) parts.push({functionCall: {args: c.malformed === undefined ? (c.input as Record<string, unknown>) : {}, ...idOf(c.id), name: c.name}})
      if (parts.length === 0) parts.push({text: '(no reply)'})
      return {parts, role: 'model'}
    }
    if (t.results.length === 0) return {parts: [{text: t.text}], role: 'user'}
    return {parts: t.results.map((res) => ({functionResponse: {...idOf(res.id), name: res.name, response: res.isError ? {error: res.content} : {output: res.content}}})), role: 'user'}
  })
}

/** Ids the model gave go back with the call and its result; ids made up here (Gemini often sends none) do not. */
function idOf(id: string): {id?: string} {
  return id.startsWith('gemini-call-') ? {} : {id}
}
