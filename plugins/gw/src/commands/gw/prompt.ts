import {Args} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

import {clientFlags, commandContext} from '../../client/cli.js'
import {getPrompt, promptText} from '../../client/prompts.js'

export default class GwPrompt extends ToolkitCommand<typeof GwPrompt> {
  static args = {
    server: Args.string({description: 'server name from servers.json', required: true}),
    name: Args.string({description: 'prompt name (see `toolkit gw prompts SERVER`)', required: true}),
  }
  static description = `Get a prompt from a server, filled with arguments

Arguments are key=value pairs or one JSON object of strings. Missing required arguments are named before anything is sent. Prints each message as "role: text".`
  static examples = ['<%= config.bin %> <%= command.id %> everything simple-prompt', `<%= config.bin %> <%= command.id %> everything args-prompt city=Lisbon state=Lisboa`, `<%= config.bin %> <%= command.id %> everything args-prompt '{"city": "Lisbon"}' --format json`]
  static flags = {...clientFlags}
  static strict = false
  static usage = '<%= command.id %> SERVER NAME [ARGS...] [--format json|text] [--config <file>]'

  public async run(): Promise<void> {
    const {argv} = await this.parse(GwPrompt)
    const ctx = await commandContext(this.config, this.out, this.flags, {network: true})
    const r = await getPrompt(ctx, this.args.server, this.args.name, (argv as string[]).slice(2))
    this.out.record({type: 'prompt_result', ...r}, promptText(r.messages))
  }
}
