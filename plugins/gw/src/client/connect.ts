import type {Client} from '@modelcontextprotocol/sdk/client/index.js'
import type {Transport} from '@modelcontextprotocol/sdk/shared/transport.js'
import type {TokenStore} from '@toolkit/kit'

import {showAuthorizationUrl} from './browser.js'
import {resolveHeaders, resolveUrl, type ServerEntry, substituteEnv} from './servers-file.js'
import {type Credential, CredentialChain, type CredentialSource, authorizationHeader} from './credentials.js'
import {AuthError, UnreachableError} from './errors.js'
import {inquirerTokenPrompt, type TokenPrompt} from './manual-prompt.js'
import type {Challenge} from './oauth/flow.js'
import {maskUrl, scrubUrl} from './url-mask.js'
import {networkReason} from './network-reason.js'

export interface ConnectOptions {
  /** Environment for `${VAR}`, GW_OAUTH_* settings and child processes; process.env by default. */
  env?: Record<string, string | undefined>
  /** May a person be asked (browser sign-in, token prompt)? False in scripts and CI. */
  interactive: boolean
  log?: (msg: string) => void
  /** How the authorization URL reaches the user; the browser (or a printed URL) by default. */
  openUrl?: (url: string) => Promise<void>
  /** The manual token prompt; inquirer's masked input by default. */
  prompt?: TokenPrompt
  signal?: AbortSignal
  tokenStore: TokenStore
}

export interface Connection {
  /** Which credential the session uses: config header, saved, refreshed, OAuth, manual, none. */
  auth: CredentialSource | 'process'
  client: Client
  close(): Promise<void>
  /** Set for a Streamable HTTP session: how to send requests of one's own in it. */
  http?: HttpSession
}

/** What a caller needs to send its own requests in an established Streamable HTTP session. */
export interface HttpSession {
  /**
   * The headers of the client's latest POST as it went on the wire: servers.json headers, the
   * credential (the renewed one after a refresh), session id and protocol version.
   */
  headers(): Record<string, string>
  url: URL
}

const VERSION = '0.1.0'

async function newClient(): Promise<Client> {
  const {Client} = await import('@modelcontextprotocol/sdk/client/index.js')
  return new Client({name: 'toolkit-gw', version: VERSION}, {capabilities: {}})
}

function statusOf(error: unknown): number | undefined {
  const e = error as {code?: unknown; name?: unknown}
  return typeof e?.code === 'number' && e.code >= 100 ? e.code : undefined
}

interface Attempt {
  challenge: Challenge
  /** Once the session is up: a fresh Authorization value after a 401, or undefined to give up. */
  renew?: () => Promise<string | undefined>
  status?: number
}

/** One HTTP session attempt: Streamable HTTP, falling back to the legacy SSE transport. */
/**
 * Closes a session: a Streamable HTTP one is ended on the server too (DELETE with its session id,
 * as the MCP transport spec asks of a client that is done), so short-lived `gw call`s do not
 * leave open sessions counting against the user's limit on a `gw serve`. Bounded: a server that
 * does not answer cannot hold up the exit.
 */
async function closeSession(client: Client, transport: undefined | {terminateSession(): Promise<void>}): Promise<void> {
  if (transport) {
    await Promise.race([transport.terminateSession().catch(() => {}), new Promise((r) => setTimeout(r, 2000).unref())])
  }
  await client.close()
}

async function openHttp(url: string, headers: Record<string, string>, attempt: Attempt, signal?: AbortSignal): Promise<{client: Client; close: () => Promise<void>; http?: HttpSession}> {
  const {extractWWWAuthenticateParams} = await import('@modelcontextprotocol/sdk/client/auth.js')
  let authorization: string | undefined
  let lastPost: Headers | undefined
  let renewing: Promise<string | undefined> | undefined
  // Captures the 401 challenge (RFC 9728 `resource_metadata`, `scope`) the transport would otherwise
  // drop and, in an established session, renews the token once and repeats the request, so a
  // long-lived session (the proxy's upstreams) survives token expiry. Concurrent 401s share one
  // renewal; a request sent with an older token is simply repeated with the current one.
  const watch: typeof fetch = async (input, init) => {
    if (init?.method === 'POST') lastPost = new Headers(init.headers)
    const send = (value: string | undefined): Promise<Response> => {
      if (!value) return fetch(input, init)
      const h = new Headers(init?.headers)
      h.set('authorization', value)
      return fetch(input, {...init, headers: h})
    }
    const sentWith = authorization
    let res = await send(sentWith)
    if (res.status !== 401) return res
    attempt.status = 401
    const p = extractWWWAuthenticateParams(res)
    attempt.challenge = {resourceMetadataUrl: p.resourceMetadataUrl, scope: p.scope}
    if (!attempt.renew) return res
    let fresh = authorization === sentWith ? undefined : authorization
    if (!fresh) {
      const renew = attempt.renew
      renewing ??= renew()
        .catch(() => undefined)
        .finally(() => {
          renewing = undefined
        })
      fresh = await renewing
      if (fresh) authorization = fresh
    }
    if (fresh) {
      await res.body?.cancel().catch(() => {})
      res = await send(fresh)
    }
    return res
  }
  const {StreamableHTTPClientTransport} = await import('@modelcontextprotocol/sdk/client/streamableHttp.js')
  const client = await newClient()
  const transport = new StreamableHTTPClientTransport(new URL(url), {fetch: watch, requestInit: {headers}})
  try {
    await client.connect(transport, {signal})
    const http: HttpSession = {
      headers() {
        const h: Record<string, string> = {}
        lastPost?.forEach((v, k) => (h[k] = v))
        if (authorization) h.authorization = authorization
        return h
      },
      url: new URL(url),
    }
    return {client, close: () => closeSession(client, transport), http}
  } catch (error) {
    await client.close().catch(() => {})
    const status = statusOf(error)
    // 404/405 on the first POST: a server that only speaks the older HTTP+SSE transport.
    if (status !== 404 && status !== 405) throw error
    const {SSEClientTransport} = await import('@modelcontextprotocol/sdk/client/sse.js')
    const legacy = await newClient()
    const sse: Transport = new SSEClientTransport(new URL(url), {fetch: watch, requestInit: {headers}})
    try {
      await legacy.connect(sse, {signal})
      return {client: legacy, close: () => closeSession(legacy, undefined)}
    } catch (sseError) {
      await legacy.close().catch(() => {})
      throw attempt.status === 401 ? sseError : error
    }
  }
}

/** A failed connection in the user's terms; the URL shown masked, the upstream's reply body never quoted. */
function describeFailure(name: string, url: string, error: unknown): Error {
  if (error instanceof AuthError) return error
  const shown = maskUrl(url)
  const reason = networkReason(error)
  if (reason) return new UnreachableError(`cannot reach server "${name}" at ${shown}: ${reason}`, error)
  const status = statusOf(error)
  if (status) return new UnreachableError(`server "${name}" at ${shown} answered HTTP ${status}`, error)
  if ((error as Error)?.name === 'AbortError') return new AuthError('cancelled', 'cancelled', error)
  const message = scrubUrl(firstLine((error as Error)?.message ?? String(error)), url, shown)
  return new UnreachableError(`server "${name}" at ${shown} failed to start an MCP session: ${message}`, error)
}

/** The first line, at most 200 characters: enough to say what went wrong, too short to carry a page. */
function firstLine(text: string): string {
  const line = text.split('\n')[0]
  return line.length > 200 ? `${line.slice(0, 200)}…` : line
}

/** An error raised inside an established session, in the user's terms. */
export function describeSessionError(name: string, error: unknown): unknown {
  if (statusOf(error) === 401) {
    return new AuthError(`server "${name}" stopped accepting the credential during the session (401); run \`toolkit gw auth login ${name}\``, 'auth_rejected', error)
  }
  const reason = networkReason(error)
  if (reason) return new UnreachableError(`lost the connection to server "${name}": ${reason}`, error)
  return error
}

async function connectStdio(name: string, entry: ServerEntry, env: Record<string, string | undefined>): Promise<Connection> {
  const {getDefaultEnvironment, StdioClientTransport} = await import('@modelcontextprotocol/sdk/client/stdio.js')
  const childEnv: Record<string, string> = {...getDefaultEnvironment()}
  for (const [k, v] of Object.entries(entry.env ?? {})) childEnv[k] = substituteEnv(v, env)
  const transport = new StdioClientTransport({
    args: entry.args ?? [],
    command: entry.command as string,
    cwd: typeof entry.cwd === 'string' ? entry.cwd : undefined,
    env: childEnv,
    stderr: 'pipe',
  })
  // The child's stderr is kept (last lines) for error messages instead of interleaving with ours.
  const tail: string[] = []
  transport.stderr?.on('data', (chunk: Buffer) => {
    tail.push(...chunk.toString('utf8').split('\n').filter(Boolean))
    tail.splice(0, Math.max(0, tail.length - 5))
  })
  const client = await newClient()
  try {
    await client.connect(transport)
  } catch (error) {
    await client.close().catch(() => {})
    const detail = tail.length > 0 ? ` (stderr: ${tail.join(' | ')})` : ''
    throw new UnreachableError(`server "${name}": cannot start \`${entry.command}\`: ${(error as Error).message}${detail}`, error)
  }
  return {auth: 'process', client, close: () => client.close()}
}

/**
 * Connects to one configured server with the spec's credential order: the config's Authorization
 * header, the saved token (refreshed when expired), the OAuth flow on 401, and the manual
 * prompt when registration fails (only when `interactive`). `command` entries run as a process.
 */
export async function connectServer(name: string, entry: ServerEntry, options: ConnectOptions): Promise<Connection> {
  const env = options.env ?? process.env
  const log = options.log ?? (() => {})
  if (!entry.url) return connectStdio(name, entry, env)
  // The URL as written (with `${NAME}`) keys the token store; the resolved one is only dialled.
  const key = entry.url
  const url = resolveUrl(name, entry, env)
  const headers = resolveHeaders(entry, env)
  const configAuth = Object.keys(headers).some((h) => h.toLowerCase() === 'authorization')

  const attempt = (): Attempt => ({challenge: {}})
  if (configAuth) {
    const a = attempt()
    try {
      const {client, close, http} = await openHttp(url, headers, a, options.signal)
      return {auth: 'config', client, close, http}
    } catch (error) {
      if (a.status === 401) {
        throw new AuthError(`server "${name}" rejected the Authorization header from servers.json (401); fix the token, or remove the header to use OAuth`, 'auth_rejected', error)
      }
      throw describeFailure(name, url, error)
    }
  }

  const chain = new CredentialChain(url, {
    env,
    storeKey: key,
    interactive: options.interactive,
    log,
    openUrl: options.openUrl ?? ((u) => showAuthorizationUrl(u, log, env)),
    prompt: options.prompt ?? inquirerTokenPrompt,
    serverName: name,
    signal: options.signal,
    store: options.tokenStore,
  })
  let credential: Credential = await chain.initial()
  // At most: saved token, refreshed token, fresh sign-in; bounded so a misbehaving server cannot loop us.
  for (let round = 0; round < 4; round++) {
    const a = attempt()
    const sent = credential.token ? {...headers, Authorization: authorizationHeader(credential.token)} : headers
    try {
      const {client, close, http} = await openHttp(url, sent, a, options.signal)
      a.renew = async () => {
        const fresh = credential.token ? await chain.renewInSession(credential.token) : undefined
        if (!fresh) return undefined
        credential = {source: 'refreshed', token: fresh}
        return authorizationHeader(fresh)
      }
      return {auth: credential.source, client, close, http}
    } catch (error) {
      if (a.status !== 401) throw describeFailure(name, url, error)
      credential = await chain.unauthorized(a.challenge, credential)
    }
  }
  throw new AuthError(`server "${name}" keeps answering 401`, 'auth_rejected')
}
