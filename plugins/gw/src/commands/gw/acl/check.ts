import {Flags} from '@oclif/core'
import {ToolkitCommand} from '@toolkit/kit'

import {checkAccess} from '../../../acl-tools/acl-tools.js'
import {clientFlags, commandContext} from '../../../client/cli.js'

export default class GwAclCheck extends ToolkitCommand<typeof GwAclCheck> {
  static description = `Show whether the proxy's ACL lets a user call a tool, get a prompt or read a resource, and the rule that decides

Evaluates serverAuth.acl of servers.json with the proxy's own code; no proxy needs to run. The tool's read/write class comes from --access, the server's toolAccess override, or the tool's annotations (the cached tool list, else one tools/list over the network; --offline never connects). Prompts and resources are reads: a prompt is judged by its name (checked against prompts/list unless --offline), a resource URI by its listed resource's name, else the template it fits, else the URI itself (so --resource lists the server's resources and cannot be --offline). Completions are judged as the prompt or template they complete. Exits 0 whether allowed or denied: read "allowed" in the record.`
  static examples = [
    '<%= config.bin %> <%= command.id %> --user alice --roles engineer --tool github__create_issue',
    '<%= config.bin %> <%= command.id %> --user ci --roles automation,deploy --tool everything__echo --format json',
    '<%= config.bin %> <%= command.id %> --user bob --tool linear__save_issue --access write --offline',
    '<%= config.bin %> <%= command.id %> --user alice --roles docs --prompt everything__simple-prompt',
    '<%= config.bin %> <%= command.id %> --user alice --roles docs --resource "everything__demo://resource/dynamic/text/7" --format json',
  ]
  static flags = {
    ...clientFlags,
    access: Flags.option({description: 'assume this access class instead of looking the tool up', options: ['read', 'write'] as const})(),
    offline: Flags.boolean({description: 'never connect: use the override, --access or the cached tool list'}),
    roles: Flags.string({default: [], delimiter: ',', description: 'the user\'s roles (comma-separated or repeated)', multiple: true}),
    prompt: Flags.string({description: 'a proxied prompt name, <server>__<prompt>, instead of a tool', exclusive: ['tool', 'resource', 'access']}),
    resource: Flags.string({description: 'a proxied resource URI, <server>__<uri>, instead of a tool', exclusive: ['tool', 'prompt', 'access', 'offline']}),
    tool: Flags.string({description: 'the proxied tool name, <server>__<tool>', exactlyOne: ['tool', 'prompt', 'resource']}),
    user: Flags.string({default: 'anonymous', description: 'the subject, as a provider would give it'}),
  }

  public async run(): Promise<void> {
    const ctx = await commandContext(this.config, this.out, this.flags, {network: !this.flags.offline})
    const roles = this.flags.roles.map((r) => r.trim()).filter(Boolean)
    const {access, offline, prompt, resource, tool, user} = this.flags
    const d = await checkAccess(ctx, {access, offline, prompt, resource, roles, subject: user, tool})
    const who = `${d.subject}${roles.length > 0 ? ` (roles: ${roles.join(', ')})` : ' (no roles)'}`
    const verdict = d.allowed ? this.out.color.green('allowed') : this.out.color.red('denied')
    const may = d.allowed ? 'may' : 'may not'
    const what = d.kind === 'tool' ? `call ${d.tool} (${d.access} tool: ${d.access_reason})` : d.kind === 'prompt' ? `get prompt ${d.target} (${d.access_reason})` : `read ${d.target} (as ${d.access_reason})`
    this.out.record({type: 'acl_decision', ...d}, `${verdict}: ${who} ${may} ${what}, decided by ${d.rule}`)
  }
}
