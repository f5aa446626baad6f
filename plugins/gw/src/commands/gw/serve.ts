import {Flags} from '@oclif/core'
import {ToolkitCommand, UsageError} from '@toolkit/kit'

import {clientFlags, commandContext} from '../../client/cli.js'

export default class GwServe extends ToolkitCommand<typeof GwServe> {
  static description = `Serve the tools of every configured server as one MCP server

Tools are named <server>__<tool>. With --http, one Streamable HTTP endpoint at /mcp, protected by
serverAuth.providers (none, bearer, forwarded, oauth_as) and filtered by serverAuth.acl; without it,
MCP over stdio for a local client. Runs until interrupted; SIGHUP (or, with --watch, a change of
the file) reloads the configuration without dropping sessions of unchanged servers. See
docs/gw-proxy.md and docs/gw-acl.md.`
  static examples = [
    '<%= config.bin %> <%= command.id %> --http',
    '<%= config.bin %> <%= command.id %> --http --host 0.0.0.0 --port 8443 --config /etc/gw/servers.json',
    '<%= config.bin %> <%= command.id %> --http --max-sessions-per-user 20 --rate-limit 50',
    '<%= config.bin %> <%= command.id %> --http --port 0 --format json',
    '<%= config.bin %> <%= command.id %> --http --audit-log /var/log/gw-audit.jsonl',
    '<%= config.bin %> <%= command.id %> --role dev   # stdio, for a local MCP client',
    '<%= config.bin %> <%= command.id %> --http --watch   # reload when servers.json changes (or: kill -HUP <pid>)',
  ]
  static flags = {
    ...clientFlags,
    'audit-log': Flags.string({description: 'append one JSON line per tools/call (user, tool, decision, rule, outcome, duration; never arguments) to this file', helpValue: '<file>'}),
    'connect-timeout': Flags.integer({description: 'seconds to wait for an upstream connection, and for a down upstream within a call before answering the outage', min: 1}),
    'health-interval': Flags.integer({description: 'seconds between pings of each upstream, so one that died is noticed and its tools hidden', min: 1}),
    host: Flags.string({description: 'address to listen on (HTTP mode; default 127.0.0.1)'}),
    http: Flags.boolean({default: false, description: 'serve Streamable HTTP at /mcp instead of stdio'}),
    insecure: Flags.boolean({description: 'allow --host beyond loopback with no authentication provider (every request anonymous)'}),
    'max-sessions': Flags.integer({description: 'open sessions in total; when full the least recently used is closed (HTTP mode)', min: 1}),
    'max-sessions-per-user': Flags.integer({description: 'open sessions per user; past it initialize gets 429 (HTTP mode)', min: 1}),
    'rate-limit': Flags.integer({description: 'requests per second per user on /mcp, burst twice that; 429 + Retry-After past it; 0 = off (HTTP mode)', min: 0}),
    'rate-limit-address': Flags.integer({description: 'requests per second per client address on /mcp, burst twice that; 0 = off (HTTP mode)', min: 0}),
    'session-idle': Flags.integer({description: 'seconds after which an idle session is closed (HTTP mode)', min: 1}),
    'max-body': Flags.integer({description: 'largest accepted request body in bytes (HTTP mode)', min: 1024}),
    port: Flags.integer({description: 'port to listen on, 0 for any free port (HTTP mode; default 8080)', max: 65_535, min: 0}),
    watch: Flags.boolean({default: false, description: 'reload the configuration when its file changes (SIGHUP always reloads)'}),
    role: Flags.string({description: 'a role of the local user in stdio mode (repeatable); the ACL applies to it', multiple: true}),
  }

  public async run(): Promise<void> {
    const {flags} = this
    if (!flags.http && (flags.port !== undefined || flags.host !== undefined)) throw new UsageError('--host and --port need --http')
    const ctx = await commandContext(this.config, this.out, flags)
    const [{startServe}, {gwConfigDir, loadServersConfig}, {reloadOnSignal}, {join}, {loadServeSettings}] = await Promise.all([
      import('../../proxy/serve.js'),
      import('../../client/servers-file.js'),
      import('../../proxy/reload.js'),
      import('node:path'),
      import('../../proxy/serve-config.js'),
    ])
    // Defaults, toolkit's config files, the "serve" object of servers.json and TOOLKIT_GW_* (see `toolkit config show gw`).
    const settings = await loadServeSettings(this.config, ctx.config, {
      auditLog: flags['audit-log'],
      connectTimeout: flags['connect-timeout'],
      healthInterval: flags['health-interval'],
      host: flags.host,
      insecure: flags.insecure,
      maxBody: flags['max-body'],
      maxSessions: flags['max-sessions'],
      maxSessionsPerUser: flags['max-sessions-per-user'],
      port: flags.port,
      rateLimit: flags['rate-limit'],
      rateLimitAddress: flags['rate-limit-address'],
      sessionIdle: flags['session-idle'],
    })
    const proxy = await startServe({
      auditFile: settings.auditLog || undefined,
      config: ctx.config,
      env: ctx.env,
      http: flags.http
        ? {
            host: settings.host,
            limits: {
              addressRate: settings.rateLimitAddress,
              maxSessions: settings.maxSessions,
              maxSessionsPerSubject: settings.maxSessionsPerUser,
              sessionIdleMs: settings.sessionIdle * 1000,
              subjectRate: settings.rateLimit,
            },
            maxBodyBytes: settings.maxBody,
            net: {headerTimeoutMs: settings.headerTimeoutMs, idleTimeoutMs: settings.idleTimeoutMs, maxConnections: settings.maxConnections},
            port: settings.port,
          }
        : undefined,
      insecure: settings.insecure,
      oauthStateFile: join(gwConfigDir(ctx.env), 'oauth-as-state.json'),
      pingIntervalMs: settings.healthInterval * 1000,
      connectTimeoutMs: settings.connectTimeout * 1000,
      log: (m) => (m.startsWith('WARNING') ? this.out.warn(m.slice(9)) : this.out.log(m)),
      stdioRoles: flags.role,
      store: ctx.store,
    })
    // Listening for reloads before the listening record: whoever reads it may change the file at once.
    const stopReload = reloadOnSignal({
      load: () => loadServersConfig({env: ctx.env, file: flags.config ?? ctx.config.file}),
      proxy,
      report: (r) =>
        r.ok
          ? this.out.record(
              {added: r.added, changed: r.changed, event: 'reloaded', removed: r.removed},
              `configuration reloaded (added: ${r.added.join(', ') || 'none'}; changed: ${r.changed.join(', ') || 'none'}; removed: ${r.removed.join(', ') || 'none'})`,
            )
          : this.out.warn(`configuration reload refused, the previous configuration stays in force: ${r.error}`),
      watchFile: flags.watch ? ctx.config.file : undefined,
    })
    if (flags.http) {
      const up = proxy.upstreams.filter((u) => u.state === 'up').length
      this.out.record(
        {event: 'listening', providers: proxy.providers, upstreams: proxy.upstreams, url: proxy.url, warnings: proxy.warnings},
        `gw proxy listening on ${proxy.url} (providers: ${proxy.providers.join(', ')}; ${up}/${proxy.upstreams.length} servers up)`,
      )
    }
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve)
      process.once('SIGTERM', resolve)
      if (!flags.http) process.stdin.once('end', resolve)
    })
    stopReload()
    await proxy.close()
  }
}
