import {Args} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

import {clientFlags} from '../../client/cli.js'
import {removeServerEntry} from '../../registry/registry.js'

export default class GwRemove extends ToolkitCommand<typeof GwRemove> {
  static aliases = ['gw:rm']
  static args = {name: Args.string({description: 'server name from servers.json', required: true})}
  static description = `Remove a server from servers.json

Only that entry is removed; the rest of the file keeps its formatting. Its saved token stays in the token store: run \`toolkit gw auth logout NAME\` first to forget it too.`
  static examples = ['<%= config.bin %> <%= command.id %> linear', '<%= config.bin %> <%= command.id %> files --config ./servers.json --format json']
  static flags = {...clientFlags}

  public async run(): Promise<void> {
    const removed = await removeServerEntry(this.args.name, {env: process.env, file: this.flags.config})
    this.out.record({type: 'server_removed', ...removed}, `removed "${removed.name}" from ${removed.file}`)
  }
}
