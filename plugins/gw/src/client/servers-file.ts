import {InputError} from '@toolkit/kit'
import {readFile} from 'node:fs/promises'
import {homedir} from 'node:os'
import {join, resolve} from 'node:path'

/** One server of `servers.json`: a remote HTTP server (`url`) or a local process (`command`). */
export interface ServerEntry {
  [k: string]: unknown
  args?: string[]
  command?: string
  env?: Record<string, string>
  headers?: Record<string, string>
  url?: string
}

export interface ServersConfig {
  /** The file that was read, or undefined when none exists. */
  file: string | undefined
  /** The parsed JSON object, so the proxy can read `serverAuth`. */
  raw: Record<string, unknown>
  servers: Record<string, ServerEntry>
  /** The file's text, so settings read from it can name their line. */
  text?: string
}

export interface LoadServersOptions {
  /** The user config directory of gw; `$XDG_CONFIG_HOME/gw` or `~/.config/gw` when omitted. */
  configDir?: string
  /** Project directory; the process's working directory when omitted. */
  cwd?: string
  env?: Record<string, string | undefined>
  /** An explicit file (`--config`): it must exist. */
  file?: string
}

/** `~/.config/gw`, honouring XDG_CONFIG_HOME, shared with the token store. */
export function gwConfigDir(env: Record<string, string | undefined> = process.env): string {
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config')
  return join(base, 'gw')
}

/** Where servers.json is looked for, first match wins. */
export function serversConfigCandidates(options: LoadServersOptions = {}): string[] {
  const env = options.env ?? process.env
  if (options.file) return [resolve(options.cwd ?? process.cwd(), options.file)]
  if (env.GW_CONFIG) return [resolve(options.cwd ?? process.cwd(), env.GW_CONFIG)]
  const cwd = options.cwd ?? process.cwd()
  return [join(cwd, 'servers.json'), join(options.configDir ?? gwConfigDir(env), 'servers.json')]
}

/** 1-based line and column of a character offset. */
function lineAndColumn(text: string, offset: number): {column: number; line: number} {
  const before = text.slice(0, Math.max(0, Math.min(offset, text.length)))
  const line = before.split('\n').length
  return {column: offset - before.lastIndexOf('\n'), line}
}

/** The line where `"name"` first appears as a key, for messages about one entry. */
export function keyLine(text: string, name: string): number | undefined {
  const escaped = JSON.stringify(name).replaceAll(/[.*+?^${}()|[\]\\]/g, String.raw`\$&`)
  const m = new RegExp(`${escaped}\\s*:`).exec(text)
  return m ? lineAndColumn(text, m.index).line : undefined
}

function parseJson(text: string, file: string): unknown {
  try {
    return JSON.parse(text)
  } catch (error) {
    const message = (error as Error).message
    // V8 names the offset ("at position 42"); newer versions also add "(line 3 column 5)".
    const lc = /line (\d+) column (\d+)/.exec(message)
    const pos = /position (\d+)/.exec(message)
    const where = lc
      ? {column: Number(lc[2]), line: Number(lc[1])}
      : pos
        ? lineAndColumn(text, Number(pos[1]))
        : lineAndColumn(text, text.length)
    const reason = message.replace(/\s*\(line \d+ column \d+\)/, '').replace(/,? ?(in JSON )?at position \d+/, '').trim()
    throw new InputError(`invalid JSON: ${reason}`, {code: 'config_invalid', column: where.column, file, line: where.line})
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

function checkStringMap(value: unknown, what: string, at: {file: string; line?: number}): Record<string, string> | undefined {
  if (value === undefined) return undefined
  if (!isObject(value) || Object.values(value).some((v) => typeof v !== 'string')) {
    throw new InputError(`${what} must be an object of strings`, {code: 'config_invalid', ...at})
  }
  return value as Record<string, string>
}

function checkEntry(name: string, value: unknown, file: string, text: string): ServerEntry {
  const at = {file, line: keyLine(text, name)}
  if (!isObject(value)) throw new InputError(`server "${name}" must be an object`, {code: 'config_invalid', ...at})
  const entry = value as ServerEntry
  if (entry.url === undefined && entry.command === undefined) {
    throw new InputError(`server "${name}" needs "url" (an HTTP server) or "command" (a local process)`, {code: 'config_invalid', ...at})
  }
  if (entry.url !== undefined) {
    let url: URL | undefined
    try {
      // `${NAME}` may stand for any part (a key in the path, the host): check the shape with a stand-in.
      url = typeof entry.url === 'string' ? new URL(entry.url.replaceAll(VARIABLE, 'x')) : undefined
    } catch {
      url = undefined
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      throw new InputError(`server "${name}": "url" must be an http:// or https:// URL, got ${JSON.stringify(entry.url)}`, {code: 'config_invalid', ...at})
    }
  }
  if (entry.command !== undefined && (typeof entry.command !== 'string' || entry.command === '')) {
    throw new InputError(`server "${name}": "command" must be a non-empty string`, {code: 'config_invalid', ...at})
  }
  if (entry.args !== undefined && (!Array.isArray(entry.args) || entry.args.some((a) => typeof a !== 'string'))) {
    throw new InputError(`server "${name}": "args" must be an array of strings`, {code: 'config_invalid', ...at})
  }
  checkStringMap(entry.headers, `server "${name}": "headers"`, at)
  checkStringMap(entry.env, `server "${name}": "env"`, at)
  return entry
}

/**
 * Reads servers.json: `--config` (or GW_CONFIG), else `./servers.json`, else
 * `~/.config/gw/servers.json`. Servers live under `gwServers`; `mcpServers` (the key most MCP
 * clients use) is read too, so an existing file can be reused as is. No file is not an error.
 */
export async function loadServersConfig(options: LoadServersOptions = {}): Promise<ServersConfig> {
  const candidates = serversConfigCandidates(options)
  const explicit = Boolean(options.file || (options.env ?? process.env).GW_CONFIG)
  for (const file of candidates) {
    let text: string
    try {
      text = await readFile(file, 'utf8')
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if ((code === 'ENOENT' || code === 'ENOTDIR') && !explicit) continue
      if (code === 'ENOENT') throw new InputError('config file not found', {code: 'config_not_found', file})
      throw new InputError(`cannot read config file (${(error as Error).message})`, {code: 'config_unreadable', file})
    }
    const data = text.trim() === '' ? {} : parseJson(text, file)
    if (!isObject(data)) throw new InputError('servers.json must hold a JSON object', {code: 'config_invalid', file, line: 1})
    const section = data.gwServers ?? data.mcpServers ?? {}
    if (!isObject(section)) {
      throw new InputError('"gwServers" must be an object of server entries', {code: 'config_invalid', file, line: keyLine(text, 'gwServers')})
    }
    const servers: Record<string, ServerEntry> = {}
    for (const [name, value] of Object.entries(section)) servers[name] = checkEntry(name, value, file, text)
    return {file, raw: data, servers, text}
  }
  return {file: undefined, raw: {}, servers: {}}
}

const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g

/** `${NAME}` (and `$NAME`-free text) replaced from `env`; an unset variable becomes empty. */
export function substituteEnv(value: string, env: Record<string, string | undefined>): string {
  return value.replaceAll(VARIABLE, (_, name: string) => env[name] ?? '')
}

/**
 * The URL to connect to: `${NAME}` in `url` replaced from the environment, so a key that hosted
 * services put in the URL can stay out of the file. The entry's URL as written stays the token
 * store's key and what is shown. An unset variable is an error, never an empty path segment.
 */
export function resolveUrl(name: string, entry: ServerEntry, env: Record<string, string | undefined>): string {
  const url = entry.url ?? ''
  const unset = unsetVariables(url, env)
  if (unset.length > 0) {
    throw new InputError(`server "${name}": "url" uses ${unset.map((n) => `\${${n}}`).join(', ')}, which ${unset.length === 1 ? 'is' : 'are'} not set in the environment`, {code: 'config_unset_variable'})
  }
  const resolved = substituteEnv(url, env)
  if (!URL.canParse(resolved) || !/^https?:$/.test(new URL(resolved).protocol)) {
    throw new InputError(`server "${name}": "url" is not an http:// or https:// URL once its variables are filled in`, {code: 'config_invalid'})
  }
  return resolved
}

/** Names of the `${NAME}` variables in `value` that are unset or empty in `env`. */
export function unsetVariables(value: string, env: Record<string, string | undefined>): string[] {
  return [...value.matchAll(VARIABLE)].map((m) => m[1]).filter((n) => !env[n])
}

/**
 * The entry's headers with `${ENV}` replaced. An `Authorization` header that resolves to a
 * scheme with no credential (`Bearer ` from an unset variable) is dropped, so the credential
 * chain falls back to the saved token, OAuth or the prompt.
 */
export function resolveHeaders(entry: ServerEntry, env: Record<string, string | undefined> = process.env): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(entry.headers ?? {})) {
    const resolved = substituteEnv(value, env).trim()
    if (name.toLowerCase() === 'authorization' && isEmptyCredential(resolved)) continue
    out[name] = resolved
  }
  return out
}

/** True for `""`, `Bearer`, `Bearer   `, `Basic` and the like: a scheme without a credential. */
export function isEmptyCredential(value: string): boolean {
  const parts = value.trim().split(/\s+/).filter(Boolean)
  return parts.length === 0 || (parts.length === 1 && /^(bearer|basic|token|apikey)$/i.test(parts[0]))
}

/** The auth-state key of an entry: its URL for HTTP servers, the command line for processes. */
export function serverKey(entry: ServerEntry): string {
  return entry.url ?? [entry.command, ...(entry.args ?? [])].join(' ')
}
