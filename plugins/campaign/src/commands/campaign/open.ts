import {Args, Flags} from '@oclif/core'
import {ToolkitCommand, UsageError} from '@toolkit/kit'

export default class CampaignOpen extends ToolkitCommand<typeof CampaignOpen> {
  static args = {
    'run-dir': Args.string({description: 'A run directory written by generate [default: the newest run under the configured out folder]'}),
  }

  static description = `Open a run's report.html in the browser

Uses $BROWSER when set, else the desktop's default browser. Without a display (a server, CI) it prints the report's path and exits 0. The page is one file with everything inside it: it can also be copied or mailed as it is.`

  static examples = [
    '<%= config.bin %> <%= command.id %> out/20260101-120000-a1b2c3',
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --workspace out/20260101-120000-a1b2c3 --format json',
    'BROWSER=firefox <%= config.bin %> <%= command.id %>',
  ]

  static flags = {
    workspace: Flags.string({description: 'The run directory (the folder holding workspace.json); the same as the argument'}),
  }

  public async run(): Promise<void> {
    const given = this.args['run-dir']
    if (given && this.flags.workspace && given !== this.flags.workspace) throw new UsageError('give the run directory either as the argument or as --workspace, not both')
    const {loadCampaignConfig} = await import('../../campaign-config.js')
    const {openReport, reportRunDir} = await import('../../report-html/open.js')
    const {out} = await loadCampaignConfig(this.config, {})
    const o = await openReport(reportRunDir(given ?? this.flags.workspace, out))
    if (!o.opened && this.out.format === 'text') this.out.log(`Not opened (${o.reason}): open the file in a browser.`)
    this.out.record({...o}, o.opened ? `Opened ${o.url}` : o.path)
  }
}
