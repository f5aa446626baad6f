import {Flags} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

export default class SvcRemoveBranch extends ToolkitCommand<typeof SvcRemoveBranch> {
  static description = `Remove a branch: its ref, its full-text index partition and its secondary indexes

main (the default branch) cannot be removed. Works with a server running (it is asked to do it). The branch's commits stay in the repository until toolkit svc compact runs with the server stopped.`
  static examples = ['<%= config.bin %> <%= command.id %> --data-dir ./data --name feature-x', '<%= config.bin %> <%= command.id %> --data-dir ./data --name old --format json']
  static flags = {
    'data-dir': Flags.string({default: './data', description: 'Data directory'}),
    name: Flags.string({description: 'Branch to remove', required: true}),
  }

  public async run(): Promise<void> {
    const {removeBranch} = await import('../../ops/remove-branch.js')
    const r = await removeBranch({dataDir: this.flags['data-dir'], name: this.flags.name})
    this.out.record({...r}, `branch ${r.name} removed from ${r.dataDir}${r.head ? ` (it pointed at ${r.head})` : ''}`)
  }
}
