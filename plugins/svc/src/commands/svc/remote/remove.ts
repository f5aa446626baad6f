import {Args, Flags} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

export default class SvcRemoteRemove extends ToolkitCommand<typeof SvcRemoteRemove> {
  static args = {name: Args.string({description: 'Remote name', required: true})}
  static description = 'Stop replicating to a Git remote (the remote repository itself is left as it is)'
  static examples = ['<%= config.bin %> <%= command.id %> backup --data-dir ./data']
  static flags = {
    'data-dir': Flags.string({default: './data', description: 'Data directory'}),
  }

  public async run(): Promise<void> {
    const {removeRemote} = await import('../../../ops/remotes.js')
    const r = await removeRemote({dataDir: this.flags['data-dir'], name: this.args.name})
    this.out.record({...r, removed: true}, `remote ${r.name} removed`)
  }
}
