import {Args, Flags} from '@oclif/core'
import {loadConfig, ToolkitCommand} from '@toolkit/kit'

export default class SvcServer extends ToolkitCommand<typeof SvcServer> {
  static args = {
    restPort: Args.integer({description: 'REST port (same as --http-port)', max: 65_535, min: 0, required: false}),
    redisPort: Args.integer({description: 'Redis-protocol port (same as --redis-port)', max: 65_535, min: 0, required: false}),
  }
  static description = `Run the svc database: REST, Redis-protocol and PostgreSQL-protocol servers over one Git-versioned data directory

Reads config.edn from the current directory when present (see docs/svc.md for its keys); TOOLKIT_SVC_* variables override it and flags override both (toolkit config show svc explains every value). Stops cleanly on SIGTERM or SIGINT: stops accepting, finishes in-flight writes, flushes the write-ahead log to Git and exits 0.`
  static examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --data-dir /var/lib/svc --http-port 3000 --disable-sql',
    '<%= config.bin %> <%= command.id %> 3000 6379 --config /etc/svc/config.edn --log-level debug',
    '<%= config.bin %> <%= command.id %> --http-port 0 --disable-redis --disable-sql --format json',
    '<%= config.bin %> <%= command.id %> --data-dir /var/lib/svc-replica --http-port 3001 --follow /srv/git/svc.git',
    '<%= config.bin %> <%= command.id %> --data-dir /var/lib/svc --command compact',
    '<%= config.bin %> <%= command.id %> --data-dir /var/lib/svc --command remove-branch --name old-feature',
  ]
  static flags = {
    command: Flags.option({description: 'Run one maintenance command instead of serving (the spec\'s --command compact | remove-branch --name B)', options: ['compact', 'remove-branch'] as const})(),
    name: Flags.string({description: 'Branch for --command remove-branch'}),
    config: Flags.string({description: 'Configuration file (EDN). Default: config.edn in the current directory, if present'}),
    'data-dir': Flags.string({description: 'Data directory (default ./data)'}),
    'disable-redis': Flags.boolean({description: 'Do not start the Redis-protocol server'}),
    'disable-rest': Flags.boolean({description: 'Do not start the REST server'}),
    'disable-sql': Flags.boolean({description: 'Do not start the PostgreSQL-protocol server'}),
    'disable-ui': Flags.boolean({description: 'Do not serve the web console at /ui on the REST port'}),
    follow: Flags.string({description: 'Serve read-only, following this Git remote (a remote name of the data directory or a URL): its branches are fetched every second and writes are refused'}),
    host: Flags.string({description: 'Address every server binds to (default 127.0.0.1; 0.0.0.0 for all interfaces)'}),
    'http-port': Flags.integer({description: 'REST port (default 3000; 0 picks a free port)', max: 65_535, min: 0}),
    'log-format': Flags.option({description: 'Log line format on stderr', options: ['json', 'text'] as const})(),
    'log-level': Flags.option({description: 'Least severe log level shown', options: ['debug', 'info', 'warn', 'error'] as const})(),
    'memory-limit': Flags.integer({description: 'Memory limit in MB: sizes the read cache and the memory health check', min: 16}),
    'pg-port': Flags.integer({description: 'PostgreSQL-protocol port (default 5432)', max: 65_535, min: 0}),
    'redis-port': Flags.integer({description: 'Redis-protocol port (default 6379)', max: 65_535, min: 0}),
  }

  public async run(): Promise<void> {
    const {loadServerConfig} = await import('../../servers/config-edn.js')
    const {runServer} = await import('../../servers/server-process.js')
    const {config, warnings} = await loadServerConfig(this.flags, {redisPort: this.args.redisPort, restPort: this.args.restPort}, process.cwd(), (request) => loadConfig(this.config, request))
    for (const w of warnings) this.out.warn(w)
    if (this.flags.command) {
      const {runMaintenance} = await import('../../ops/maintenance.js')
      const r = await runMaintenance(this.flags.command, {dataDir: config.dataDir, name: this.flags.name})
      return this.out.record(r.record, r.text)
    }
    await runServer(config, {
      onReady: (info) => {
        const parts = [info.rest === undefined ? '' : `REST http://${config.rest.host}:${info.rest}`, info.redis === undefined ? '' : `Redis ${config.redis.host}:${info.redis}`, info.pg === undefined ? '' : `PostgreSQL ${config.postgresql.host}:${info.pg}`].filter(Boolean)
        this.out.record({...info}, `svc listening: ${parts.join(', ') || 'no protocol enabled'} (data ${info.dataDir}, ${info.documents} documents)`)
      },
      version: this.config.pjson.version,
    })
  }
}
