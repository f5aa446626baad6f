import {Flags} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

export default class SvcRemoteList extends ToolkitCommand<typeof SvcRemoteList> {
  static description = 'List the Git remotes the server replicates to'
  static examples = ['<%= config.bin %> <%= command.id %> --data-dir ./data --format json']
  static flags = {
    'data-dir': Flags.string({default: './data', description: 'Data directory'}),
  }

  public async run(): Promise<void> {
    const {listRemotes} = await import('../../../ops/remotes.js')
    const list = await listRemotes({dataDir: this.flags['data-dir']})
    if (list.length === 0) this.out.log('no remotes')
    for (const r of list) this.out.record({...r}, `${r.name}\t${r.url}`)
  }
}
