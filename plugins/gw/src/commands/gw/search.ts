import {Args, Flags} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

import {registryBase, searchRegistry} from '../../registry/public-registry.js'

export default class GwSearch extends ToolkitCommand<typeof GwSearch> {
  static args = {query: Args.string({description: 'words to look for in server names', required: true})}
  static description = `Search the MCP registry for servers

Asks the official MCP registry (registry.modelcontextprotocol.io), or the one named by --registry or GW_REGISTRY_URL (any registry serving the same /v0.1 API), for the latest version of matching servers. Add one with \`toolkit gw add NAME --from-registry <registry name>\`.`
  static examples = ['<%= config.bin %> <%= command.id %> filesystem', '<%= config.bin %> <%= command.id %> github --limit 5 --format json', '<%= config.bin %> <%= command.id %> notes --registry https://registry.internal.example.com']
  static flags = {
    limit: Flags.integer({default: 20, description: 'most results to show', max: 100, min: 1}),
    registry: Flags.string({description: 'MCP registry base URL (default https://registry.modelcontextprotocol.io; env GW_REGISTRY_URL)', helpValue: '<url>'}),
  }

  public async run(): Promise<void> {
    const base = registryBase(this.flags.registry, process.env)
    const found = await searchRegistry(base, this.args.query, this.flags.limit)
    if (found.length === 0) this.out.log(`nothing in ${base} matches "${this.args.query}"`)
    for (const s of found) {
      const how = [...s.remotes.map(() => 'remote'), ...s.packages].join(', ')
      const head = `${this.out.color.bold(s.name)}${s.version ? ` ${s.version}` : ''}${how ? this.out.color.dim(`  [${how}]`) : ''}`
      this.out.record({type: 'registry_server', ...s}, s.description ? `${head}\n  ${s.description.split('\n')[0]}` : head)
    }
  }
}
