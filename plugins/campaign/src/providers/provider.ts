import type {ToolResult} from '../tools/call.js'
import type {MissionKind, ToolSpec} from '../tools/registry.js'
import type {Usage} from '../types.js'

/**
 * One mission attempt as a provider sees it. API providers run a tool-use loop: send `prompt`
 * and `tools`, call `call` for each tool use, feed the results back, report `usage` after every
 * model response, and `transcript` every message. Agent CLIs start a subprocess that reaches the
 * same `call` (through an MCP server the engine exposes) and write their raw stream to
 * `transcriptFile('.cli.jsonl')`. Either way the mission ends when the model calls `finish`.
 */
export interface MissionSession {
  /** Runs a tool; a refusal comes back as `{ok: false, error}` for the model to read. */
  call(name: string, input: unknown): Promise<ToolResult>
  /** Whether `finish` has succeeded. */
  finished(): boolean
  readonly kind: MissionKind
  readonly maxTurns: number
  readonly mission: string
  /** The task: what the mission must achieve, in plain words, for a system or user message. */
  readonly prompt: string
  /** The slug of the campaign of a `campaign:<slug>` mission; null for `plan`. */
  readonly slug: null | string
  /** Aborted when the run is interrupted. */
  readonly signal: AbortSignal
  /** Text the model sent with a response: an `agent_text` event. */
  text(text: string): void
  readonly tools: readonly ToolSpec[]
  /** Appends one message to `transcripts/<mission>.jsonl`. */
  transcript(message: unknown): void
  /** Path of this mission's transcript with the given suffix, `:` turned into `-`. */
  transcriptFile(suffix: '.cli.jsonl' | '.jsonl'): string
  /** After every model response: a `usage` event, added to the mission's usage. */
  usage(usage: Usage): void
  /** False once the run's reported cost reached `--max-cost`: start no new model request. */
  budgetLeft(): boolean
}

export interface Provider {
  /**
   * The endpoint given by flag or configuration, recorded in run.json so `--resume` reaches the
   * same server; null when none was (the vendor's default, or its variable, read again on resume).
   */
  readonly baseUrl?: null | string
  /** The model name for run.json; null when the provider has none. */
  readonly model: null | string
  readonly name: string
  /** Drives one attempt. Throwing fails the attempt with the error's message as the reason. */
  runMission(session: MissionSession): Promise<void>
}

export interface ProviderOptions {
  /** API providers: the endpoint (flag, config or the vendor's variable); null for the default. */
  baseUrl?: null | string
  maxTurns: number
  model: null | string
}

export type ProviderFactory = (options: ProviderOptions) => Provider
