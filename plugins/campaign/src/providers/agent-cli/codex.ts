import {mkdirSync} from 'node:fs'
import {homedir} from 'node:os'
import {join} from 'node:path'

import {UsageError} from '@toolkit/kit'

import {costOf} from '../api/prices.js'
import type {Provider, ProviderOptions} from '../provider.js'
import {type AgentLaunch, runAgentMission} from './agent-mission.js'
import {type CliSpec, type FoundCli, requireCli, runQuickSync} from './cli-check.js'
import {MCP_SERVER_NAME} from './mcp-server.js'

export const CODEX: CliSpec = {
  command: 'codex',
  install: 'npm install -g @openai/codex',
  minVersion: '0.169.0',
  versionPattern: /codex-cli (\d+\.\d+\.\d+)/,
}

/** The model provider toolkit defines for codex when it talks to an API with a key or a base URL. */
const MODEL_PROVIDER = 'toolkit'
const TOOL_OUTPUT_TOKENS = 32_000
/** The environment variable that carries the mission's MCP bearer token to codex. */
const TOKEN_VARIABLE = 'TOOLKIT_CAMPAIGN_MCP_TOKEN'

/**
 * Where codex gets its model from. `OPENAI_BASE_URL` (any server speaking the Responses API) or an
 * API key (`OPENAI_API_KEY`, `CODEX_API_KEY`): a model provider of ours, passed with `-c`, and a
 * fresh `CODEX_HOME` per mission. Neither: the user's stored login (`codex login`), which lives in
 * the user's `CODEX_HOME` and is refreshed there; its config.toml and rules are still ignored.
 */
export type CodexAuth = {baseUrl: string; keyVariable: null | string; mode: 'api'} | {mode: 'login'}

export function codexAuth(cli: FoundCli, env: NodeJS.ProcessEnv = process.env, baseUrlOption: null | string = null): CodexAuth {
  const keyVariable = ['OPENAI_API_KEY', 'CODEX_API_KEY'].find((v) => (env[v] ?? '') !== '') ?? null
  const baseUrl = baseUrlOption || env.OPENAI_BASE_URL || ''
  if (baseUrl !== '') return {baseUrl, keyVariable, mode: 'api'}
  if (keyVariable !== null) return {baseUrl: 'https://api.openai.com/v1', keyVariable, mode: 'api'}
  if (runQuickSync(cli.path, CODEX_LOGIN_STATUS, env).status !== 0) throw new UsageError(CODEX_NOT_LOGGED_IN)
  return {mode: 'login'}
}

export const CODEX_LOGIN_STATUS = ['login', 'status']
export const CODEX_NOT_LOGGED_IN = 'codex is not logged in: set OPENAI_API_KEY, or run `codex login`'

/** A TOML string: JSON's escaping is valid TOML for a basic string. */
const toml = (s: string) => JSON.stringify(s)

/**
 * The `codex exec` command line of a mission: the JSON event stream, no user config or rules, no
 * saved session, a read-only sandbox with no approvals, every built-in tool that could run
 * commands, read files or reach the web switched off, and our MCP server as the only source of
 * tools (its token comes from an environment variable, never the command line).
 */
export function codexArgs(prompt: string, mcpUrl: string, model: null | string, auth: CodexAuth): string[] {
  const disabled = ['shell_tool', 'unified_exec', 'view_image', 'image_generation', 'multi_agent', 'goals', 'apps', 'plugins', 'browser_use', 'computer_use', 'hooks']
  const server = `mcp_servers.${MCP_SERVER_NAME}`
  return [
    'exec',
    '--json',
    '--skip-git-repo-check',
    '--ephemeral',
    '--ignore-user-config',
    '--ignore-rules',
    '--sandbox',
    'read-only',
    '-c',
    'approval_policy="never"',
    '-c',
    'web_search="disabled"',
    // A question to the user has no one to answer it in exec mode: not offered to the model.
    '-c',
    'tools.experimental_request_user_input.enabled=false',
    // Our tools answer with JSON data (a catalog page, a brief); codex's default cut (a few
    // thousand tokens) would hand the model a document with its middle missing.
    '-c',
    `tool_output_token_limit=${TOOL_OUTPUT_TOKENS}`,
    ...disabled.flatMap((f) => ['--disable', f]),
    '-c',
    `${server}.url=${toml(mcpUrl)}`,
    '-c',
    `${server}.bearer_token_env_var=${toml(TOKEN_VARIABLE)}`,
    '-c',
    `${server}.default_tools_approval_mode="approve"`,
    // Without these codex may start the first turn before our tools are listed (a loaded
    // machine), and the model then works without them; a server that cannot start is an error.
    '-c',
    `${server}.required=true`,
    '-c',
    `${server}.startup_readiness="catalog"`,
    ...(auth.mode === 'api'
      ? ['-c', `model_provider=${toml(MODEL_PROVIDER)}`, '-c', `model_providers.${MODEL_PROVIDER}={name=${toml(MODEL_PROVIDER)},base_url=${toml(auth.baseUrl)},wire_api="responses"${auth.keyVariable === null ? '' : `,env_key=${toml(auth.keyVariable)}`}}`]
      : []),
    ...(model === null ? [] : ['--model', model]),
    prompt,
  ]
}

// generate checks the provider before it makes a run directory and again when missions start.
const checked = new Map<string, {auth: CodexAuth; cli: FoundCli}>()

export function createCodexProvider(options: ProviderOptions): Provider {
  const key = [process.env.PATH, options.baseUrl || process.env.OPENAI_BASE_URL, Boolean(process.env.OPENAI_API_KEY), Boolean(process.env.CODEX_API_KEY)].join('\0')
  const check = checked.get(key) ?? (() => {
    const cli = requireCli(CODEX)
    return {auth: codexAuth(cli, process.env, options.baseUrl ?? null), cli}
  })()
  checked.set(key, check)
  const {auth, cli} = check
  return {
    baseUrl: options.baseUrl || null,
    model: options.model,
    name: 'codex',
    runMission(session) {
      let lastError: null | string = null
      return runAgentMission(session, {
        cli: 'codex',
        launch(server, scratch): AgentLaunch {
          const env: NodeJS.ProcessEnv = {...process.env, [TOKEN_VARIABLE]: server.token}
          if (auth.mode === 'api') {
            env.CODEX_HOME = join(scratch, 'codex-home')
            mkdirSync(env.CODEX_HOME, {recursive: true})
          }
          return {args: codexArgs(session.prompt, server.url, options.model, auth), env, secrets: [process.env.OPENAI_API_KEY ?? '', process.env.CODEX_API_KEY ?? '']}
        },
        onEvent(event) {
          switch (event.type) {
            case 'item.completed': {
              const item = event.item as {text?: unknown; type?: unknown} | undefined
              if (item?.type === 'agent_message' && typeof item.text === 'string' && item.text.trim() !== '') session.text(item.text)
              return
            }
            case 'turn.completed': {
              const u = (event.usage ?? {}) as Record<string, unknown>
              const n = (k: string) => (typeof u[k] === 'number' ? (u[k] as number) : 0)
              // codex reports tokens, not money: the cost is ours, from the price table, as for the
              // API providers (null for a model not in it, or codex's own default model, unnamed).
              // Its input_tokens include the cached ones, as OpenAI's usage does.
              const cached = Math.min(n('cached_input_tokens'), n('input_tokens'))
              const cost = options.model === null ? null : costOf(options.model, {cache_read: cached, cache_write: 0, input: n('input_tokens') - cached, output: n('output_tokens')})
              session.usage({cost_usd: cost, input_tokens: n('input_tokens'), output_tokens: n('output_tokens')})
              lastError = null
              return
            }
            case 'turn.failed': {
              const message = (event.error as {message?: unknown} | undefined)?.message
              return typeof message === 'string' ? message : lastError ?? 'the turn failed'
            }
            case 'error': {
              // Also sent for a retry in progress ("Reconnecting..."): a failure only if the turn fails.
              if (typeof event.message === 'string') lastError = event.message
              return
            }
            default:
          }
        },
        path: cli.path,
        // codex refuses to put its helper binaries under /tmp and warns; keep its home elsewhere.
        scratchBase: join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'toolkit', 'agent-cli'),
      })
    },
  }
}
