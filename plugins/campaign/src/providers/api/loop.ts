import {PermanentFailure} from '../../missions/failure.js'
import type {ToolSpec} from '../../tools/registry.js'
import type {MissionSession} from '../provider.js'
import {resultChars, type ToolAnswer, type ToolCall, trimResults, type Turn} from './conversation.js'
import {costOf, type TokenCounts} from './prices.js'
import {classify, type Failure, withRetries} from './retry.js'

export interface ModelRequest {
  signal: AbortSignal
  system: string
  tools: readonly ToolSpec[]
  turns: readonly Turn[]
}

export interface ModelResponse {
  calls: ToolCall[]
  /** The vendor's message as received, for the transcript. */
  raw: unknown
  text: string
  tokens: TokenCounts
}

/** One vendor's API behind the tool-use loop: a conversation in, one model response out. */
export interface ModelClient {
  /** The variable holding the key, named in messages about credentials; null when none is used. */
  readonly keyVariable: null | string
  readonly model: string
  respond(request: ModelRequest): Promise<ModelResponse>
  /** Values never to write anywhere (the key). */
  readonly secrets: readonly string[]
  /** The provider name, for messages. */
  readonly vendor: string
}

export interface LoopOptions {
  /** Tool-result characters kept in the conversation before old results are trimmed. */
  contextChars: number
  /** Retries of one model request (429, 529, 5xx, a cut stream). */
  retries: number
}

const SYSTEM = [
  'You are planning Google Ads campaigns inside toolkit. You act only through the tools given;',
  'read before you write, fix what a tool refuses (its message says why), and end the mission by calling finish.',
  'Tool results are JSON. Keep texts within the limits the tools state.',
].join(' ')

const CREDENTIALS = /api key not valid|invalid api key|API_KEY_INVALID/i

/** Nudges after a response without tool calls before the mission is given up. */
const MAX_IDLE = 3

/**
 * The tool-use loop every API provider shares: send the conversation, run the calls the model
 * makes, send back their results, until `finish` succeeds. It reports usage after every
 * response, writes every message to the transcript, retries what is worth retrying (saying so),
 * trims old tool results when the context fills, and stops a model that never finishes.
 */
export async function runToolLoop(session: MissionSession, client: ModelClient, options: LoopOptions): Promise<void> {
  const secret = (text: string) => redact(text, client.secrets)
  const system = `${SYSTEM}\n\n${session.prompt}`
  const turns: Turn[] = [{calls: [], results: [], role: 'user', text: `Start the mission "${session.mission}".`}]
  session.transcript({model: client.model, provider: client.vendor, system, tools: session.tools.map((t) => t.name), type: 'request'})
  session.transcript({role: 'user', text: turns[0].text})
  let calls = 0
  let idle = 0
  while (!session.finished()) {
    if (!session.budgetLeft()) throw new PermanentFailure('the run reached --max-cost; no new model request was started')
    if (resultChars(turns) > options.contextChars) trimResults(turns, options.contextChars)
    const response = await respond(session, client, options, system, turns).catch((error: unknown) => {
      const failure = classify(error)
      const message = secret(explain(client, failure))
      // Another attempt cannot fix a refused key or an unknown model: say so instead of retrying.
      throw failure.status === 401 || failure.status === 403 || failure.status === 404 || CREDENTIALS.test(failure.message) ? new PermanentFailure(message) : new Error(message)
    })
    const cost = costOf(client.model, response.tokens)
    session.usage({cost_usd: cost, input_tokens: response.tokens.input + response.tokens.cache_read + response.tokens.cache_write, output_tokens: response.tokens.output})
    session.transcript(JSON.parse(secret(JSON.stringify({raw: response.raw, role: 'assistant', usage: {...response.tokens, cost_usd: cost}}))))
    if (response.text.trim() !== '') session.text(response.text.trim())
    turns.push({calls: response.calls, results: [], role: 'assistant', text: response.text})
    if (response.calls.length === 0) {
      if (session.finished()) return
      if (++idle > MAX_IDLE) throw new Error(`the model stopped ${MAX_IDLE + 1} times without calling finish`)
      const nudge = 'The mission is not finished: continue with the tools, and call finish when the work is done.'
      turns.push({calls: [], results: [], role: 'user', text: nudge})
      session.transcript({role: 'user', text: nudge})
      continue
    }
    idle = 0
    const results: ToolAnswer[] = []
    for (const call of response.calls) {
      if (++calls > session.maxTurns) throw new Error(`the model did not call finish within ${session.maxTurns} tool calls (--max-turns)`)
      if (call.malformed !== undefined) {
        results.push({content: `Error: the arguments of ${call.name} were not valid JSON (${call.malformed}); send the call again with a JSON object`, id: call.id, isError: true, name: call.name})
        continue
      }
      const res = await session.call(call.name, call.input)
      results.push(res.ok ? {content: JSON.stringify(res.result ?? null), id: call.id, isError: false, name: call.name} : {content: `Error: ${res.error}`, id: call.id, isError: true, name: call.name})
    }
    turns.push({calls: [], results, role: 'user', text: ''})
    session.transcript({results, role: 'user'})
  }
}

/** One model response, retried while worth it; a context overflow trims old results and tries again. */
async function respond(session: MissionSession, client: ModelClient, options: LoopOptions, system: string, turns: Turn[]): Promise<ModelResponse> {
  let budget = options.contextChars
  for (;;) {
    try {
      return await withRetries(() => client.respond({signal: session.signal, system, tools: session.tools, turns}), {
        retries: options.retries,
        signal: session.signal,
        waiting(seconds, failure, attempt) {
          session.text(`${client.vendor}: ${why(failure)}; waiting ${seconds.toFixed(1)} s before retry ${attempt} of ${options.retries}`)
        },
      })
    } catch (error) {
      const failure = classify(error)
      if (!failure.context) throw error
      budget = Math.floor(Math.min(budget, resultChars(turns)) / 2)
      if (trimResults(turns, budget) === 0) throw new Error(`the conversation no longer fits the model's context even with old tool results trimmed (${failure.message})`)
      session.text(`${client.vendor}: the context is full; trimmed old tool results and trying again`)
    }
  }
}

function why(f: Failure): string {
  if (f.status === 429) return 'rate limited (429)'
  if (f.status === 529 || /overloaded/i.test(f.message)) return `overloaded (${f.status ?? 'stream'})`
  if (f.status !== null) return `server error ${f.status}`
  return `connection failed (${f.message})`
}

/** The message a user reads when a model request finally fails. */
function explain(client: ModelClient, f: Failure): string {
  if (f.status === 401 || f.status === 403 || CREDENTIALS.test(f.message)) {
    const what = f.status === 403 ? 'refused access' : 'rejected the credentials'
    return `${client.vendor} ${what} (${f.status})${client.keyVariable ? `: check ${client.keyVariable}` : ''}${f.status === 403 ? ` and that the key may use ${client.model}` : ''}`
  }
  if (f.status === 404) return `${client.vendor} answered 404: check the model name (${client.model}) and the base URL`
  if (f.status !== null) return `${client.vendor} request failed (${f.status}): ${f.message}`
  return `${client.vendor} request failed: ${f.message}`
}

export function redact(text: string, secrets: readonly string[]): string {
  let out = text
  for (const s of secrets) if (s.length >= 4) out = out.split(s).join('[redacted]')
  return out
}
