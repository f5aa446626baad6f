import {existsSync, readFileSync} from 'node:fs'
import {resolve} from 'node:path'

import {closest, type ConfigRequest, type ConfigResult, DEFAULT_NET_LIMITS, InputError, type NetLimits, UsageError} from '@toolkit/kit'

import {LOG_LEVELS, type LogLevel} from '../engine/logger.js'

export interface ServerConfig {
  /** Where REST backups and exports may write (default `backups/` beside the data directory). */
  backup: {dir?: string}
  cache: {maxBytes: number}
  committerEmail: string
  committerName: string
  /** The config file read, if any. */
  configFile?: string
  dataDir: string
  /** `--follow REMOTE` / `:follow`: serve read-only, fetching every branch from this Git remote or URL (ops/follower.ts). */
  follow?: string
  index: {batchSize: number; checkIntervalMinutes: number; dir?: string; enabled: boolean; saveIntervalMinutes: number}
  logFormat: 'json' | 'text'
  logLevel: LogLevel
  memoryLimitMb?: number
  postgresql: {enabled: boolean; host: string; maxInValues?: number; maxStatementBytes?: number; net: NetLimits; parseTimeoutMs?: number; password: string; port: number; username: string}
  redis: {enabled: boolean; host: string; maxReplyBytes?: number; net: NetLimits; port: number}
  /** `:remotes {:name "url"}`: Git remotes the server replicates to (ops/remotes.ts). */
  remotes: Record<string, string>
  /** `ui`: the console at /ui (on unless `--disable-ui` or `:servers {:rest {:ui false}}`). */
  rest: {enabled: boolean; host: string; maxBodyBytes: number; net: NetLimits; port: number; ui: boolean}
  wal: {checkpointMaxDelayMs: number; maxPendingEntries: number}
}

export interface ServerFlags {
  config?: string
  follow?: string
  'data-dir'?: string
  'disable-redis'?: boolean
  'disable-rest'?: boolean
  'disable-sql'?: boolean
  'disable-ui'?: boolean
  host?: string
  'http-port'?: number
  'log-format'?: 'json' | 'text'
  'log-level'?: string
  'memory-limit'?: number
  'pg-port'?: number
  'redis-port'?: number
}

type Edn = unknown
type Obj = Record<string, Edn>

// What each section accepts. Keys of chrondb's config.edn that svc does not use are accepted
// with a warning (see `ignored`), so an existing chrondb config.edn starts.
const SCHEMA: Record<string, Record<string, string> | string> = {
  backup: {dir: 'string'},
  cache: {'max-bytes': 'int'},
  'data-dir': 'string',
  follow: 'string',
  git: {'committer-email': 'string', 'committer-name': 'string', 'default-branch': 'ignored', 'push-enabled': 'ignored', 'remote-url': 'ignored', 'sign-commits': 'ignored'},
  index: {'batch-size': 'int', 'check-interval-minutes': 'int', dir: 'string', enabled: 'bool', 'save-interval-minutes': 'int'},
  logging: {file: 'ignored', format: 'keyword', level: 'keyword', output: 'ignored'},
  'memory-limit-mb': 'int',
  remotes: 'remotes',
  servers: 'servers',
  storage: {'data-dir': 'string'},
  wal: {'checkpoint-max-delay-ms': 'int', 'max-pending-entries': 'int'},
}
const SERVERS: Record<string, Record<string, string>> = {
  postgresql: {enabled: 'bool', 'header-timeout-ms': 'int', 'idle-timeout-ms': 'int', 'max-connections': 'int', host: 'string', 'max-in-values': 'int', 'max-statement-bytes': 'int', 'parse-timeout-ms': 'int', password: 'string', port: 'port', username: 'string'},
  redis: {enabled: 'bool', 'header-timeout-ms': 'int', 'idle-timeout-ms': 'int', 'max-connections': 'int', 'max-reply-bytes': 'int', host: 'string', port: 'port'},
  rest: {enabled: 'bool', 'header-timeout-ms': 'int', 'idle-timeout-ms': 'int', 'max-connections': 'int', host: 'string', 'max-body-bytes': 'int', port: 'port', ui: 'bool'},
}

/** Checks brackets and strings, which edn-data tolerates silently (it returns null for `{:a 1`). */
function checkStructure(text: string, file: string): void {
  const stack: Array<{ch: string; line: number}> = []
  const pairs: Record<string, string> = {')': '(', ']': '[', '}': '{'}
  let line = 1
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (c === '\n') line++
    else if (c === ';') while (i + 1 < text.length && text[i + 1] !== '\n') i++
    else if (c === '\\') i++
    else if (c === '"') {
      const start = line
      i++
      while (i < text.length && text[i] !== '"') {
        if (text[i] === '\\') i++
        else if (text[i] === '\n') line++
        i++
      }
      if (i >= text.length) throw new InputError('unterminated string', {file, line: start})
    } else if (c === '(' || c === '[' || c === '{') stack.push({ch: c, line})
    else if (c in pairs) {
      const top = stack.pop()
      if (!top || top.ch !== pairs[c]) throw new InputError(`unexpected "${c}"`, {file, line})
    }
  }
  if (stack.length > 0) throw new InputError(`"${stack.at(-1)!.ch}" is never closed`, {file, line: stack.at(-1)!.line})
}

function value(kind: string, v: Edn, where: string, file: string): unknown {
  const bad = (what: string): never => {
    throw new InputError(`${where} must be ${what}, got ${JSON.stringify(v)}`, {file})
  }
  switch (kind) {
    case 'bool':
      return typeof v === 'boolean' ? v : bad('true or false')
    case 'int':
      return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : bad('a non-negative integer')
    case 'keyword':
    case 'string':
      return typeof v === 'string' ? v : bad(kind === 'keyword' ? 'a keyword such as :info' : 'a string')
    case 'port':
      return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 65_535 ? v : bad('a port number (0-65535)')
    default:
      return v
  }
}

function section(obj: Edn, schema: Record<string, string>, where: string, file: string, warnings: string[]): Record<string, unknown> {
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) throw new InputError(`${where} must be a map`, {file})
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(obj as Obj)) {
    const kind = schema[k]
    if (kind === undefined) {
      const hint = closest(k, Object.keys(schema))
      throw new InputError(`unknown key ${where} :${k}${hint ? ` (did you mean :${hint}?)` : ''}`, {file})
    }
    if (kind === 'ignored') {
      warnings.push(`${where} :${k} is not used by svc and is ignored`)
      continue
    }
    out[k] = value(kind, v, `${where} :${k}`, file)
  }
  return out
}

/** The settings svc reads through toolkit's config hook (`toolkit config show svc`), flat. */
export const SVC_SETTINGS = {
  backupDir: '',
  cacheMaxBytes: 64 * 1024 * 1024,
  committerEmail: 'svc@localhost',
  committerName: 'svc',
  dataDir: 'data',
  follow: '',
  indexBatchSize: 1000,
  indexCheckIntervalMinutes: 60,
  indexDir: '',
  indexEnabled: true,
  indexSaveIntervalMinutes: 5,
  logFormat: 'text',
  logLevel: 'info',
  memoryLimitMb: 0,
  postgresqlEnabled: true,
  postgresqlHeaderTimeoutMs: DEFAULT_NET_LIMITS.headerTimeoutMs,
  postgresqlHost: '127.0.0.1',
  postgresqlIdleTimeoutMs: DEFAULT_NET_LIMITS.idleTimeoutMs,
  postgresqlMaxConnections: DEFAULT_NET_LIMITS.maxConnections,
  postgresqlMaxInValues: 0,
  postgresqlMaxStatementBytes: 0,
  postgresqlParseTimeoutMs: 0,
  postgresqlPort: 5432,
  postgresqlUsername: 'svc',
  redisEnabled: true,
  redisHeaderTimeoutMs: DEFAULT_NET_LIMITS.headerTimeoutMs,
  redisHost: '127.0.0.1',
  redisIdleTimeoutMs: DEFAULT_NET_LIMITS.idleTimeoutMs,
  redisMaxConnections: DEFAULT_NET_LIMITS.maxConnections,
  redisMaxReplyBytes: 0,
  redisPort: 6379,
  restEnabled: true,
  restHeaderTimeoutMs: DEFAULT_NET_LIMITS.headerTimeoutMs,
  restHost: '127.0.0.1',
  restIdleTimeoutMs: DEFAULT_NET_LIMITS.idleTimeoutMs,
  restMaxConnections: DEFAULT_NET_LIMITS.maxConnections,
  restMaxBodyBytes: 1024 * 1024,
  restPort: 3000,
  restUi: true,
  walCheckpointMaxDelayMs: 1000,
  walMaxPendingEntries: 10_000,
}
export type SvcSettings = typeof SVC_SETTINGS

// Where each setting sits in config.edn; a later path wins (`:storage :data-dir` over `:data-dir`).
const EDN_PATHS: Record<keyof SvcSettings, string[][]> = {
  backupDir: [['backup', 'dir']],
  cacheMaxBytes: [['cache', 'max-bytes']],
  committerEmail: [['git', 'committer-email']],
  committerName: [['git', 'committer-name']],
  dataDir: [['data-dir'], ['storage', 'data-dir']],
  follow: [['follow']],
  indexBatchSize: [['index', 'batch-size']],
  indexCheckIntervalMinutes: [['index', 'check-interval-minutes']],
  indexDir: [['index', 'dir']],
  indexEnabled: [['index', 'enabled']],
  indexSaveIntervalMinutes: [['index', 'save-interval-minutes']],
  logFormat: [['logging', 'format']],
  logLevel: [['logging', 'level']],
  memoryLimitMb: [['memory-limit-mb']],
  postgresqlEnabled: [['servers', 'postgresql', 'enabled']],
  postgresqlHeaderTimeoutMs: [['servers', 'postgresql', 'header-timeout-ms']],
  postgresqlHost: [['servers', 'postgresql', 'host']],
  postgresqlIdleTimeoutMs: [['servers', 'postgresql', 'idle-timeout-ms']],
  postgresqlMaxConnections: [['servers', 'postgresql', 'max-connections']],
  postgresqlMaxInValues: [['servers', 'postgresql', 'max-in-values']],
  postgresqlMaxStatementBytes: [['servers', 'postgresql', 'max-statement-bytes']],
  postgresqlParseTimeoutMs: [['servers', 'postgresql', 'parse-timeout-ms']],
  postgresqlPort: [['servers', 'postgresql', 'port']],
  postgresqlUsername: [['servers', 'postgresql', 'username']],
  redisEnabled: [['servers', 'redis', 'enabled']],
  redisHeaderTimeoutMs: [['servers', 'redis', 'header-timeout-ms']],
  redisHost: [['servers', 'redis', 'host']],
  redisIdleTimeoutMs: [['servers', 'redis', 'idle-timeout-ms']],
  redisMaxConnections: [['servers', 'redis', 'max-connections']],
  redisMaxReplyBytes: [['servers', 'redis', 'max-reply-bytes']],
  redisPort: [['servers', 'redis', 'port']],
  restEnabled: [['servers', 'rest', 'enabled']],
  restHeaderTimeoutMs: [['servers', 'rest', 'header-timeout-ms']],
  restHost: [['servers', 'rest', 'host']],
  restIdleTimeoutMs: [['servers', 'rest', 'idle-timeout-ms']],
  restMaxConnections: [['servers', 'rest', 'max-connections']],
  restMaxBodyBytes: [['servers', 'rest', 'max-body-bytes']],
  restPort: [['servers', 'rest', 'port']],
  restUi: [['servers', 'rest', 'ui']],
  walCheckpointMaxDelayMs: [['wal', 'checkpoint-max-delay-ms']],
  walMaxPendingEntries: [['wal', 'max-pending-entries']],
}

export interface EdnLayer {
  file: string
  /** The line of each value, found by its keywords in order. */
  lines: Record<string, number>
  /** The PostgreSQL password: a secret, so it stays out of the shared settings and `config show`. */
  password?: string
  /** `:remotes`: a map of remote names to Git URLs, which the flat settings cannot hold. */
  remotes?: Record<string, string>
  values: Partial<SvcSettings>
  warnings: string[]
}

/** The line of the last keyword of `path`, looking for each keyword after the previous one. */
function lineOfPath(text: string, path: string[]): number | undefined {
  let at = 0
  for (const key of path) {
    // Keys are plain keyword names ([a-z-]), nothing to escape.
    const m = new RegExp(`:${key}(?![\\w-])`, 'g')
    m.lastIndex = at
    const hit = m.exec(text)
    if (!hit) return undefined
    at = hit.index + hit[0].length
  }
  return text.slice(0, at).split('\n').length
}

/** Reads and checks one config.edn (the keys in docs/svc.md) into flat settings. */
export async function readConfigEdn(file: string): Promise<EdnLayer> {
  const warnings: string[] = []
  const text = readFileSync(file, 'utf8')
  checkStructure(text, file)
  const {parseEDNString} = await import('edn-data')
  let parsed: Edn
  try {
    parsed = parseEDNString(text, {keywordAs: 'string', listAs: 'array', mapAs: 'object', setAs: 'array'})
  } catch (error) {
    throw new InputError(`not valid EDN: ${(error as Error).message}`, {file})
  }
  if (parsed === null && text.replace(/;[^\n]*/g, '').trim() === '') parsed = {}
  const top = section(parsed, Object.fromEntries(Object.entries(SCHEMA).map(([k, v]) => [k, typeof v === 'string' ? v : 'map'])), 'the config', file, warnings)
  const tree: Record<string, unknown> = {...top}
  for (const [name, schema] of Object.entries(SCHEMA)) {
    if (typeof schema !== 'string' && top[name] !== undefined) tree[name] = section(top[name], schema, `:${name}`, file, warnings)
  }
  let password: string | undefined
  if (top.servers !== undefined) {
    const servers = section(top.servers, {postgresql: 'map', redis: 'map', rest: 'map'}, ':servers', file, warnings)
    const checked: Record<string, unknown> = {}
    for (const name of ['rest', 'redis', 'postgresql'] as const) {
      if (servers[name] !== undefined) checked[name] = section(servers[name], SERVERS[name], `:servers :${name}`, file, warnings)
    }
    password = (checked.postgresql as Record<string, unknown> | undefined)?.password as string | undefined
    tree.servers = checked
  }
  const values: Record<string, unknown> = {}
  const lines: Record<string, number> = {}
  for (const [key, paths] of Object.entries(EDN_PATHS)) {
    for (const path of paths) {
      let v: unknown = tree
      for (const k of path) v = (v as Record<string, unknown> | undefined)?.[k]
      if (v === undefined) continue
      values[key] = v
      const line = lineOfPath(text, path)
      if (line !== undefined) lines[key] = line
    }
  }
  const remotes = top.remotes === undefined ? undefined : remotesSection(top.remotes, file)
  return {file, lines, password, remotes, values: values as Partial<SvcSettings>, warnings}
}

/** The config.edn `svc server` reads: `--config` (which must exist), else ./config.edn when present. */
export function configEdnPath(flags: {config?: string}, cwd = process.cwd()): {file: string; required: boolean} {
  return {file: resolve(cwd, flags.config ?? 'config.edn'), required: flags.config !== undefined}
}

/** Settings the command line gives, as keys of SVC_SETTINGS (only those the user set). */
function flagSettings(flags: ServerFlags, args: {redisPort?: number; restPort?: number}): Partial<SvcSettings> {
  const out: Partial<SvcSettings> = {}
  const set = <K extends keyof SvcSettings>(key: K, v: SvcSettings[K] | undefined): void => {
    if (v !== undefined) out[key] = v
  }
  set('dataDir', flags['data-dir'])
  set('follow', flags.follow)
  set('logLevel', flags['log-level'])
  set('logFormat', flags['log-format'])
  set('memoryLimitMb', flags['memory-limit'])
  for (const k of ['restHost', 'redisHost', 'postgresqlHost'] as const) set(k, flags.host)
  set('restPort', flags['http-port'] ?? args.restPort)
  set('redisPort', flags['redis-port'] ?? args.redisPort)
  set('postgresqlPort', flags['pg-port'])
  if (flags['disable-rest']) out.restEnabled = false
  if (flags['disable-redis']) out.redisEnabled = false
  if (flags['disable-sql']) out.postgresqlEnabled = false
  if (flags['disable-ui']) out.restUi = false
  return out
}

/** Loads settings through toolkit's config hook (`loadConfig` from @toolkit/kit, given the request). */
export type LayeredLoader = (request: ConfigRequest<SvcSettings>) => Promise<ConfigResult<SvcSettings>>

/** Without the host (the Node.js API, tests): defaults < config.edn < flags, no environment. */
const withoutHost: LayeredLoader = async (request) => {
  const values = {...request.defaults}
  const sources = Object.fromEntries(Object.keys(values).map((k) => [k, 'default'])) as Record<keyof SvcSettings, string>
  for (const layer of request.layers ?? []) {
    Object.assign(values, layer.values)
    for (const k of Object.keys(layer.values)) sources[k as keyof SvcSettings] = `file:${layer.file}${layer.lines?.[k] ? `:${layer.lines[k]}` : ''}`
  }
  for (const [k, v] of Object.entries(request.flags ?? {})) {
    if (v === undefined) continue
    ;(values as Record<string, unknown>)[k] = v
    sources[k as keyof SvcSettings] = 'flag'
  }
  return {files: (request.layers ?? []).map((l) => l.file), sources, values}
}

/** The request svc makes of the config hook for a config.edn (also answers `toolkit config show`). */
export async function svcConfigRequest(flags: ServerFlags, args: {redisPort?: number; restPort?: number} = {}, cwd = process.cwd()): Promise<{password?: string; remotes?: Record<string, string>; request: ConfigRequest<SvcSettings>; warnings: string[]}> {
  const {file, required} = configEdnPath(flags, cwd)
  let layer: EdnLayer | undefined
  if (existsSync(file)) layer = await readConfigEdn(file)
  else if (required) throw new UsageError(`config file ${file} could not be found; pass --config <path> to an existing config.edn`, 'config_not_found')
  const request: ConfigRequest<SvcSettings> = {
    defaults: SVC_SETTINGS,
    flags: flagSettings(flags, args),
    layers: layer ? [{file: layer.file, lines: layer.lines, values: layer.values}] : [],
    namespace: 'svc',
  }
  return {password: layer?.password, remotes: layer?.remotes, request, warnings: layer?.warnings ?? []}
}

/**
 * The server's configuration: defaults < toolkit's config files (`svc` section) < config.edn
 * (`--config`, else ./config.edn when present) < TOOLKIT_SVC_* < flags, merged by the host's
 * config hook when `load` is given (commands pass kit's `loadConfig`), so `toolkit config show
 * svc` explains every value. Relative paths are resolved against `cwd`.
 */
export async function loadServerConfig(
  flags: ServerFlags,
  args: {redisPort?: number; restPort?: number},
  cwd = process.cwd(),
  load: LayeredLoader = withoutHost,
): Promise<{config: ServerConfig; sources: Record<string, string>; warnings: string[]}> {
  const {password, remotes, request, warnings} = await svcConfigRequest(flags, args, cwd)
  const {sources, values: v} = await load(request)
  const bad = (key: keyof SvcSettings, what: string): never => {
    const source = sources[key]
    const msg = `${key} must be ${what}, got ${JSON.stringify(v[key])}`
    if (source.startsWith('file:')) throw new InputError(msg, {file: source.slice(5)})
    throw new UsageError(`${source}: ${msg}`, 'invalid_config')
  }
  for (const key of ['restPort', 'redisPort', 'postgresqlPort'] as const) if (!Number.isInteger(v[key]) || v[key] < 0 || v[key] > 65_535) bad(key, 'a port number (0-65535)')
  for (const [key, n] of Object.entries(v)) if (typeof n === 'number' && !(Number.isInteger(n) && n >= 0)) bad(key as keyof SvcSettings, 'a non-negative integer')
  for (const key of ['restMaxConnections', 'redisMaxConnections', 'postgresqlMaxConnections'] as const) if (v[key] < 1) bad(key, 'at least 1')
  if (!(LOG_LEVELS as string[]).includes(v.logLevel)) bad('logLevel', `one of ${LOG_LEVELS.join(', ')}`)
  if (v.logFormat !== 'json' && v.logFormat !== 'text') bad('logFormat', 'text or json')
  const layer = request.layers?.[0]
  const opt = (n: number): number | undefined => (n > 0 ? n : undefined)
  const path = (p: string): string | undefined => (p === '' ? undefined : resolve(cwd, p))
  const config: ServerConfig = {
    backup: {dir: path(v.backupDir)},
    cache: {maxBytes: v.cacheMaxBytes},
    committerEmail: v.committerEmail,
    committerName: v.committerName,
    configFile: layer?.file,
    dataDir: resolve(cwd, v.dataDir),
    follow: v.follow === '' ? undefined : v.follow,
    index: {
      batchSize: Math.max(1, v.indexBatchSize),
      checkIntervalMinutes: v.indexCheckIntervalMinutes,
      dir: path(v.indexDir),
      enabled: v.indexEnabled,
      saveIntervalMinutes: Math.max(1, v.indexSaveIntervalMinutes),
    },
    logFormat: v.logFormat as 'json' | 'text',
    logLevel: v.logLevel as LogLevel,
    memoryLimitMb: opt(v.memoryLimitMb),
    postgresql: {
      enabled: v.postgresqlEnabled,
      host: v.postgresqlHost,
      maxInValues: opt(v.postgresqlMaxInValues),
      maxStatementBytes: opt(v.postgresqlMaxStatementBytes),
      net: {headerTimeoutMs: v.postgresqlHeaderTimeoutMs, idleTimeoutMs: v.postgresqlIdleTimeoutMs, maxConnections: v.postgresqlMaxConnections},
      parseTimeoutMs: opt(v.postgresqlParseTimeoutMs),
      password: password ?? 'svc',
      port: v.postgresqlPort,
      username: v.postgresqlUsername,
    },
    redis: {enabled: v.redisEnabled, host: v.redisHost, maxReplyBytes: opt(v.redisMaxReplyBytes), net: {headerTimeoutMs: v.redisHeaderTimeoutMs, idleTimeoutMs: v.redisIdleTimeoutMs, maxConnections: v.redisMaxConnections}, port: v.redisPort},
    remotes: remotes ?? {},
    rest: {enabled: v.restEnabled, host: v.restHost, maxBodyBytes: v.restMaxBodyBytes, net: {headerTimeoutMs: v.restHeaderTimeoutMs, idleTimeoutMs: v.restIdleTimeoutMs, maxConnections: v.restMaxConnections}, port: v.restPort, ui: v.restUi},
    wal: {checkpointMaxDelayMs: v.walCheckpointMaxDelayMs, maxPendingEntries: Math.max(1, v.walMaxPendingEntries)},
  }
  return {config, sources, warnings}
}

/** `:remotes {:mirror "/srv/git/db.git" :offsite "ssh://host/db.git"}`: name -> Git URL. */
function remotesSection(v: Edn, file: string): Record<string, string> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new InputError(':remotes must be a map of remote name to Git URL, e.g. {:mirror "/srv/git/db.git"}', {file})
  const out: Record<string, string> = {}
  for (const [name, url] of Object.entries(v as Obj)) {
    if (typeof url !== 'string' || url.trim() === '') throw new InputError(`:remotes :${name} must be a Git URL string, got ${JSON.stringify(url)}`, {file})
    out[name] = url
  }
  return out
}
