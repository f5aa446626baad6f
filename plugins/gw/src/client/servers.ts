import {isEmptyCredential, type ServerEntry, substituteEnv, unsetVariables} from './servers-file.js'
import type {GwContext} from './context.js'
import {isExpired} from './credentials.js'
import {maskUrl} from './url-mask.js'

export type AuthState = 'expired' | 'header' | 'none' | 'process' | 'refreshable' | 'token'

export interface ServerRecord {
  [k: string]: unknown
  auth: AuthState
  command?: string
  expires_at?: number
  name: string
  registered_client?: boolean
  transport: 'http' | 'stdio'
  unset_variables?: string[]
  url?: string
}

function configHeader(entry: ServerEntry, env: Record<string, string | undefined>): {unset: string[]; value?: string} {
  for (const [k, v] of Object.entries(entry.headers ?? {})) {
    if (k.toLowerCase() !== 'authorization') continue
    const value = substituteEnv(v, env)
    return {unset: unsetVariables(v, env), value: isEmptyCredential(value) ? undefined : value}
  }
  return {unset: []}
}

/** Auth state of one server from the config and the token store, without touching the network. */
export async function serverState(ctx: Pick<GwContext, 'env' | 'store'>, name: string, entry: ServerEntry): Promise<ServerRecord> {
  if (!entry.url) return {auth: 'process', command: [entry.command, ...(entry.args ?? [])].join(' '), name, transport: 'stdio'}
  const record: ServerRecord = {auth: 'none', name, transport: 'http', url: maskUrl(entry.url)}
  const header = configHeader(entry, ctx.env)
  if (header.unset.length > 0) record.unset_variables = header.unset
  const {client, token} = await ctx.store.get(entry.url)
  record.registered_client = Boolean(client?.client_id)
  if (token?.expires_at !== undefined) record.expires_at = token.expires_at
  if (header.value) record.auth = 'header'
  else if (token?.access_token) record.auth = isExpired(token) ? (token.refresh_token ? 'refreshable' : 'expired') : 'token'
  return record
}

const DESCRIBE: Record<AuthState, string> = {
  expired: 'token expired (sign in again)',
  header: 'Authorization header from config',
  none: 'not signed in',
  process: 'local process',
  refreshable: 'token expired (refreshes on next use)',
  token: 'signed in',
}

export function describeAuth(r: ServerRecord): string {
  let text = DESCRIBE[r.auth]
  if (r.auth === 'token' && r.expires_at) text += ` until ${new Date(r.expires_at * 1000).toISOString()}`
  if (r.unset_variables?.length) text += ` (unset: ${r.unset_variables.join(', ')})`
  return text
}

export async function listServers(ctx: Pick<GwContext, 'config' | 'env' | 'store'>): Promise<ServerRecord[]> {
  return Promise.all(Object.entries(ctx.config.servers).map(([name, entry]) => serverState(ctx, name, entry)))
}
