import {Args} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

import {logout} from '../../../client/auth.js'
import {clientFlags, commandContext} from '../../../client/cli.js'

export default class GwAuthLogout extends ToolkitCommand<typeof GwAuthLogout> {
  static args = {server: Args.string({description: 'server name; every configured server when omitted'})}
  static description = 'Forget the saved token and client registration of a server (the next connection signs in afresh)'
  static examples = ['<%= config.bin %> <%= command.id %> linear', '<%= config.bin %> <%= command.id %>']
  static flags = {...clientFlags}

  public async run(): Promise<void> {
    const ctx = await commandContext(this.config, this.out, this.flags)
    for (const r of await logout(ctx, this.args.server)) {
      this.out.record({type: 'logout', ...r}, `${r.server}: ${r.removed ? 'signed out' : 'was not signed in'}`)
    }
  }
}
