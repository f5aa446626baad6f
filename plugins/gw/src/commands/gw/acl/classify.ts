import {Args, Flags} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

import {classifyServer} from '../../../acl-tools/acl-tools.js'
import {clientFlags, commandContext} from '../../../client/cli.js'

export default class GwAclClassify extends ToolkitCommand<typeof GwAclClassify> {
  static args = {server: Args.string({description: 'server name from servers.json', required: true})}
  static description = `List each tool of a server as read or write, with the reason, as the proxy's ACL classes it

The reason is the server's toolAccess override in servers.json, the tool's readOnlyHint annotation, or the default (write). Tools come from the cached tool list when fresh, else one tools/list over the network; --offline never connects.`
  static examples = ['<%= config.bin %> <%= command.id %> github', '<%= config.bin %> <%= command.id %> everything --format json', '<%= config.bin %> <%= command.id %> linear --offline']
  static flags = {...clientFlags, offline: Flags.boolean({description: 'never connect: use the cached tool list only'})}

  public async run(): Promise<void> {
    const ctx = await commandContext(this.config, this.out, this.flags, {network: !this.flags.offline})
    const records = await classifyServer(ctx, this.args.server, {offline: this.flags.offline})
    const width = Math.max(0, ...records.map((r) => r.tool.length))
    for (const r of records) this.out.record({type: 'tool_access', ...r}, `${r.access.padEnd(5)}  ${r.tool.padEnd(width)}  ${this.out.color.dim(r.reason)}`)
  }
}
