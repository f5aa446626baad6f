import {InputError, type TokenStore, UsageError} from '@toolkit/kit'

import type {AuditEntry} from './aggregator.js'

import type {User} from './acl.js'
import type {ServersConfig} from '../client/config.js'
import {buildProxyAuth, type ProxyAuth} from './config.js'
import {type Connector, UpstreamPool, type UpstreamStatus} from './upstreams.js'

export interface ServeRequest {
  /** Append one JSON line per tools/call (who, which tool, decision, rule, outcome, time) to this file, mode 0600. */
  auditFile?: string
  config: ServersConfig
  /** Opens an upstream session; the gw client's `connectServer` when omitted. */
  connector?: Connector
  env?: Record<string, string | undefined>
  /** Serve over HTTP on this address; stdio when omitted. */
  http?: {host: string; limits?: Partial<import('./http-server.js').SessionLimits>; maxBodyBytes?: number; port: number}
  /** Allow binding beyond loopback with requests accepted anonymously (`--insecure`). */
  insecure?: boolean
  log: (message: string) => void
  pingIntervalMs?: number
  /** Where `oauth_as` keeps clients and refresh tokens across restarts (unless `oauthAs.stateFile` says otherwise); memory only when omitted. */
  oauthStateFile?: string
  /** Roles of the stdio user (ACL still applies to a local client). */
  stdioRoles?: string[]
  store: TokenStore
}

export interface RunningProxy {
  close(): Promise<void>
  providers: string[]
  upstreams: UpstreamStatus[]
  /** The MCP endpoint (HTTP mode). */
  url?: string
  warnings: string[]
}

/**
 * `gw serve`: validates serverAuth (refusing to start on anything unsafe), connects every
 * configured server through the gw client, and serves the aggregated tools over HTTP or stdio.
 */
export async function startServe(r: ServeRequest): Promise<RunningProxy> {
  const auth: ProxyAuth = buildProxyAuth(r.config.raw, {env: r.env, file: r.config.file, oauthStateFile: r.oauthStateFile})
  if (r.http && !isLoopback(r.http.host) && auth.providers.includes('none')) {
    if (!r.insecure) {
      throw new UsageError(
        `refusing to serve on ${r.http.host} without authentication: anyone who can reach that address could call every tool. ` +
          'Configure serverAuth.providers (see docs/gw-proxy.md), bind to 127.0.0.1, or pass --insecure if the network itself is trusted',
        'insecure_bind',
      )
    }
    auth.warnings.push(`serving on ${r.http.host} without authentication (--insecure): every request is accepted anonymously.`)
  }
  for (const w of auth.warnings) r.log(`WARNING: ${w}`)
  const names = Object.keys(r.config.servers)
  if (names.length === 0) r.log('WARNING: no servers configured: the proxy serves no tools (see docs/gw-proxy.md)')
  let connect = r.connector
  if (!connect) {
    const {connectServer} = await import('../client/connect.js')
    connect = (name, signal) =>
      connectServer(name, r.config.servers[name], {env: r.env, interactive: false, log: (m) => r.log(`upstream ${name}: ${m}`), signal, tokenStore: r.store})
  }
  let audit: ((e: AuditEntry) => void) | undefined
  let auditStream: import('node:fs').WriteStream | undefined
  if (r.auditFile) {
    const {createWriteStream} = await import('node:fs')
    const stream = createWriteStream(r.auditFile, {flags: 'a', mode: 0o600})
    await new Promise<void>((resolve, reject) => {
      stream.once('open', () => resolve())
      stream.once('error', (error) => reject(new InputError(`cannot open the audit log (${error.message})`, {code: 'audit_unwritable', file: r.auditFile})))
    })
    stream.on('error', (error) => r.log(`audit log ${r.auditFile}: ${error.message}`))
    auditStream = stream
    audit = (e) => stream.write(`${JSON.stringify(e)}\n`)
  }
  const closeAudit = () => new Promise<void>((resolve) => (auditStream ? auditStream.end(resolve) : resolve()))
  const pool = new UpstreamPool(names, {connect, log: r.log, pingIntervalMs: r.pingIntervalMs, toolAccess: auth.toolAccess})
  await pool.start()
  if (r.http) {
    const {startHttpProxy} = await import('./http-server.js')
    try {
      const proxy = await startHttpProxy({audit, auth, host: r.http.host, limits: r.http.limits, log: r.log, maxBodyBytes: r.http.maxBodyBytes, pool, port: r.http.port})
      return {
        async close() {
          await proxy.close()
          await pool.stop()
          await closeAudit()
        },
        providers: auth.providers,
        upstreams: pool.status(),
        url: proxy.url,
        warnings: auth.warnings,
      }
    } catch (error) {
      await pool.stop()
      await closeAudit()
      throw error
    }
  }
  const {createAggregatingServer, forwardPoolEvents} = await import('./aggregator.js')
  const {StdioServerTransport} = await import('@modelcontextprotocol/sdk/server/stdio.js')
  const user: User = {provider: 'stdio', roles: r.stdioRoles ?? [], subject: (r.env ?? process.env).USER || 'local'}
  const server = await createAggregatingServer({acl: auth.acl, audit, pool}, user)
  const transport = new StdioServerTransport()
  const stopEvents = forwardPoolEvents(pool, () => [server])
  let closed = false
  const close = async () => {
    if (closed) return
    closed = true
    stopEvents()
    await server.close().catch(() => {})
    await pool.stop()
    await closeAudit()
  }
  await server.connect(transport)
  return {close, providers: ['stdio'], upstreams: pool.status(), warnings: auth.warnings}
}

/** Loopback addresses only a local process can reach. */
function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host)
}
