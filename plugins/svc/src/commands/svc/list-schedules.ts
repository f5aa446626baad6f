import {Flags} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

export default class SvcListSchedules extends ToolkitCommand<typeof SvcListSchedules> {
  static description = `List backup schedules with their last run, next run and last error`
  static examples = ['<%= config.bin %> <%= command.id %> --data-dir ./data', '<%= config.bin %> <%= command.id %> --data-dir ./data --format json']
  static flags = {
    'data-dir': Flags.string({default: './data', description: 'Data directory'}),
  }

  public async run(): Promise<void> {
    const {listSchedules} = await import('../../ops/schedules.js')
    const list = listSchedules({dataDir: this.flags['data-dir']})
    if (list.length === 0) this.out.log('no schedules')
    for (const s of list) {
      const error = s.state === 'failing' ? `; failing: ${s.lastError}` : ''
      this.out.record({...s}, `${s.id} ${s.mode} every ${s.intervalMinutes} min -> ${s.outputDir}: ${s.runs ?? 0} run(s), last ${s.lastRunAt ?? 'never'}, next ${s.nextRunAt}${error}`)
    }
  }
}
