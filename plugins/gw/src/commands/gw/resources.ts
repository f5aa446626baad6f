import {Args} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

import {clientFlags, commandContext} from '../../client/cli.js'
import {listResources} from '../../client/resources.js'

export default class GwResources extends ToolkitCommand<typeof GwResources> {
  static args = {server: Args.string({description: 'server name from servers.json', required: true})}
  static description = `List the resources and resource templates of a server

Read one with \`toolkit gw read SERVER URI\`.`
  static examples = ['<%= config.bin %> <%= command.id %> everything', '<%= config.bin %> <%= command.id %> everything --format json']
  static flags = {...clientFlags}

  public async run(): Promise<void> {
    const ctx = await commandContext(this.config, this.out, this.flags, {network: true})
    for (const r of await listResources(ctx, this.args.server)) {
      const uri = r.kind === 'resource' ? r.uri : r.uriTemplate
      const detail = [r.mimeType, r.name !== uri ? r.name : undefined].filter(Boolean).join(', ')
      this.out.record({type: r.kind, ...r}, `${this.out.color.bold(String(uri))}${r.kind === 'template' ? this.out.color.dim(' (template)') : ''}${detail ? `  ${this.out.color.dim(detail)}` : ''}`)
    }
  }
}
