import {Args, Flags} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

export default class SvcRemoteAdd extends ToolkitCommand<typeof SvcRemoteAdd> {
  static args = {
    name: Args.string({description: 'Remote name', required: true}),
    url: Args.string({description: 'Git URL (a path, file://, git://, ssh or https)', required: true}),
  }
  static description = `Add a Git remote that a running server replicates every branch to

The server pushes after commits (checked every second), retrying with back-off when the remote is unreachable; GET /health (component replication) and toolkit svc diagnose show the sync state. A running server picks the remote up without a restart.`
  static examples = ['<%= config.bin %> <%= command.id %> backup /srv/git/svc-mirror.git --data-dir ./data', '<%= config.bin %> <%= command.id %> offsite git://10.0.0.5/svc.git --data-dir ./data']
  static flags = {
    'data-dir': Flags.string({default: './data', description: 'Data directory'}),
  }

  public async run(): Promise<void> {
    const {addRemote} = await import('../../../ops/remotes.js')
    const r = await addRemote({dataDir: this.flags['data-dir'], name: this.args.name, url: this.args.url})
    this.out.record({...r}, `remote ${r.name} added: ${r.url}`)
  }
}
