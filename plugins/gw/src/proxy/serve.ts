import {InputError, type TokenStore, UsageError} from '@toolkit/kit'

import type {AuditEntry} from './aggregator.js'

import type {User} from './acl.js'
import type {ServersConfig} from '../client/servers-file.js'
import {buildProxyAuth, type ProxyAuth} from './server-auth.js'
import type {AsStore} from './as-store.js'
import {DEFAULT_LIMITS} from './http-server.js'
import {changedServers, idleTimeouts} from './server-options.js'
import {sharedStoreOptions} from './store-options.js'
import {type Connector, UpstreamPool, type UpstreamStatus} from './upstreams.js'

export interface ServeRequest {
  /** Append one JSON line per tools/call (who, which tool, decision, rule, outcome, time) to this file, mode 0600. */
  auditFile?: string
  config: ServersConfig
  /** Opens an upstream session; the gw client's `connectServer` when omitted. */
  connector?: Connector
  env?: Record<string, string | undefined>
  /** Serve over HTTP on this address; stdio when omitted. */
  http?: {host: string; limits?: Partial<import('./http-server.js').SessionLimits>; maxBodyBytes?: number; net?: Partial<import('@toolkit/kit').NetLimits>; port: number}
  /** Allow binding beyond loopback with requests accepted anonymously (`--insecure`). */
  insecure?: boolean
  log: (message: string) => void
  pingIntervalMs?: number
  /** Longest wait for one upstream connection, and for a down upstream within a call (`--connect-timeout`). */
  connectTimeoutMs?: number
  /** Where `oauth_as` keeps clients and refresh tokens across restarts (unless `oauthAs.stateFile` says otherwise); memory only when omitted. */
  oauthStateFile?: string
  /** Roles of the stdio user (ACL still applies to a local client). */
  stdioRoles?: string[]
  store: TokenStore
}

export interface RunningProxy {
  close(): Promise<void>
  /**
   * Applies a new configuration (SIGHUP): servers added, removed or changed are started, stopped
   * or restarted, providers and the ACL replaced; unchanged servers keep their sessions. A
   * configuration that does not validate is refused (the error is thrown) and the old one stays.
   */
  reload(config: ServersConfig): Promise<{added: string[]; changed: string[]; removed: string[]}>
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
/** The checked parts of a configuration: authentication, ACL and per-server idle times. */
function validate(r: ServeRequest, config: ServersConfig): {auth: ProxyAuth; idle: Map<string, number>} {
  const auth: ProxyAuth = buildProxyAuth(config.raw, {env: r.env, file: config.file, oauthStateFile: r.oauthStateFile})
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
  return {auth, idle: idleTimeouts(config)}
}

export async function startServe(r: ServeRequest): Promise<RunningProxy> {
  let current = r.config
  const checked = validate(r, current)
  let {idle} = checked
  const {auth} = checked
  for (const w of auth.warnings) r.log(`WARNING: ${w}`)
  const names = Object.keys(r.config.servers)
  if (names.length === 0) r.log('WARNING: no servers configured: the proxy serves no tools (see docs/gw-proxy.md)')
  let connect = r.connector
  if (!connect) {
    const {connectServer} = await import('../client/connect.js')
    // Reads the configuration in force: a reload changes what a (re)connection dials.
    connect = (name, signal) =>
      connectServer(name, current.servers[name], {env: r.env, interactive: false, log: (m) => r.log(`upstream ${name}: ${m}`), signal, tokenStore: r.store})
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
  const storeOptions = sharedStoreOptions(r.config, r.env ?? process.env)
  let redis: import('ioredis').Redis | undefined
  let asStore: AsStore | undefined
  let sharedRate: import('./shared-rate.js').SharedRateWindow | undefined
  let sharedAddressRate: import('./shared-rate.js').SharedRateWindow | undefined
  let sharedRegistrations: import('./shared-registrations.js').SharedRegistrationLimits | undefined
  let sharedSessions: import('./shared-sessions.js').SharedSessionCounts | undefined
  if (storeOptions) {
    const {connectRedis, RedisAsStore} = await import('./as-store-redis.js')
    try {
      redis = await connectRedis(storeOptions, r.log)
    } catch (error) {
      throw new InputError(`serverAuth.store: ${(error as Error).message}`, {code: 'store_unreachable', file: r.config.file})
    }
    if (auth.oauthAs) asStore = new RedisAsStore(redis, storeOptions.prefix, auth.oauthAs.registration.unusedTtlSeconds)
    if (r.http) {
      const {SharedSessionCounts} = await import('./shared-sessions.js')
      sharedSessions = new SharedSessionCounts(redis, storeOptions.prefix)
    }
    if (auth.oauthAs && r.http) {
      const {SharedRegistrationLimits} = await import('./shared-registrations.js')
      sharedRegistrations = new SharedRegistrationLimits(redis, storeOptions.prefix, auth.oauthAs.registration)
    }
    const rate = r.http?.limits?.subjectRate ?? DEFAULT_LIMITS.subjectRate
    const addressRate = r.http?.limits?.addressRate ?? DEFAULT_LIMITS.addressRate
    if (r.http && (rate > 0 || addressRate > 0)) {
      const {SharedRateWindow} = await import('./shared-rate.js')
      // The same burst a single process allows (twice the rate), over all replicas in a one-second window.
      if (rate > 0) sharedRate = new SharedRateWindow(redis, storeOptions.prefix, rate * 2, r.log)
      if (addressRate > 0) sharedAddressRate = new SharedRateWindow(redis, `${storeOptions.prefix}address:`, addressRate * 2, r.log)
    }
  }
  const closeStore = async () => {
    sharedRate?.close()
    sharedAddressRate?.close()
    sharedSessions?.close()
    // Give the last writes (session counts, the heartbeat's removal) a moment to leave.
    await redis?.quit().catch(() => redis?.disconnect())
  }
  const pool = new UpstreamPool(names, {connect, connectTimeoutMs: r.connectTimeoutMs, idleMs: (name) => idle.get(name), log: r.log, pingIntervalMs: r.pingIntervalMs, toolAccess: auth.toolAccess})
  await pool.start()
  let apply: (next: ProxyAuth) => void = () => {}
  const oauthAsOf = (c: ServersConfig) => {
    const sa = c.raw.serverAuth as {oauthAs?: unknown; store?: unknown} | undefined
    return JSON.stringify([sa?.oauthAs ?? null, sa?.store ?? null])
  }
  const reload: RunningProxy['reload'] = async (config) => {
    const next = validate(r, config)
    if (oauthAsOf(config) !== oauthAsOf(current)) {
      throw new InputError('serverAuth.oauthAs or serverAuth.store changed: the authorization server keeps its signing key and state for the life of the process, so restart the proxy to apply that', {
        code: 'config_reload',
        file: config.file,
      })
    }
    const before = Object.keys(current.servers)
    const after = Object.keys(config.servers)
    const changed = changedServers(current, config)
    current = config
    idle = next.idle
    apply(next.auth)
    for (const w of next.auth.warnings) r.log(`WARNING: ${w}`)
    await pool.reconfigure(after, changed, next.auth.toolAccess)
    return {added: after.filter((n) => !before.includes(n)), changed: [...changed], removed: before.filter((n) => !after.includes(n))}
  }
  if (r.http) {
    const {startHttpProxy} = await import('./http-server.js')
    try {
      const proxy = await startHttpProxy({asStore, audit, sharedAddressRate, sharedRate, sharedRegistrations, sharedSessions, auth, host: r.http.host, limits: r.http.limits, log: r.log, maxBodyBytes: r.http.maxBodyBytes, net: r.http.net, pool, port: r.http.port})
      apply = (next) => proxy.update(next)
      return {
        async close() {
          await proxy.close()
          await pool.stop()
          await closeAudit()
          await closeStore()
        },
        providers: auth.providers,
        reload,
        upstreams: pool.status(),
        url: proxy.url,
        warnings: auth.warnings,
      }
    } catch (error) {
      await pool.stop()
      await closeAudit()
      await closeStore()
      throw error
    }
  }
  const {createAggregatingServer, forwardPoolEvents} = await import('./aggregator.js')
  const {StdioServerTransport} = await import('@modelcontextprotocol/sdk/server/stdio.js')
  const user: User = {provider: 'stdio', roles: r.stdioRoles ?? [], subject: (r.env ?? process.env).USER || 'local'}
  const ctx = {acl: auth.acl, audit, pool}
  apply = (next) => {
    ctx.acl = next.acl
  }
  const server = await createAggregatingServer(ctx, user)
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
    await closeStore()
  }
  await server.connect(transport)
  return {close, providers: ['stdio'], reload, upstreams: pool.status(), warnings: auth.warnings}
}

/** Loopback addresses only a local process can reach. */
function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host)
}
