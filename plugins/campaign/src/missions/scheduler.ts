import {appendFileSync, mkdirSync} from 'node:fs'
import {join} from 'node:path'

import type {Provider} from '../providers/provider.js'
import type {EventLog} from '../run/events.js'
import {callTool} from '../tools/call.js'
import {type MissionKind, toolsFor, toolSpecs} from '../tools/registry.js'
import type {ToolContext} from '../tools/tool.js'
import type {MissionState, Workspace} from '../types.js'
import {isPermanent} from './failure.js'
import {missionPrompt} from './prompts.js'

export interface SchedulerOptions {
  events: EventLog
  /** Attempts per mission, the first included. */
  maxAttempts: number
  /** Stop starting model requests and missions once the cost reported in this process reaches it. */
  maxCostUsd?: null | number
  maxTurns: number
  parallel: number
  provider: Provider
  runDir: string
  /** Saves workspace.json; tool calls and mission state changes wait for it. */
  save: () => Promise<void> | void
  signal: AbortSignal
  ws: Workspace
}

export function transcriptName(mission: string, suffix: string): string {
  return `${mission.replaceAll(':', '-')}${suffix}`
}

export function isDone(state: MissionState | undefined): boolean {
  return state?.status === 'finished'
}

/**
 * Runs `plan` (unless it already finished), then every unfinished `campaign:<slug>` mission,
 * at most `parallel` at a time. A mission that was `running` when a previous process died is
 * simply unfinished and starts again; tools are idempotent upserts, so nothing is doubled.
 */
export async function runMissions(o: SchedulerOptions): Promise<void> {
  const budget = {limit: o.maxCostUsd ?? null, spent: 0}
  const left = () => budget.limit === null || budget.spent < budget.limit
  const run = (id: string) => runMission(o, id, budget, left)
  o.ws.missions.plan ??= newState()
  if (!isDone(o.ws.missions.plan)) {
    await run('plan')
    if (!isDone(o.ws.missions.plan)) return
  }
  const queue = Object.keys(o.ws.missions).filter((id) => id.startsWith('campaign:') && !isDone(o.ws.missions[id]))
  const workers = Array.from({length: Math.max(1, Math.min(o.parallel, queue.length))}, async () => {
    for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
      if (o.signal.aborted || !left()) return
      await run(id)
    }
  })
  await Promise.all(workers)
}

function newState(): MissionState {
  return {attempts: 0, status: 'pending', usage: {cost_usd: null, input_tokens: 0, output_tokens: 0}}
}

async function runMission(o: SchedulerOptions, mission: string, budget: {spent: number}, left: () => boolean): Promise<void> {
  const kind: MissionKind = mission === 'plan' ? 'plan' : 'campaign'
  const slug = kind === 'plan' ? null : mission.slice('campaign:'.length)
  const tools = toolsFor(kind)
  mkdirSync(join(o.runDir, 'transcripts'), {recursive: true})
  let reason: null | string = null
  let permanent = false
  for (let attempt = 1; attempt <= o.maxAttempts; attempt++) {
    if (o.signal.aborted || !left()) return
    const state = o.ws.missions[mission]
    state.attempts++
    state.status = 'running'
    await o.save()
    o.events.emit({attempt: state.attempts, mission, type: 'mission_started'})
    const ctx: ToolContext = {finished: false, mission, slug, ws: o.ws}
    let turns = 0
    try {
      await o.provider.runMission({
        budgetLeft: left,
        async call(name, input) {
          if (++turns > o.maxTurns) {
            const error = `the mission used its ${o.maxTurns} tool calls (--max-turns)`
            o.events.emit({mission, summary: name, tool: name, type: 'tool_called'})
            o.events.emit({mission, ok: false, summary: error, tool: name, type: 'tool_finished'})
            return {error, ok: false}
          }
          return callTool(tools, ctx, o.events, o.save, name, input)
        },
        finished: () => ctx.finished,
        kind,
        maxTurns: o.maxTurns,
        mission,
        prompt: missionPrompt(o.ws, kind, slug),
        signal: o.signal,
        slug,
        text: (text) => o.events.emit({mission, text, type: 'agent_text'}),
        tools: toolSpecs(kind),
        transcript(message) {
          appendFileSync(join(o.runDir, 'transcripts', transcriptName(mission, '.jsonl')), `${JSON.stringify(message)}\n`)
        },
        transcriptFile: (suffix) => join(o.runDir, 'transcripts', transcriptName(mission, suffix)),
        usage(u) {
          const s = o.ws.missions[mission].usage
          s.input_tokens += u.input_tokens
          s.output_tokens += u.output_tokens
          if (u.cost_usd !== null) {
            s.cost_usd = (s.cost_usd ?? 0) + u.cost_usd
            budget.spent += u.cost_usd
          }
          o.events.emit({cost_usd: u.cost_usd, input_tokens: u.input_tokens, mission, output_tokens: u.output_tokens, type: 'usage'})
        },
      })
      reason = ctx.finished ? null : 'the provider ended the mission without calling finish'
    } catch (error) {
      reason = o.signal.aborted ? 'interrupted' : (error as Error).message || String(error)
      permanent = !o.signal.aborted && isPermanent(error)
    }
    const current = o.ws.missions[mission]
    current.status = reason === null ? 'finished' : {failed: permanent ? {reason, retry: false} : {reason}}
    await o.save()
    o.events.emit({mission, ok: reason === null, reason, type: 'mission_finished'})
    if (reason === null || permanent) return
  }
}
