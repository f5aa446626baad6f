import {Args} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

import {clientFlags, commandContext} from '../../client/cli.js'
import {listTools, signature} from '../../client/tools.js'

export default class GwTools extends ToolkitCommand<typeof GwTools> {
  static args = {server: Args.string({description: 'server name from servers.json', required: true})}
  static description = `List the tools of a server: names, descriptions, input schemas and annotations

Signs in first when the server asks for it (saved token, refresh, OAuth, or a token prompt).`
  static examples = ['<%= config.bin %> <%= command.id %> everything', '<%= config.bin %> <%= command.id %> github --format json']
  static flags = {...clientFlags}

  public async run(): Promise<void> {
    const ctx = await commandContext(this.config, this.out, this.flags, {network: true})
    const tools = await listTools(ctx, this.args.server)
    for (const t of tools) {
      const a = t.annotations
      const hints = [a?.readOnlyHint ? 'read-only' : '', a?.destructiveHint && !a.readOnlyHint ? 'destructive' : '', a?.openWorldHint ? 'open-world' : '']
        .filter(Boolean)
        .join(', ')
      const first = t.description?.split('\n')[0]
      const head = `${this.out.color.bold(signature({inputSchema: t.inputSchema, name: t.name}))}${hints ? this.out.color.dim(` [${hints}]`) : ''}`
      this.out.record({type: 'tool', ...t}, first ? `${head}\n  ${first}` : head)
    }
  }
}
