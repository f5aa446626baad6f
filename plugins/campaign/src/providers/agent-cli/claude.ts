import {mkdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {UsageError} from '@toolkit/kit'

import type {Provider, ProviderOptions} from '../provider.js'
import {type AgentLaunch, runAgentMission} from './agent-mission.js'
import {type CliSpec, type FoundCli, type QuickRun, requireCli, runQuickSync} from './cli-check.js'
import {MCP_SERVER_NAME} from './mcp-server.js'

export const CLAUDE: CliSpec = {
  command: 'claude',
  install: 'npm install -g @anthropic-ai/claude-code',
  minVersion: '2.1.330',
  versionPattern: /^(\d+\.\d+\.\d+)\b.*Claude Code/m,
}

/** Credentials Claude Code takes from the environment; any of them makes a fully isolated home possible. */
export const CLAUDE_ENV_CREDENTIALS = ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'CLAUDE_CODE_OAUTH_TOKEN', 'CLAUDE_CODE_USE_BEDROCK', 'CLAUDE_CODE_USE_VERTEX', 'CLAUDE_CODE_USE_FOUNDRY']

/** How the CLI is authenticated: from the environment (isolated home) or the user's stored login. */
export type ClaudeAuth = {mode: 'env'; variable: string} | {mode: 'login'}

/**
 * Which credentials a mission will use. With a key in the environment the CLI runs in a fresh
 * home of its own and reads nothing of the user's. Without one, the user's stored login (from
 * `claude` or `claude login`) lives in the user's config folder and is refreshed there, so that
 * folder stays the CLI's: settings, hooks and MCP servers in it are still ignored by the flags.
 */
export function claudeAuth(cli: FoundCli, env: NodeJS.ProcessEnv = process.env): ClaudeAuth {
  const variable = CLAUDE_ENV_CREDENTIALS.find((v) => (env[v] ?? '') !== '')
  if (variable !== undefined) return {mode: 'env', variable}
  if (!claudeLoggedIn(runQuickSync(cli.path, CLAUDE_LOGIN_STATUS, env))) throw new UsageError(CLAUDE_NOT_LOGGED_IN)
  return {mode: 'login'}
}

export const CLAUDE_LOGIN_STATUS = ['auth', 'status', '--json']
export const CLAUDE_NOT_LOGGED_IN = 'claude is not logged in: set ANTHROPIC_API_KEY, or run `claude setup-token` and set CLAUDE_CODE_OAUTH_TOKEN, or log in once with `claude`'

/** What `claude auth status --json` says. */
export function claudeLoggedIn(run: QuickRun): boolean {
  try {
    return (JSON.parse(run.stdout) as {loggedIn?: unknown}).loggedIn === true
  } catch {
    // Not JSON: an older or broken CLI; treated as not logged in.
    return false
  }
}

/**
 * The Claude Code command line of a mission: print mode with the raw JSON stream, our MCP server
 * as the only one, no built-in tools at all (`--tools ""`: no shell, files, web or sub-agents),
 * our tools allowed without a prompt and anything else refused (`dontAsk`), no settings files,
 * slash commands or saved session. With an API key, `--bare` also skips what a scripted call never
 * needs (hooks, CLAUDE.md discovery, auto-memory, background prefetches, keychain reads): about an
 * eighth of the CLI's CPU per mission. It reads no credential but ANTHROPIC_API_KEY, so a login or
 * another variable runs without it.
 */
export function claudeArgs(prompt: string, mcpConfigFile: string, model: null | string, bare = false): string[] {
  return [
    ...(bare ? ['--bare'] : []),
    '-p',
    prompt,
    '--output-format',
    'stream-json',
    '--verbose',
    '--mcp-config',
    mcpConfigFile,
    '--strict-mcp-config',
    '--tools',
    '',
    '--allowedTools',
    `mcp__${MCP_SERVER_NAME}`,
    '--permission-mode',
    'dontAsk',
    '--setting-sources',
    '',
    '--disable-slash-commands',
    '--no-session-persistence',
    ...(model === null ? [] : ['--model', model]),
  ]
}

// generate checks the provider before it makes a run directory and again when missions start.
const checked = new Map<string, {auth: ClaudeAuth; cli: FoundCli}>()

export function createClaudeProvider(options: ProviderOptions): Provider {
  const key = [process.env.PATH, ...CLAUDE_ENV_CREDENTIALS.map((v) => Boolean(process.env[v]))].join('\0')
  const check = checked.get(key) ?? (() => {
    const cli = requireCli(CLAUDE)
    return {auth: claudeAuth(cli), cli}
  })()
  checked.set(key, check)
  const {auth, cli} = check
  return {
    baseUrl: options.baseUrl || null,
    model: options.model,
    name: 'claude',
    runMission: (session) =>
      runAgentMission(session, {
        cli: 'claude',
        launch(server, scratch): AgentLaunch {
          // The token goes in a file only this user reads, never on the command line (ps shows it).
          const mcpConfig = join(scratch, 'mcp.json')
          writeFileSync(mcpConfig, JSON.stringify({mcpServers: {[MCP_SERVER_NAME]: {headers: {Authorization: `Bearer ${server.token}`}, type: 'http', url: server.url}}}), {mode: 0o600})
          // Without ENABLE_TOOL_SEARCH=false the CLI offers the model a DeferredToolPlaceholder
          // tool besides ours (and sends `defer_loading`, which some endpoints refuse).
          const env: NodeJS.ProcessEnv = {...process.env, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1', ENABLE_TOOL_SEARCH: 'false'}
          if (options.baseUrl) env.ANTHROPIC_BASE_URL = options.baseUrl
          if (auth.mode === 'env') {
            const home = join(scratch, 'home')
            mkdirSync(join(home, '.claude'), {recursive: true})
            Object.assign(env, {CLAUDE_CONFIG_DIR: join(home, '.claude'), HOME: home, XDG_CONFIG_HOME: join(home, '.config')})
          }
          return {args: claudeArgs(session.prompt, mcpConfig, options.model, auth.mode === 'env' && auth.variable === 'ANTHROPIC_API_KEY'), env, secrets: CLAUDE_ENV_CREDENTIALS.map((v) => process.env[v] ?? '')}
        },
        onEvent(event) {
          if (event.type === 'assistant') {
            const content = (event.message as {content?: unknown} | undefined)?.content
            if (!Array.isArray(content)) return
            for (const block of content as Array<{text?: unknown; type?: unknown}>) {
              if (block.type === 'text' && typeof block.text === 'string' && block.text.trim() !== '') session.text(block.text)
            }
            return
          }
          if (event.type === 'system' && event.subtype === 'api_retry') {
            // Claude Code retries even a refused key ten times over minutes: a 401/403 will not
            // get better, so the mission fails now; other errors are worth the wait, said aloud.
            const status = typeof event.error_status === 'number' ? event.error_status : null
            if (status === 401 || status === 403) return `the API refused the credentials (${status} ${String(event.error ?? '')}); check ${auth.mode === 'env' ? auth.variable : 'the claude login'}`
            const delay = typeof event.retry_delay_ms === 'number' ? ` in ${Math.round(event.retry_delay_ms / 1000)} s` : ''
            session.text(`claude: API error ${status ?? String(event.error ?? '')}, retry ${String(event.attempt)} of ${String(event.max_retries)}${delay}`)
            return
          }
          if (event.type === 'result') {
            const u = (event.usage ?? {}) as Record<string, unknown>
            const n = (k: string) => (typeof u[k] === 'number' ? (u[k] as number) : 0)
            session.usage({
              cost_usd: typeof event.total_cost_usd === 'number' ? event.total_cost_usd : null,
              input_tokens: n('input_tokens') + n('cache_creation_input_tokens') + n('cache_read_input_tokens'),
              output_tokens: n('output_tokens'),
            })
            if (event.is_error === true) {
              const detail = typeof event.result === 'string' ? event.result : Array.isArray(event.errors) ? event.errors.join('; ') : ''
              return `${String(event.subtype ?? 'error')}${detail ? `: ${detail}` : ''}`
            }
          }
        },
        path: cli.path,
      }),
  }
}
