import {UsageError} from '@toolkit/kit'

import {type GwContext, findServer} from './context.js'
import {AuthError} from './errors.js'
import {type ServerRecord, serverState} from './servers.js'
import {maskUrl} from './url-mask.js'

export interface LoginOptions {
  /** A token given on stdin (`--token-stdin`): saved and checked instead of the browser flow. */
  token?: string
}

export interface LoginRecord {
  [k: string]: unknown
  auth: string
  server: string
  url?: string
}

function httpUrl(ctx: GwContext, name: string): string {
  const entry = findServer(ctx, name)
  if (!entry.url) throw new UsageError(`server "${name}" is a local process (command); it has no login`, 'not_http')
  return entry.url
}

/**
 * Signs in afresh: the saved token is dropped (the client registration is kept, so the
 * authorization server sees the same client) and a session is opened, which runs the OAuth
 * flow or the manual prompt on the server's 401. With a token, that token is saved and checked.
 */
export async function login(ctx: GwContext, name: string, options: LoginOptions = {}): Promise<LoginRecord> {
  const url = httpUrl(ctx, name)
  const previous = (await ctx.store.get(url)).token
  await ctx.store.remove(url, 'token')
  if (options.token !== undefined) {
    const token = options.token.trim()
    if (!token) throw new UsageError('no token on standard input', 'invalid_token')
    await ctx.store.setToken(url, {access_token: token, token_type: 'Bearer'})
  }
  const {withServer} = await import('./context.js')
  try {
    // With a given token, nobody is asked anything: a rejected token is an error, not a prompt.
    const auth = await withServer({...ctx, interactive: options.token === undefined && ctx.interactive}, name, async (c) => c.auth)
    return {auth, server: name, url: maskUrl(url)}
  } catch (error) {
    // A failed login leaves the store as it was.
    if (options.token !== undefined) await ctx.store.remove(url, 'token')
    if (previous && !(await ctx.store.get(url)).token) await ctx.store.setToken(url, previous)
    if (options.token !== undefined && error instanceof AuthError) {
      throw new AuthError(`server "${name}" rejected the given token (401); nothing was saved`, 'auth_rejected', error)
    }
    throw error
  }
}

export interface LogoutRecord {
  [k: string]: unknown
  removed: boolean
  server: string
  url: string
}

/** Forgets the saved token and client registration of one server, or of every configured server. */
export async function logout(ctx: GwContext, name: string | undefined): Promise<LogoutRecord[]> {
  const names = name === undefined ? Object.keys(ctx.config.servers).filter((n) => ctx.config.servers[n].url) : [name]
  const out: LogoutRecord[] = []
  for (const n of names) {
    const url = httpUrl(ctx, n)
    const {client, token} = await ctx.store.get(url)
    if (client || token) await ctx.store.remove(url, 'all')
    out.push({removed: Boolean(client || token), server: n, url: maskUrl(url)})
  }
  return out
}

/** The auth state of one or every configured server (no network, no secrets). */
export async function status(ctx: GwContext, name: string | undefined): Promise<ServerRecord[]> {
  const names = name === undefined ? Object.keys(ctx.config.servers) : [name]
  return Promise.all(names.map((n) => serverState(ctx, n, findServer(ctx, n))))
}
