import {Args} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

import {status} from '../../../client/auth.js'
import {clientFlags, commandContext} from '../../../client/cli.js'
import {describeAuth} from '../../../client/servers.js'

export default class GwAuthStatus extends ToolkitCommand<typeof GwAuthStatus> {
  static args = {server: Args.string({description: 'server name; every configured server when omitted'})}
  static description = 'Show how each server is authenticated: config header, saved token and its expiry, or nothing (tokens are never printed)'
  static examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> linear --format json']
  static flags = {...clientFlags}

  public async run(): Promise<void> {
    const ctx = await commandContext(this.config, this.out, this.flags)
    for (const r of await status(ctx, this.args.server)) {
      this.out.record({type: 'auth', ...r}, `${r.name}: ${describeAuth(r)}${r.registered_client ? this.out.color.dim(' (OAuth client registered)') : ''}`)
    }
  }
}
