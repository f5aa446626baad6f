import {Flags} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

export default class SvcSchedule extends ToolkitCommand<typeof SvcSchedule> {
  static description = `Schedule backups that the server runs every --interval minutes into --output-dir

Stored in <data-dir>/schedules.json; a running server picks a new schedule up within a second, and schedules survive restarts. full: a tar.gz each time. incremental: a full bundle, then incremental bundles on the last backup; with --keep N a chain holds at most N files and the previous chain is deleted once a new full backup exists (full mode keeps the newest N files). Failures show in list-schedules and in GET /health (component schedules).`
  static examples = [
    '<%= config.bin %> <%= command.id %> --data-dir ./data --mode full --interval 60 --output-dir /backups/svc --keep 24',
    '<%= config.bin %> <%= command.id %> --data-dir ./data --mode incremental --interval 15 --output-dir /backups/svc --keep 96 --format json',
  ]
  static flags = {
    'data-dir': Flags.string({default: './data', description: 'Data directory'}),
    interval: Flags.string({description: 'Minutes between backups (a decimal such as 0.5 is allowed)', required: true}),
    keep: Flags.integer({description: 'Backups to keep (see the description)', min: 1}),
    mode: Flags.option({description: 'full or incremental', options: ['full', 'incremental'] as const, required: true})(),
    'output-dir': Flags.string({description: 'Directory the backups are written to', required: true}),
  }

  public async run(): Promise<void> {
    const {addSchedule} = await import('../../ops/schedules.js')
    const s = addSchedule({dataDir: this.flags['data-dir'], intervalMinutes: Number(this.flags.interval), keep: this.flags.keep, mode: this.flags.mode, outputDir: this.flags['output-dir']})
    this.out.record({...s}, `schedule ${s.id}: ${s.mode} backup every ${s.intervalMinutes} min into ${s.outputDir}${s.keep ? `, keeping ${s.keep}` : ''} (run by the server)`)
  }
}
