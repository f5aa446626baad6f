import {createLocalProvider} from '../../src/providers/local/provider.js'
import type {MissionSession} from '../../src/providers/provider.js'
import type {ToolResult} from '../../src/tools/call.js'

/** What the model does next: call one tool (with text said first), or end its turn with text. */
export type Action = {id: string; input: unknown; name: string; text: string; type: 'tool'} | {text: string; type: 'end'}

export interface ToolOutcome {
  id: string
  isError: boolean
  text: string
}

interface Conversation {
  /** The next action, taken from the queue or awaited. */
  next(): Promise<Action>
  pending: null | {id: string; resolve: (r: ToolResult) => void}
  push(action: Action): void
  text: string[]
}

/**
 * A scripted model for the loopback API fakes. It plays the offline planner as a puppet: every
 * tool call the planner makes becomes a tool-use block in a streamed model response, and the
 * planner's call resolves only when the CLI sends the tool's result back in its next request,
 * so every effect reaches the engine through the CLI's own MCP client. A campaign mission starts
 * with a call the engine refuses (an ad group without keywords), which the planner then fixes.
 * Conversations are told apart by the mission prompt in their first user message.
 */
export class PuppetBrain {
  /** The tool results the CLIs sent back, in order, for assertions. */
  readonly outcomes: ToolOutcome[] = []
  private readonly conversations = new Map<string, Conversation>()
  private ids = 0

  /** The next action of the conversation whose mission prompt is `prompt`. */
  async step(prompt: string, outcome: null | ToolOutcome): Promise<Action> {
    let conv = this.conversations.get(prompt)
    if (outcome === null || conv === undefined) {
      conv = this.start(prompt)
      this.conversations.set(prompt, conv)
    } else if (conv.pending?.id === outcome.id) {
      this.outcomes.push(outcome)
      const {resolve} = conv.pending
      conv.pending = null
      resolve(parse(outcome))
    }
    return conv.next()
  }

  private start(prompt: string): Conversation {
    const queue: Action[] = []
    let waiter: ((a: Action) => void) | null = null
    const conv: Conversation = {
      next() {
        const ready = queue.shift()
        return ready ? Promise.resolve(ready) : new Promise<Action>((resolve) => {
          waiter = resolve
        })
      },
      pending: null,
      push(action) {
        const w = waiter
        waiter = null
        if (w) w(action)
        else queue.push(action)
      },
      text: [],
    }
    const call = (name: string, input: unknown) =>
      new Promise<ToolResult>((resolve) => {
        const id = `call_${++this.ids}`
        conv.pending = {id, resolve}
        conv.push({id, input, name, text: conv.text.splice(0).join('\n'), type: 'tool'})
      })
    const kind = /^You plan/.test(prompt) ? 'plan' : 'campaign'
    const session = {
      call,
      finished: () => false,
      kind,
      maxTurns: 200,
      mission: kind,
      prompt,
      signal: new AbortController().signal,
      slug: null,
      text: (t: string) => conv.text.push(t),
      tools: [],
      transcript() {},
      transcriptFile: () => '',
      usage() {},
    } satisfies MissionSession
    const run = async () => {
      if (kind === 'campaign') {
        const refused = await call('upsert_ad_group', {name: 'Incomplete'})
        if (refused.ok) throw new Error('the engine accepted an ad group without keywords')
        conv.text.push('That ad group was incomplete; building the planned ones.')
      }
      await createLocalProvider({maxTurns: 200, model: null}).runMission(session)
    }
    run().then(
      () => conv.push({text: [...conv.text.splice(0), 'Mission complete.'].join('\n'), type: 'end'}),
      (error: unknown) => conv.push({text: `I could not finish: ${(error as Error).message}`, type: 'end'}),
    )
    return conv
  }
}

/** The mission's prompt: the user text that starts like one of the engine's mission prompts. */
export function missionPromptIn(texts: string[]): null | string {
  for (const t of texts) {
    const at = t.search(/You (plan a Google Ads account|build the campaign ")/)
    if (at >= 0) return t.slice(at).trim()
  }
  return null
}

function parse(outcome: ToolOutcome): ToolResult {
  if (outcome.isError) return {error: outcome.text, ok: false}
  try {
    return {ok: true, result: JSON.parse(outcome.text) as unknown}
  } catch {
    return {error: outcome.text, ok: false}
  }
}
