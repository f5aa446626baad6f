import {ToolkitCommand} from '@toolkit/kit'

export default class CampaignInit extends ToolkitCommand<typeof CampaignInit> {
  static description = 'Write a commented example business.toml'
  static examples = ['<%= config.bin %> <%= command.id %>']

  public async run(): Promise<void> {
    this.out.record({written: null})
  }
}
