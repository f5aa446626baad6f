import {Args, Flags} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

export default class CampaignInit extends ToolkitCommand<typeof CampaignInit> {
  static args = {
    file: Args.string({default: 'business.toml', description: 'Where to write the example'}),
  }

  static description = 'Write a commented example business.toml to start from'

  static examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> shop/business.toml --force']

  static flags = {
    force: Flags.boolean({description: 'Overwrite an existing file'}),
  }

  public async run(): Promise<void> {
    const {writeBusinessTemplate} = await import('../../init-template.js')
    const result = writeBusinessTemplate(this.args.file, this.flags.force)
    this.out.record({written: result.file}, `Wrote ${result.file}. Edit it, then run: toolkit campaign generate ${result.file}`)
  }
}
