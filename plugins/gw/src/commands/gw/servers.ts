import {ToolkitCommand} from '@toolkit/kit'

import {clientFlags, commandContext} from '../../client/cli.js'
import {describeAuth, listServers} from '../../client/servers.js'

export default class GwServers extends ToolkitCommand<typeof GwServers> {
  static description = `List the configured MCP servers and their auth state

Reads servers.json (--config, else ./servers.json, else ~/.config/gw/servers.json) and the token store (~/.config/gw/auth.json, or GW_AUTH_FILE). Nothing is sent over the network.`
  static examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --format json', '<%= config.bin %> <%= command.id %> --config ./team-servers.json']
  static flags = {...clientFlags}

  public async run(): Promise<void> {
    const ctx = await commandContext(this.config, this.out, this.flags)
    const records = await listServers(ctx)
    if (records.length === 0) this.out.log(ctx.config.file ? `no servers in ${ctx.config.file}` : 'no servers.json found; see `toolkit gw servers --help`')
    const width = Math.max(0, ...records.map((r) => r.name.length))
    for (const r of records) {
      this.out.record({type: 'server', ...r}, `${r.name.padEnd(width)}  ${r.url ?? r.command}  ${this.out.color.dim(describeAuth(r))}`)
    }
  }
}
