import {Flags} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

export default class SvcDiagnose extends ToolkitCommand<typeof SvcDiagnose> {
  static description = 'Check a data directory: repository integrity, lock files, branches, remote sync'
  static examples = ['<%= config.bin %> <%= command.id %> --data-dir ./data']
  static flags = {
    'data-dir': Flags.directory({default: './data', description: 'Data directory'}),
  }

  public async run(): Promise<void> {
    this.out.record({dataDir: this.flags['data-dir'], status: 'unchecked'})
  }
}
