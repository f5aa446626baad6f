import type {ServerResponse} from 'node:http'

import type {Brain, BrainRequest, BrainTurn} from './brain.js'
import {cut, type Fake, fakePicture, type FakeOptions, type Handler, normalise, pieces, type Script, sse, startFake, tokensOf} from './server.js'

/**
 * A loopback Gemini API: `POST /v1beta/models/<model>:generateContent` and
 * `:streamGenerateContent?alt=sse` with function calling. `@google/genai` runs against it with
 * `httpOptions.baseUrl` (or `GOOGLE_GEMINI_BASE_URL`) set to `fake.url`. Function results are
 * read from `response.output` / `response.error` (any other object is read as its JSON).
 * A model whose name has `-image` answers `generateContent` with an inline PNG.
 */
export function startGemini(arg?: Brain | FakeOptions | Script): Promise<Fake> {
  const options = normalise(arg)
  const generate: Handler = async (req, res, body, ctx) => {
    const b = body as GeminiRequest
    const model = /models\/([^:]+):/.exec(req.url ?? '')?.[1] ?? 'unknown'
    const streaming = (req.url ?? '').includes(':streamGenerateContent')
    if (model.includes('-image')) {
      const ratio = (b as {generationConfig?: {imageConfig?: {aspectRatio?: string}}}).generationConfig?.imageConfig?.aspectRatio ?? '1:1'
      const [w, h] = ratio.split(':').map(Number)
      const png = await fakePicture(options, JSON.stringify(b.contents), 256 * w, 256 * h)
      if (png === null) return error(res, 500, 'Internal error encountered.')
      const image = {candidates: [{content: {parts: [{inlineData: {data: png.toString('base64'), mimeType: 'image/png'}}], role: 'model'}, finishReason: 'STOP', index: 0}], modelVersion: model}
      res.writeHead(200, {'content-type': 'application/json'}).end(JSON.stringify(image))
      return
    }
    const request = toBrain(b, model)
    const promptTokens = tokensOf({c: b.contents, s: b.systemInstruction, t: b.tools})
    const decision = await ctx.decide(request, promptTokens)
    if (decision.reply === null) return error(res, decision.fault.status, decision.fault.message)
    const {reply} = decision
    const fault = decision.fault?.kind ?? null
    const parts: Array<Record<string, unknown>> = []
    if (reply.text) parts.push({text: reply.text})
    for (const c of reply.calls) parts.push({functionCall: {args: c.input, name: c.name}})
    const outputTokens = Math.max(1, tokensOf(parts))
    const usageMetadata = {candidatesTokenCount: outputTokens, promptTokenCount: promptTokens, totalTokenCount: promptTokens + outputTokens}
    // Gemini has no broken-JSON calls: a call it cannot form ends the response as MALFORMED_FUNCTION_CALL.
    const finishReason = fault === 'malformed' ? 'MALFORMED_FUNCTION_CALL' : 'STOP'
    const finalParts = fault === 'malformed' ? [] : parts
    const whole = {candidates: [{content: {parts: finalParts, role: 'model'}, finishReason, index: 0}], modelVersion: model, responseId: `fake-${Date.now()}`, usageMetadata}
    if (!streaming) {
      res.writeHead(200, {'content-type': 'application/json'}).end(JSON.stringify(whole))
      return
    }
    const s = sse(res)
    // Text arrives in pieces; each function call arrives whole, in its own chunk.
    if (fault !== 'malformed') {
      if (reply.text) for (const p of pieces(reply.text)) s.send(null, {candidates: [{content: {parts: [{text: p}], role: 'model'}, index: 0}], modelVersion: model})
      if (fault === 'cut') return cut(res)
      for (const p of parts.filter((x) => x.functionCall)) s.send(null, {candidates: [{content: {parts: [p], role: 'model'}, index: 0}], modelVersion: model})
    }
    if (fault === 'stream-error') {
      s.send(null, {error: {code: 503, message: 'The model is overloaded. Please try again later.', status: 'UNAVAILABLE'}})
      return s.end()
    }
    s.send(null, {candidates: [{content: {parts: [], role: 'model'}, finishReason, index: 0}], modelVersion: model, usageMetadata})
    s.end()
  }
  return startFake(
    options,
    (method, path) => (method === 'POST' && /^\/v1(beta)?\/models\/[^/]+:(stream)?[gG]enerateContent$/.test(path) ? generate : undefined),
    (res) => error(res, 400, 'API key not valid. Please pass a valid API key.'),
  )
}

const STATUSES: Record<number, string> = {400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND', 429: 'RESOURCE_EXHAUSTED', 500: 'INTERNAL', 503: 'UNAVAILABLE'}

/** An error in Google's shape: `{error: {code, message, status}}`. */
function error(res: ServerResponse, code: number, message?: string): void {
  const status = STATUSES[code] ?? 'INTERNAL'
  res.writeHead(code, {'content-type': 'application/json'}).end(JSON.stringify({error: {code, message: message ?? `fake ${status}`, status}}))
}

interface Part {
  functionCall?: {args?: unknown; id?: string; name: string}
  functionResponse?: {id?: string; name: string; response?: Record<string, unknown>}
  text?: string
}

interface GeminiRequest {
  contents: Array<{parts: Part[]; role?: string}>
  systemInstruction?: {parts?: Part[]} | string
  tools?: Array<{functionDeclarations?: Array<{name: string}>}>
}

function toBrain(b: GeminiRequest, model: string): BrainRequest {
  const system = typeof b.systemInstruction === 'string' ? b.systemInstruction : (b.systemInstruction?.parts ?? []).map((p) => p.text ?? '').join('\n')
  // Gemini ids are optional: calls and responses pair up by name, in order.
  const open = new Map<string, string[]>()
  let n = 0
  const turns: BrainTurn[] = b.contents.map((c) => {
    const calls = c.parts
      .filter((p) => p.functionCall)
      .map((p) => {
        const id = p.functionCall?.id ?? `g${++n}`
        const name = String(p.functionCall?.name)
        open.set(name, [...(open.get(name) ?? []), id])
        return {id, input: p.functionCall?.args, name}
      })
    const results = c.parts
      .filter((p) => p.functionResponse)
      .map((p) => {
        const fr = p.functionResponse as NonNullable<Part['functionResponse']>
        const queue = open.get(fr.name) ?? []
        const id = fr.id ?? queue.shift() ?? `g${++n}`
        if (fr.id) open.set(fr.name, queue.filter((x) => x !== fr.id))
        const r = fr.response ?? {}
        const isError = 'error' in r
        const value = isError ? r.error : 'output' in r ? r.output : r
        return {content: typeof value === 'string' ? value : JSON.stringify(value), id, isError}
      })
    return {calls, results, role: c.role === 'model' ? 'assistant' : 'user', text: c.parts.map((p) => p.text ?? '').join('')}
  })
  const tools = (b.tools ?? []).flatMap((t) => (t.functionDeclarations ?? []).map((f) => f.name))
  return {model, system, tools, turns}
}
