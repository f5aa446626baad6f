import {Flags} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

export default class SvcCancelSchedule extends ToolkitCommand<typeof SvcCancelSchedule> {
  static description = `Cancel a backup schedule (its backups stay where they are)`
  static examples = ['<%= config.bin %> <%= command.id %> --data-dir ./data --id 3fa2c1d0']
  static flags = {
    'data-dir': Flags.string({default: './data', description: 'Data directory'}),
    id: Flags.string({description: 'Schedule id (see list-schedules)', required: true}),
  }

  public async run(): Promise<void> {
    const {cancelSchedule} = await import('../../ops/schedules.js')
    const s = cancelSchedule({dataDir: this.flags['data-dir'], id: this.flags.id})
    this.out.record({...s, cancelled: true}, `schedule ${s.id} cancelled`)
  }
}
