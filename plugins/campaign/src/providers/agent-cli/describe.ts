import {type CliSpec, probeCliAsync, type QuickRun, runQuick} from './cli-check.js'
import {CLAUDE, CLAUDE_ENV_CREDENTIALS, CLAUDE_LOGIN_STATUS, CLAUDE_NOT_LOGGED_IN, claudeLoggedIn} from './claude.js'
import {CODEX, CODEX_LOGIN_STATUS, CODEX_NOT_LOGGED_IN} from './codex.js'

/** An agent CLI's row in `campaign providers` (the shape of the API providers' rows). */
export interface AgentCliDescription {
  base_url: null | string
  /** Null: the CLI's own default model. */
  default_model: null | string
  detail: string
  kind: 'agent-cli'
  name: 'claude' | 'codex'
  usable: boolean
  /** The CLI's version, null when it was not found. */
  version: null | string
}

interface Agent {
  baseUrl: string
  /** The credential in the environment, if any: checking a stored login costs seconds. */
  envCredential(env: NodeJS.ProcessEnv): string | undefined
  loggedIn(run: QuickRun): boolean
  loginStatus: string[]
  notLoggedIn: string
  spec: CliSpec
}

const AGENTS: Record<'claude' | 'codex', Agent> = {
  claude: {
    baseUrl: 'ANTHROPIC_BASE_URL',
    envCredential: (env) => CLAUDE_ENV_CREDENTIALS.find((v) => (env[v] ?? '') !== ''),
    loggedIn: claudeLoggedIn,
    loginStatus: CLAUDE_LOGIN_STATUS,
    notLoggedIn: CLAUDE_NOT_LOGGED_IN,
    spec: CLAUDE,
  },
  codex: {
    baseUrl: 'OPENAI_BASE_URL',
    envCredential: (env) => ['OPENAI_API_KEY', 'CODEX_API_KEY', 'OPENAI_BASE_URL'].find((v) => (env[v] ?? '') !== ''),
    loggedIn: (run) => run.status === 0,
    loginStatus: CODEX_LOGIN_STATUS,
    notLoggedIn: CODEX_NOT_LOGGED_IN,
    spec: CODEX,
  },
}

/**
 * Whether an agent CLI can run missions now: found on PATH, of a supported version, with
 * credentials in the environment, or (with `check`) a stored login the CLI confirms.
 */
export async function describeAgentCli(name: 'claude' | 'codex', o: {check: boolean; model: null | string}, env: NodeJS.ProcessEnv = process.env): Promise<AgentCliDescription> {
  const agent = AGENTS[name]
  // Asynchronous: the providers command checks API endpoints at the same time.
  const probe = await probeCliAsync(agent.spec, env)
  const row: AgentCliDescription = {base_url: env[agent.baseUrl] || null, default_model: o.model, detail: '', kind: 'agent-cli', name, usable: false, version: probe.found?.version ?? null}
  if (!probe.ok) return {...row, detail: probe.problem}
  const found = `${name} ${probe.found.version}`
  const variable = agent.envCredential(env)
  if (variable !== undefined) return {...row, detail: `${found}; ${variable} is set`, usable: true}
  if (!o.check) return {...row, detail: `${found}; no key set, stored login not checked (give --check)`, usable: true}
  if (agent.loggedIn(await runQuick(probe.found.path, agent.loginStatus, env))) return {...row, detail: `${found}; logged in`, usable: true}
  return {...row, detail: `${found}; ${agent.notLoggedIn}`}
}
