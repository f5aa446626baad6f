import {Flags} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

import {checkAccess} from '../../../acl-tools/acl-tools.js'
import {clientFlags, commandContext} from '../../../client/cli.js'

export default class GwAclCheck extends ToolkitCommand<typeof GwAclCheck> {
  static description = `Show whether the proxy's ACL lets a user call a tool, and the rule that decides

Evaluates serverAuth.acl of servers.json with the proxy's own code; no proxy needs to run. The tool's read/write class comes from --access, the server's toolAccess override, or the tool's annotations (the cached tool list, else one tools/list over the network; --offline never connects). Exits 0 whether allowed or denied: read "allowed" in the record.`
  static examples = [
    '<%= config.bin %> <%= command.id %> --user alice --roles engineer --tool github__create_issue',
    '<%= config.bin %> <%= command.id %> --user ci --roles automation,deploy --tool everything__echo --format json',
    '<%= config.bin %> <%= command.id %> --user bob --tool linear__save_issue --access write --offline',
  ]
  static flags = {
    ...clientFlags,
    access: Flags.option({description: 'assume this access class instead of looking the tool up', options: ['read', 'write'] as const})(),
    offline: Flags.boolean({description: 'never connect: use the override, --access or the cached tool list'}),
    roles: Flags.string({default: [], delimiter: ',', description: 'the user\'s roles (comma-separated or repeated)', multiple: true}),
    tool: Flags.string({description: 'the proxied tool name, <server>__<tool>', required: true}),
    user: Flags.string({default: 'anonymous', description: 'the subject, as a provider would give it'}),
  }

  public async run(): Promise<void> {
    const ctx = await commandContext(this.config, this.out, this.flags, {network: !this.flags.offline})
    const roles = this.flags.roles.map((r) => r.trim()).filter(Boolean)
    const d = await checkAccess(ctx, {access: this.flags.access, offline: this.flags.offline, roles, subject: this.flags.user, tool: this.flags.tool})
    const who = `${d.subject}${roles.length > 0 ? ` (roles: ${roles.join(', ')})` : ' (no roles)'}`
    const verdict = d.allowed ? this.out.color.green('allowed') : this.out.color.red('denied')
    this.out.record({type: 'acl_decision', ...d}, `${verdict}: ${who} ${d.allowed ? 'may' : 'may not'} call ${d.tool} (${d.access} tool: ${d.access_reason}), decided by ${d.rule}`)
  }
}
