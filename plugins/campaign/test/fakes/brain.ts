import {createLocalProvider} from '../../src/providers/local/provider.js'
import type {MissionSession} from '../../src/providers/provider.js'
import type {ToolResult} from '../../src/tools/call.js'

/**
 * A scripted "model" behind the loopback API fakes, vendor-neutral: each wire fake turns its
 * request into a `BrainRequest` and its reply into that vendor's response format.
 *
 * It decides like a model: it reads the tool list (the mission kind is whichever mission tools
 * are offered, with or without an MCP prefix such as `mcp__campaign__`), and the conversation so
 * far with the tool results, and answers with text and the next tool call. The decisions are the
 * offline planner's, replayed over the conversation: every earlier call is answered from its
 * result in the conversation, and the first call without one is the next to make. So it knows
 * only what the tools told it. It makes one wrong call per mission that the engine refuses
 * (`finish` too early, an ad group that is not in the plan) and then does it right.
 */
export interface BrainCall {
  id: string
  input: unknown
  name: string
}

export interface BrainResult {
  /** The result as the provider sent it: the JSON of the tool's result, or the refusal's text. */
  content: string
  id: string
  isError: boolean
}

export interface BrainTurn {
  /** Assistant turns: the tool calls made. */
  calls: BrainCall[]
  /** User turns: results of earlier calls. */
  results: BrainResult[]
  role: 'assistant' | 'user'
  text: string
}

export interface BrainRequest {
  model: string
  system: string
  tools: string[]
  turns: BrainTurn[]
}

export interface BrainReply {
  calls: Array<{input: unknown; name: string}>
  text: string
}

export type Brain = (request: BrainRequest) => BrainReply | Promise<BrainReply>

export interface BrainOptions {
  /** Make one refused call per mission first (default true). */
  mistakes?: boolean
  /** Never call finish: keeps reading (for --max-turns). */
  neverFinish?: boolean
}

class Pending extends Error {
  constructor(
    readonly tool: string,
    readonly input: unknown,
    readonly texts: string[],
  ) {
    super('pending')
  }
}

const PLAN_TOOL = 'set_account_plan'
/** Tools whose results the model reads to decide what to do next. */
const READS = /^(get_|query_|validate$)/
const CAMPAIGN_TOOL = 'get_brief'

/** The mission tool name without an MCP prefix (`mcp__server__tool`, `server__tool`). */
export function bareName(name: string): string {
  const i = name.lastIndexOf('__')
  return i === -1 ? name : name.slice(i + 2)
}

export function createBrain(options: BrainOptions = {}): Brain {
  const mistakes = options.mistakes ?? true
  return async (request) => {
    const full = new Map(request.tools.map((t) => [bareName(t), t]))
    const kind = full.has(PLAN_TOOL) ? 'plan' : full.has(CAMPAIGN_TOOL) ? 'campaign' : null
    // A request without mission tools (an agent CLI's own side requests): answer briefly.
    if (kind === null) return {calls: [], text: 'OK.'}
    const named = (name: string, input: unknown) => ({input, name: full.get(name) ?? name})
    if (options.neverFinish) return {calls: [named(kind === 'plan' ? 'get_business' : 'get_brief', {})], text: 'Let me look again.'}

    const results = new Map<string, BrainResult>()
    for (const t of request.turns) for (const r of t.results) results.set(r.id, r)
    const answered: Array<{input: string; name: string; result: unknown; used: boolean}> = []
    let refused = false
    for (const t of request.turns) {
      for (const c of t.calls) {
        const r = results.get(c.id)
        if (!r) continue
        const result = readResult(r)
        if (result === REFUSED) {
          refused = true
          continue
        }
        // Trimmed from the context or not JSON: a read has to be made again; a write is
        // remembered as done (its result says nothing the model needs).
        if (result === UNREADABLE && READS.test(bareName(c.name))) continue
        answered.push({input: JSON.stringify(c.input ?? {}), name: bareName(c.name), result: result === UNREADABLE ? null : result, used: false})
      }
    }

    let texts: string[] = []
    const session: MissionSession = {
      async call(name: string, input: unknown): Promise<ToolResult> {
        const key = JSON.stringify(input ?? {})
        const hit = answered.find((a) => !a.used && a.name === name && a.input === key)
        if (!hit) throw new Pending(name, input, texts)
        hit.used = true
        texts = []
        return {ok: true, result: hit.result}
      },
      finished: () => false,
      kind,
      maxTurns: 1000,
      mission: kind,
      prompt: request.system,
      signal: new AbortController().signal,
      slug: null,
      text(text: string) {
        texts.push(text)
      },
      tools: [],
      transcript() {},
      transcriptFile: () => '',
      usage() {},
      budgetLeft: () => true,
    }
    try {
      await createLocalProvider({maxTurns: 1000, model: null}).runMission(session)
    } catch (error) {
      if (!(error instanceof Pending)) throw error
      const text = error.texts.join('\n') || `Next: ${error.tool}.`
      if (mistakes && !refused) {
        if (error.tool === PLAN_TOOL || error.tool === 'set_assets') return {calls: [named('finish', {summary: 'done'})], text: 'I think the plan is complete.'}
        if (error.tool === 'upsert_ad_group') {
          const input = {...(error.input as Record<string, unknown>)}
          input.name = `${String(input.name)} Extra`
          return {calls: [named(error.tool, input)], text}
        }
      }
      return {calls: [named(error.tool, error.input)], text}
    }
    return {calls: [], text: 'The mission is finished.'}
  }
}

const REFUSED = Symbol('refused')
const UNREADABLE = Symbol('unreadable')

/**
 * A tool result as a model reads it. Refusals are flagged (`is_error`), or, in wire formats
 * without a flag, text starting with "Error" or a JSON object with `ok: false` / `isError: true`.
 * An MCP result (`{content: [{type: "text", text}]}`) is read through to its text.
 */
function readResult(r: BrainResult): typeof REFUSED | typeof UNREADABLE | unknown {
  if (r.isError || /^\s*(error|refused)\b/i.test(r.content)) return REFUSED
  let value: unknown
  try {
    value = JSON.parse(r.content)
  } catch {
    return UNREADABLE
  }
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const v = value as Record<string, unknown>
    if (v.ok === false || v.isError === true) return REFUSED
    if (v.ok === true && 'result' in v) return v.result
    if (Array.isArray(v.content) && Object.keys(v).every((k) => ['content', 'isError', 'structuredContent'].includes(k))) {
      return readResult({...r, content: (v.content as Array<{text?: string}>).map((x) => x.text ?? '').join('')})
    }
  }
  return value
}
