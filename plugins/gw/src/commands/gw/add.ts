import {Args, Flags} from '@oclif/core'
import {ToolkitCommand, UsageError} from '@toolkit/kit'

import {clientFlags} from '../../client/cli.js'
import {buildEntry, literalSecrets, shownEntry} from '../../registry/entry.js'
import {entryFromRegistry, fetchRegistryServer, registryBase} from '../../registry/public-registry.js'
import {addServerEntry} from '../../registry/registry.js'

export default class GwAdd extends ToolkitCommand<typeof GwAdd> {
  static args = {name: Args.string({description: 'name for the server (the proxy prefixes its tools with it: <name>__<tool>)', required: true})}
  static description = `Add a server to servers.json

An HTTP server takes --url (and --header); a local server is the command after \`--\` (and --env). \${VAR} in the URL, headers and env is filled from the environment when gw connects, so keys stay out of the file. Only this entry is written: the rest of the file keeps its formatting, and the file is replaced atomically. Writes --config or GW_CONFIG when given, else the servers.json gw reads (./servers.json, else ~/.config/gw/servers.json, created if missing).`
  static examples = [
    '<%= config.bin %> <%= command.id %> linear --url https://mcp.linear.app/mcp',
    `<%= config.bin %> <%= command.id %> github --url https://api.githubcopilot.com/mcp/ --header 'Authorization: Bearer \${GITHUB_TOKEN}'`,
    `<%= config.bin %> <%= command.id %> hosted --url 'https://mcp.example.com/k/\${EXAMPLE_KEY}/mcp'`,
    '<%= config.bin %> <%= command.id %> files -- npx -y @modelcontextprotocol/server-filesystem .',
    '<%= config.bin %> <%= command.id %> everything --env LOG_LEVEL=warn --format json -- npx -y @modelcontextprotocol/server-everything',
    '<%= config.bin %> <%= command.id %> fs --from-registry io.github.example/files --registry https://registry.internal.example.com',
  ]
  static flags = {
    ...clientFlags,
    env: Flags.string({description: 'KEY=VALUE for a local server (repeatable)', multiple: true}),
    force: Flags.boolean({description: 'replace a server of the same name'}),
    'from-registry': Flags.string({description: 'take the entry from the MCP registry: its HTTP remote, else its package (see `gw search`)', helpValue: '<registry name>'}),
    header: Flags.string({description: '"Name: value" sent to an HTTP server (repeatable)', multiple: true}),
    registry: Flags.string({description: 'MCP registry base URL (default https://registry.modelcontextprotocol.io; env GW_REGISTRY_URL)', helpValue: '<url>'}),
    url: Flags.string({description: 'the http:// or https:// MCP endpoint'}),
  }
  static strict = false
  static usage = [
    '<%= command.id %> NAME --url URL [--header "Name: value"...]',
    '<%= command.id %> NAME [--env KEY=VALUE...] -- COMMAND [ARGS...]',
    '<%= command.id %> NAME --from-registry REGISTRY_NAME [--registry URL]',
  ]

  public async run(): Promise<void> {
    const {argv} = await this.parse(GwAdd)
    const command = (argv as string[]).slice(1)
    let entry: Record<string, unknown>
    let variables: string[] = []
    if (this.flags['from-registry']) {
      if (this.flags.url || command.length > 0 || this.flags.header || this.flags.env) throw new UsageError('--from-registry takes the whole entry from the registry: leave out --url, --header, --env and the command')
      const server = await fetchRegistryServer(registryBase(this.flags.registry, process.env), this.flags['from-registry'])
      ;({entry, variables} = entryFromRegistry(server))
    } else {
      entry = buildEntry({command, env: this.flags.env, headers: this.flags.header, url: this.flags.url})
    }
    const added = await addServerEntry(this.args.name, entry, {env: process.env, file: this.flags.config, force: this.flags.force})
    const secrets = literalSecrets(entry)
    if (secrets.length > 0) this.out.warn(`${secrets.join(', ')} of "${added.name}" are written in clear to ${added.file}; "\${VAR}" keeps them in the environment instead`)
    if (variables.length > 0) this.out.log(`"${added.name}" reads ${variables.map((v) => `\${${v}}`).join(', ')} from the environment: set ${variables.length === 1 ? 'it' : 'them'} before using it`)
    this.out.record({type: 'server_added', ...added, entry: shownEntry(entry), variables}, `${added.replaced ? 'replaced' : 'added'} "${added.name}" ${added.replaced ? 'in' : 'to'} ${added.file}`)
  }
}
