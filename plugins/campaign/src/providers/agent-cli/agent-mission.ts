import {mkdirSync, mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import type {MissionSession} from '../provider.js'
import {type CliExit, redact, runCli, tail} from './cli-process.js'
import {type MissionMcpServer, startMissionMcpServer} from './mcp-server.js'

/** How one agent CLI is started for a mission and how its stream is read. */
export interface AgentLaunch {
  args: string[]
  env: NodeJS.ProcessEnv
  /** Values to keep out of error messages, besides the MCP token. */
  secrets: string[]
}

export interface AgentMission {
  /** `claude`, `codex`: for messages. */
  cli: string
  /** The arguments and environment, given the mission's MCP server and a private scratch folder. */
  launch(server: MissionMcpServer, scratch: string): AgentLaunch
  /** One JSON line of the CLI's stream; returns a failure reason when the line reports one, which also stops the CLI. */
  onEvent(event: Record<string, unknown>): null | string | void
  path: string
  /** Parent of the scratch folder (codex warns about a home under /tmp). */
  scratchBase?: string
}

const DEFAULT_TIMEOUT_MS = 30 * 60_000

/** How long one mission's CLI may run: `TOOLKIT_CAMPAIGN_AGENT_TIMEOUT_MS`, default 30 minutes. */
export function agentTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  const v = Number(env.TOOLKIT_CAMPAIGN_AGENT_TIMEOUT_MS)
  return Number.isFinite(v) && v > 0 ? v : DEFAULT_TIMEOUT_MS
}

/**
 * One mission through an agent CLI: a loopback MCP server with the mission's tools, a private
 * scratch folder (the CLI's working directory and, when isolated, its home), the CLI run to its
 * end, and everything closed and removed afterwards, whatever happened.
 */
export async function runAgentMission(session: MissionSession, agent: AgentMission): Promise<void> {
  // A CLI runs a whole mission on its own; --max-cost can only keep the next one from starting.
  if (!session.budgetLeft()) throw new Error('the run reached --max-cost before this mission started')
  let failure: null | string = null
  const stop = new AbortController()
  // The engine refuses calls past --max-turns, but a CLI would go on asking until its own limit:
  // the first call past it ends the mission.
  let calls = 0
  const server = await startMissionMcpServer({
    ...session,
    call(name, input) {
      if (++calls > session.maxTurns && failure === null) {
        failure = `the model did not call finish within ${session.maxTurns} tool calls (--max-turns)`
        stop.abort()
      }
      return session.call(name, input)
    },
  })
  const base = agent.scratchBase ?? tmpdir()
  mkdirSync(base, {recursive: true})
  const scratch = mkdtempSync(join(base, `toolkit-${agent.cli}-`))
  let exit: CliExit
  try {
    const launch = agent.launch(server, scratch)
    const work = join(scratch, 'work')
    mkdirSync(work, {recursive: true})
    exit = await runCli({
      args: launch.args,
      cwd: work,
      env: launch.env,
      onEvent(event) {
        const reason = agent.onEvent(event)
        if (typeof reason !== 'string' || failure !== null) return
        failure = redact(reason, [server.token, ...launch.secrets])
        stop.abort()
      },
      path: agent.path,
      secrets: [server.token, ...launch.secrets],
      signal: AbortSignal.any([session.signal, stop.signal]),
      timeoutMs: agentTimeoutMs(),
      transcriptFile: session.transcriptFile('.cli.jsonl'),
    })
  } finally {
    await server.close()
    rmSync(scratch, {force: true, recursive: true})
  }
  if (session.signal.aborted) throw new Error('interrupted')
  // The work is saved by the time `finish` succeeded; a complaint after it loses nothing.
  if (session.finished()) return
  if (exit.timedOut) throw new Error(`${agent.cli} did not end within ${Math.round(agentTimeoutMs() / 1000)} s (TOOLKIT_CAMPAIGN_AGENT_TIMEOUT_MS); it was stopped`)
  if (failure !== null) throw new Error(`${agent.cli}: ${failure}`)
  if (exit.code !== 0) throw new Error(`${agent.cli} exited with ${exit.code ?? 'a signal'}${exit.stderr ? `: ${tail(exit.stderr)}` : ''}`)
}
