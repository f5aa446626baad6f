import {createHash} from 'node:crypto'

import {createLocalProvider} from '../../src/providers/local/provider.js'
import type {MissionSession} from '../../src/providers/provider.js'
import type {ToolResult} from '../../src/tools/call.js'
import type {MissionKind} from '../../src/tools/registry.js'

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
  // Replays suspended where they wait for a call's result, by the history they have read: the
  // next request of a conversation continues its replay instead of replaying from the start.
  const live = new Map<string, Replay>()
  return async (request) => {
    const full = new Map(request.tools.map((t) => [bareName(t), t]))
    const kind = full.has(PLAN_TOOL) ? 'plan' : full.has(CAMPAIGN_TOOL) ? 'campaign' : null
    // A request without mission tools (an agent CLI's own side requests): answer briefly.
    if (kind === null) return {calls: [], text: 'OK.'}
    const named = (name: string, input: unknown) => ({input, name: full.get(name) ?? name})
    if (options.neverFinish) return {calls: [named(kind === 'plan' ? 'get_business' : 'get_brief', {})], text: 'Let me look again.'}

    const results = new Map<string, BrainResult>()
    for (const t of request.turns) for (const r of t.results) results.set(r.id, r)
    const answered: Answer[] = []
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
        answered.push({content: r.content, input: JSON.stringify(c.input ?? {}), name: bareName(c.name), result: result === UNREADABLE ? null : result, used: false})
      }
    }

    const keys = historyKeys(kind, request.system, answered)
    let replay = live.get(keys[answered.length])
    const previous = answered.length > 0 ? live.get(keys[answered.length - 1]) : undefined
    if (!replay && previous?.pending && !previous.busy && previous.pending.name === answered.at(-1)?.name && previous.pending.input === answered.at(-1)?.input) {
      // The usual case: the newest answer is the one the suspended replay waits for.
      live.delete(keys[answered.length - 1])
      replay = previous
      await replay.answer(answered.at(-1) as Answer)
    }
    if (!replay) replay = await Replay.from(kind, request.system, answered)
    if (replay.error) throw replay.error
    if (!replay.pending) return {calls: [], text: 'The mission is finished.'}
    if (replay.consumedInOrder(answered)) {
      live.set(keys[answered.length], replay)
      if (live.size > 2000) live.delete(live.keys().next().value as string)
    }
    const {name, texts, value: input} = replay.pending
    const text = texts.join('\n') || `Next: ${name}.`
    if (mistakes && !refused) {
      if (name === PLAN_TOOL || name === 'set_assets') return {calls: [named('finish', {summary: 'done'})], text: 'I think the plan is complete.'}
      if (name === 'upsert_ad_group') {
        const wrong = {...(input as Record<string, unknown>)}
        wrong.name = `${String(wrong.name)} Extra`
        return {calls: [named(name, wrong)], text}
      }
    }
    return {calls: [named(name, input)], text}
  }
}

interface Answer {
  /** The result as sent, for the history's key. */
  content: string
  /** JSON of the call's input. */
  input: string
  name: string
  result: unknown
  used: boolean
}

/** Key of the history after 0, 1, ... n answers: each one hashes the previous key and the next answer. */
function historyKeys(kind: string, system: string, answered: Answer[]): string[] {
  const keys = [createHash('sha1').update(`${kind}\0${system}`).digest('hex')]
  for (const a of answered) keys.push(createHash('sha1').update(`${keys.at(-1)}\0${a.name}\0${a.input}\0${a.content}`).digest('hex'))
  return keys
}

/**
 * The offline planner run as a coroutine over a conversation: each call it makes is answered
 * from the conversation's results, and the first call without one suspends it (`pending`) until
 * `answer` brings that result in a later request.
 */
class Replay {
  busy = false
  error: unknown = null
  pending: null | {input: string; name: string; texts: string[]; value: unknown} = null
  private answers: Answer[] = []
  private consumed: Answer[] = []
  private resume: ((a: Answer) => void) | null = null
  private texts: string[] = []
  private wake: (() => void) | null = null

  static async from(kind: MissionKind, system: string, answered: Answer[]): Promise<Replay> {
    const r = new Replay()
    r.answers = answered.map((a) => ({...a, used: false}))
    const stopped = r.stopped()
    const session: MissionSession = {
      budgetLeft: () => true,
      call: (name, input) => r.call(name, input),
      finished: () => false,
      kind,
      maxTurns: 1000,
      mission: kind,
      prompt: system,
      signal: new AbortController().signal,
      slug: null,
      text(text: string) {
        r.texts.push(text)
      },
      tools: [],
      transcript() {},
      transcriptFile: () => '',
      usage() {},
    }
    createLocalProvider({maxTurns: 1000, model: null})
      .runMission(session)
      .then(
        () => {
          r.pending = null
          r.wake?.()
        },
        (error: unknown) => {
          r.pending = null
          r.error = error
          r.wake?.()
        },
      )
    await stopped
    return r
  }

  /** Gives the suspended call its result and runs on to the next call without one (or the end). */
  async answer(a: Answer): Promise<void> {
    const resume = this.resume
    if (!resume) return
    this.busy = true
    const stopped = this.stopped()
    this.resume = null
    this.pending = null
    resume(a)
    await stopped
    this.busy = false
  }

  /** Whether this replay read exactly these answers, in this order (so a later request extends it). */
  consumedInOrder(answered: Answer[]): boolean {
    return this.consumed.length === answered.length && this.consumed.every((a, i) => a.name === answered[i].name && a.input === answered[i].input && a.content === answered[i].content)
  }

  private async call(name: string, input: unknown): Promise<ToolResult> {
    const key = JSON.stringify(input ?? {})
    let hit = this.answers.find((a) => !a.used && a.name === name && a.input === key)
    if (!hit) {
      this.pending = {input: key, name, texts: this.texts, value: input}
      hit = await new Promise<Answer>((resolve) => {
        this.resume = resolve
        this.wake?.()
      })
    }
    hit.used = true
    this.consumed.push(hit)
    this.texts = []
    return {ok: true, result: hit.result}
  }

  /** Resolves when the planner next suspends on a call or ends. */
  private stopped(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.wake = () => {
        this.wake = null
        resolve()
      }
    })
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
    // Claude Code appends notes of its own to a tool's result for some models
    // (`<system-reminder><total_tokens>...`); a model reads past them.
    value = JSON.parse(r.content.replaceAll(/<system-reminder>[\s\S]*?<\/system-reminder>/g, ''))
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
