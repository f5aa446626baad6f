import {Args} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

import {clientFlags, commandContext} from '../../client/cli.js'
import {contentsText, readResource} from '../../client/resources.js'

export default class GwRead extends ToolkitCommand<typeof GwRead> {
  static args = {
    server: Args.string({description: 'server name from servers.json', required: true}),
    uri: Args.string({description: 'resource URI (see `toolkit gw resources SERVER`)', required: true}),
  }
  static description = `Read a resource of a server

Text contents are printed as they are; binary contents are summarised (--format json carries them base64-encoded, as the server sent them).`
  static examples = ['<%= config.bin %> <%= command.id %> everything demo://resource/static/document/architecture.md', '<%= config.bin %> <%= command.id %> everything demo://resource/dynamic/blob/1 --format json']
  static flags = {...clientFlags}

  public async run(): Promise<void> {
    const ctx = await commandContext(this.config, this.out, this.flags, {network: true})
    const r = await readResource(ctx, this.args.server, this.args.uri)
    this.out.record({type: 'resource_contents', ...r}, contentsText(r.contents))
  }
}
