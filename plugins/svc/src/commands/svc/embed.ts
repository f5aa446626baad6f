import {Flags} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

export default class SvcEmbed extends ToolkitCommand<typeof SvcEmbed> {
  static description = `Serve one data directory to a parent process over stdin/stdout (the language bindings' embedded mode)

Prints a ready line, then answers one JSON request per line with one JSON response per line, matched by id (docs/svc-embed-protocol.md). Opens no port. Exits 0 when stdin closes, after flushing the write-ahead log into Git. Like the server, it refuses a data directory another process holds.`
  static examples = [
    `printf '%s\\n' '{"id":1,"op":"put","params":{"doc":{"id":"users:1","name":"Ada"}}}' '{"id":2,"op":"get","params":{"id":"users:1"}}' | <%= config.bin %> <%= command.id %> --data-dir ./data`,
    '<%= config.bin %> <%= command.id %> --data-dir /var/lib/svc --log-level info',
  ]
  static flags = {
    'data-dir': Flags.string({default: './data', description: 'Data directory'}),
    'log-level': Flags.option({default: 'warn' as const, description: 'Least severe log level written to stderr', options: ['debug', 'info', 'warn', 'error'] as const})(),
  }

  public async run(): Promise<void> {
    const {runEmbedded} = await import('../../embed/session.js')
    await runEmbedded({dataDir: this.flags['data-dir'], logLevel: this.flags['log-level'], version: this.config.pjson.version})
  }
}
