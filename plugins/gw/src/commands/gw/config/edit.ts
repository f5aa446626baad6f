import {ToolkitCommand} from '@toolkit/kit'

import {clientFlags} from '../../../client/cli.js'
import {editServersFile} from '../../../registry/edit.js'

export default class GwConfigEdit extends ToolkitCommand<typeof GwConfigEdit> {
  static description = `Open servers.json in your editor ($VISUAL, else $EDITOR, else vi)

You edit a copy; it replaces the file only if gw can read it. A copy with an error is kept next to the file (servers.edit.json) and the error names its line, so nothing is lost and the file in use stays valid. Creates the file (see \`gw config path\`) when there is none.`
  static examples = ['<%= config.bin %> <%= command.id %>', 'EDITOR="code --wait" <%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --config ./servers.json --format json']
  static flags = {...clientFlags}

  public async run(): Promise<void> {
    const edited = await editServersFile({env: process.env, file: this.flags.config})
    this.out.record({type: 'config_edited', ...edited}, edited.changed ? `${edited.created ? 'created' : 'saved'} ${edited.file}` : `${edited.file} unchanged`)
  }
}
