import {ToolkitCommand} from '@toolkit/kit'

import {clientFlags} from '../../../client/cli.js'
import {serversFileTarget} from '../../../registry/servers-file.js'

export default class GwConfigPath extends ToolkitCommand<typeof GwConfigPath> {
  static description = `Print the servers.json gw reads (or, when none exists yet, the one \`gw add\` would create)

The lookup order: --config, GW_CONFIG, ./servers.json, ~/.config/gw/servers.json ($XDG_CONFIG_HOME/gw).`
  static examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --format json', '$EDITOR "$(<%= config.bin %> <%= command.id %>)"']
  static flags = {...clientFlags}

  public async run(): Promise<void> {
    const target = await serversFileTarget({env: process.env, file: this.flags.config})
    if (!target.exists) this.out.log(`no servers.json yet (looked in ${target.candidates.join(', ')}); \`toolkit gw add\` creates this one`)
    this.out.record({type: 'config', ...target}, target.file)
  }
}
