import {UsageError} from '@toolkit/kit'

import {maskUrl} from '../client/url-mask.js'

export interface EntryRequest {
  /** `command` and its arguments (`gw add NAME -- npx -y pkg`). */
  command?: string[]
  /** `KEY=VALUE` pairs for a local server's environment. */
  env?: string[]
  /** `Name: value` pairs sent with every request to an HTTP server. */
  headers?: string[]
  url?: string
}

const VARIABLE = /\$\{[A-Za-z_][A-Za-z0-9_]*\}/

function pairs(list: string[] | undefined, separator: ':' | '=', what: string, example: string): Record<string, string> | undefined {
  if (!list || list.length === 0) return undefined
  const out: Record<string, string> = {}
  for (const item of list) {
    const at = item.indexOf(separator)
    const key = at > 0 ? item.slice(0, at).trim() : ''
    if (!key) throw new UsageError(`${what} ${JSON.stringify(item.length > 40 ? `${item.slice(0, 40)}…` : item)} is not ${example}`)
    out[key] = item.slice(at + 1).trim()
  }
  return out
}

/** A servers.json entry from the command line: an HTTP server (`url`, `headers`) or a local one (`command`, `args`, `env`). */
export function buildEntry(r: EntryRequest): Record<string, unknown> {
  const command = r.command?.filter((a, i) => i > 0 || a !== '')
  if (r.url && command?.length) throw new UsageError('give either --url (an HTTP server) or a command after -- (a local server), not both')
  if (!r.url && !command?.length) throw new UsageError('give --url URL for an HTTP server, or the command after -- for a local one (`gw add files -- npx -y @modelcontextprotocol/server-filesystem .`)')
  if (r.url) {
    if (r.env?.length) throw new UsageError('--env is for local (command) servers; an HTTP server takes --header')
    const headers = pairs(r.headers, ':', 'header', '"Name: value"')
    return headers ? {url: r.url, headers} : {url: r.url}
  }
  if (r.headers?.length) throw new UsageError('--header is for HTTP servers; a local server takes --env')
  const [cmd, ...args] = command!
  const env = pairs(r.env, '=', '--env', 'KEY=VALUE')
  return {command: cmd, ...(args.length > 0 ? {args} : {}), ...(env ? {env} : {})}
}

/**
 * Values written in clear that look like credentials: an Authorization-like header or an env
 * value without `${VAR}`. They still work; the user is told they now sit in the file.
 */
export function literalSecrets(entry: Record<string, unknown>): string[] {
  const found: string[] = []
  const headers = (entry.headers ?? {}) as Record<string, string>
  for (const [k, v] of Object.entries(headers)) if (/authorization|token|key|secret/i.test(k) && !VARIABLE.test(v)) found.push(`header ${k}`)
  const env = (entry.env ?? {}) as Record<string, string>
  for (const [k, v] of Object.entries(env)) if (/token|key|secret|password/i.test(k) && !VARIABLE.test(v)) found.push(`env ${k}`)
  return found
}

/** The entry as it may be shown: URL masked, header and env values without a `${VAR}` replaced by `***`. */
export function shownEntry(entry: Record<string, unknown>): Record<string, unknown> {
  const hide = (map: unknown) => Object.fromEntries(Object.entries((map ?? {}) as Record<string, string>).map(([k, v]) => [k, VARIABLE.test(v) ? v : '***']))
  const out: Record<string, unknown> = {...entry}
  if (typeof entry.url === 'string') out.url = maskUrl(entry.url)
  if (entry.headers) out.headers = hide(entry.headers)
  if (entry.env) out.env = hide(entry.env)
  return out
}
