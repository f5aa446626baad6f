import {Flags} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

export default class CampaignProviders extends ToolkitCommand<typeof CampaignProviders> {
  static description = `List the model providers generate can use: kind, whether usable now, default model

The default provider, model and base URL come from the campaign configuration ("provider", "model", "baseUrl" in campaign.json or TOOLKIT_CAMPAIGN_*), as for generate.`

  static examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --check',
    '<%= config.bin %> <%= command.id %> --format json | jq -c \'select(.usable)\'',
  ]

  static flags = {
    check: Flags.boolean({description: 'Also see that each usable API endpoint answers (network requests)'}),
  }

  public async run(): Promise<void> {
    const {loadCampaignConfig} = await import('../../campaign-config.js')
    const {describeProviders} = await import('../../providers/index.js')
    const c = await loadCampaignConfig(this.config, {})
    const rows = await describeProviders({baseUrl: c.baseUrl || null, check: this.flags.check, model: c.model || null, provider: c.provider})
    const color = this.out.color
    for (const r of rows) {
      const mark = r.usable ? color.green('✓') : color.red('✗')
      const text = `${mark} ${color.bold(r.name.padEnd(18))}${r.kind.padEnd(10)}${(r.default_model ?? '-').padEnd(20)}${r.detail}${r.default ? color.dim('  (default)') : ''}`
      this.out.record({...r}, text)
    }
  }
}
