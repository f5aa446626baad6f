import {Flags} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

export default class CampaignTools extends ToolkitCommand<typeof CampaignTools> {
  static description = 'List the tools a model may call, with their JSON Schemas'

  static examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --mission campaign --format json']

  static flags = {
    mission: Flags.option({default: 'plan' as const, description: 'Mission kind', options: ['plan', 'campaign'] as const})(),
  }

  public async run(): Promise<void> {
    const {toolSpecs} = await import('../../tools/registry.js')
    for (const t of toolSpecs(this.flags.mission)) {
      this.out.record({...t}, `${this.out.color.bold(t.name)}  ${t.description}`)
    }
  }
}
