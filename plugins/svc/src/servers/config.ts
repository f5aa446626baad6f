import {existsSync, readFileSync} from 'node:fs'
import {resolve} from 'node:path'

import {closest, InputError, UsageError} from '@toolkit/kit'

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
  postgresql: {enabled: boolean; host: string; maxStatementBytes?: number; parseTimeoutMs?: number; password: string; port: number; username: string}
  redis: {enabled: boolean; host: string; port: number}
  /** `:remotes {:name "url"}`: Git remotes the server replicates to (ops/remotes.ts). */
  remotes: Record<string, string>
  /** `ui`: the console at /ui (on unless `--disable-ui` or `:ui false`). */
  rest: {enabled: boolean; host: string; maxBodyBytes: number; port: number; ui: boolean}
  wal: {checkpointMaxDelayMs: number; maxPendingEntries: number}
}

/** The embedded default: what `toolkit svc server` runs with no config file and no flags. */
export function defaultConfig(): ServerConfig {
  return {
    backup: {},
    remotes: {},
    cache: {maxBytes: 64 * 1024 * 1024},
    committerEmail: 'svc@localhost',
    committerName: 'svc',
    dataDir: 'data',
    index: {batchSize: 1000, checkIntervalMinutes: 60, enabled: true, saveIntervalMinutes: 5},
    logFormat: 'text',
    logLevel: 'info',
    postgresql: {enabled: true, host: '127.0.0.1', password: 'svc', port: 5432, username: 'svc'},
    redis: {enabled: true, host: '127.0.0.1', port: 6379},
    rest: {enabled: true, host: '127.0.0.1', maxBodyBytes: 1024 * 1024, port: 3000, ui: true},
    wal: {checkpointMaxDelayMs: 1000, maxPendingEntries: 10_000},
  }
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
  postgresql: {enabled: 'bool', host: 'string', 'max-statement-bytes': 'int', 'parse-timeout-ms': 'int', password: 'string', port: 'port', username: 'string'},
  redis: {enabled: 'bool', host: 'string', port: 'port'},
  rest: {enabled: 'bool', host: 'string', 'max-body-bytes': 'int', port: 'port', ui: 'bool'},
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

/**
 * Reads `config.edn` (EDN, the keys in docs/svc.md) over the embedded defaults, then applies the
 * command-line flags. A config file named with --config must exist; the default `config.edn`
 * in the current directory is optional.
 */
export async function loadServerConfig(flags: ServerFlags, args: {redisPort?: number; restPort?: number}, cwd = process.cwd()): Promise<{config: ServerConfig; warnings: string[]}> {
  const cfg = defaultConfig()
  const warnings: string[] = []
  const file = resolve(cwd, flags.config ?? 'config.edn')
  if (existsSync(file)) {
    cfg.configFile = file
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
    const sub = (name: string): Record<string, unknown> =>
      top[name] === undefined ? {} : section(top[name], SCHEMA[name] as Record<string, string>, `:${name}`, file, warnings)
    if (top['data-dir'] !== undefined) cfg.dataDir = top['data-dir'] as string
    const storage = sub('storage')
    if (storage['data-dir'] !== undefined) cfg.dataDir = storage['data-dir'] as string
    if (top['memory-limit-mb'] !== undefined) cfg.memoryLimitMb = top['memory-limit-mb'] as number
    const g = sub('git')
    if (g['committer-name'] !== undefined) cfg.committerName = g['committer-name'] as string
    if (g['committer-email'] !== undefined) cfg.committerEmail = g['committer-email'] as string
    const logging = sub('logging')
    if (logging.level !== undefined) cfg.logLevel = level(logging.level as string, file)
    if (logging.format !== undefined) {
      if (logging.format !== 'json' && logging.format !== 'text') throw new InputError(`:logging :format must be :text or :json`, {file})
      cfg.logFormat = logging.format
    }
    const w = sub('wal')
    if (w['max-pending-entries'] !== undefined) cfg.wal.maxPendingEntries = Math.max(1, w['max-pending-entries'] as number)
    if (w['checkpoint-max-delay-ms'] !== undefined) cfg.wal.checkpointMaxDelayMs = w['checkpoint-max-delay-ms'] as number
    const ix = sub('index')
    if (ix.enabled !== undefined) cfg.index.enabled = ix.enabled as boolean
    if (ix.dir !== undefined) cfg.index.dir = ix.dir as string
    if (ix['batch-size'] !== undefined) cfg.index.batchSize = Math.max(1, ix['batch-size'] as number)
    if (ix['check-interval-minutes'] !== undefined) cfg.index.checkIntervalMinutes = ix['check-interval-minutes'] as number
    if (ix['save-interval-minutes'] !== undefined) cfg.index.saveIntervalMinutes = Math.max(1, ix['save-interval-minutes'] as number)
    if (top.follow !== undefined) cfg.follow = top.follow as string
    if (top.remotes !== undefined) cfg.remotes = remotesSection(top.remotes, file)
    const bk = sub('backup')
    if (bk.dir !== undefined) cfg.backup.dir = bk.dir as string
    const c = sub('cache')
    if (c['max-bytes'] !== undefined) cfg.cache.maxBytes = c['max-bytes'] as number
    if (top.servers !== undefined) {
      const servers = section(top.servers, {postgresql: 'map', redis: 'map', rest: 'map'}, ':servers', file, warnings)
      for (const name of ['rest', 'redis', 'postgresql'] as const) {
        if (servers[name] === undefined) continue
        const s = section(servers[name], SERVERS[name], `:servers :${name}`, file, warnings)
        const target = cfg[name] as Record<string, unknown>
        for (const [k, v] of Object.entries(s)) target[k.replaceAll(/-(\w)/g, (_, ch: string) => ch.toUpperCase())] = v
      }
    }
  } else if (flags.config !== undefined) {
    throw new UsageError(`config file ${file} could not be found; pass --config <path> to an existing config.edn`, 'config_not_found')
  }
  if (flags['data-dir'] !== undefined) cfg.dataDir = flags['data-dir']
  if (flags.follow !== undefined) cfg.follow = flags.follow
  if (flags['log-level'] !== undefined) cfg.logLevel = level(flags['log-level'])
  if (flags['log-format'] !== undefined) cfg.logFormat = flags['log-format']
  if (flags['memory-limit'] !== undefined) cfg.memoryLimitMb = flags['memory-limit']
  if (flags.host !== undefined) cfg.rest.host = cfg.redis.host = cfg.postgresql.host = flags.host
  const restPort = flags['http-port'] ?? args.restPort
  const redisPort = flags['redis-port'] ?? args.redisPort
  if (restPort !== undefined) cfg.rest.port = restPort
  if (redisPort !== undefined) cfg.redis.port = redisPort
  if (flags['pg-port'] !== undefined) cfg.postgresql.port = flags['pg-port']
  if (flags['disable-rest']) cfg.rest.enabled = false
  if (flags['disable-ui']) cfg.rest.ui = false
  if (flags['disable-redis']) cfg.redis.enabled = false
  if (flags['disable-sql']) cfg.postgresql.enabled = false
  cfg.dataDir = resolve(cwd, cfg.dataDir)
  if (cfg.index.dir !== undefined) cfg.index.dir = resolve(cwd, cfg.index.dir)
  if (cfg.backup.dir !== undefined) cfg.backup.dir = resolve(cwd, cfg.backup.dir)
  return {config: cfg, warnings}
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

function level(v: string, file?: string): LogLevel {
  if ((LOG_LEVELS as string[]).includes(v)) return v as LogLevel
  const msg = `log level must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(v)}`
  throw file ? new InputError(msg, {file}) : new UsageError(msg)
}
