import {Args, Flags} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

export default class CampaignExport extends ToolkitCommand<typeof CampaignExport> {
  static args = {
    'run-dir': Args.string({description: 'A run directory written by generate', required: true}),
  }

  static description = `Rebuild a run's outputs from its workspace.json, without a model

Runs cross-negatives, images, validate, url-check and export again, replaces run.json and report.md and appends to events.ndjson. Use it after editing workspace.json by hand.`

  static examples = ['<%= config.bin %> <%= command.id %> out/20260101-120000-a1b2c3 --skip-url-check', '<%= config.bin %> <%= command.id %> out/20260101-120000-a1b2c3 --format json']

  static flags = {
    'skip-url-check': Flags.boolean({description: 'Do not request the final URLs'}),
  }

  public async run(): Promise<void> {
    const {runCommand} = await import('../../command-run.js')
    await runCommand(this.out, (pipeline, opts) => pipeline.exportRun(this.args['run-dir'], opts, opts.listeners), {skipUrlCheck: this.flags['skip-url-check']})
  }
}
