import {Args} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

import {clientFlags, commandContext} from '../../client/cli.js'
import {listPrompts} from '../../client/prompts.js'

export default class GwPrompts extends ToolkitCommand<typeof GwPrompts> {
  static args = {server: Args.string({description: 'server name from servers.json', required: true})}
  static description = `List the prompts of a server, with their arguments

Get one with \`toolkit gw prompt SERVER NAME key=value...\`.`
  static examples = ['<%= config.bin %> <%= command.id %> everything', '<%= config.bin %> <%= command.id %> everything --format json']
  static flags = {...clientFlags}

  public async run(): Promise<void> {
    const ctx = await commandContext(this.config, this.out, this.flags, {network: true})
    for (const p of await listPrompts(ctx, this.args.server)) {
      const args = (p.arguments ?? []).map((a) => `${a.name}${a.required ? '' : '?'}`).join(', ')
      const first = p.description?.split('\n')[0]
      this.out.record({type: 'prompt', ...p}, `${this.out.color.bold(`${p.name}(${args})`)}${first ? `\n  ${first}` : ''}`)
    }
  }
}
