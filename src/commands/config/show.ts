import {Args} from '@oclif/core'
import {type ConfigRequest, type ConfigValue, HOOK_CONFIG_SECTIONS, ToolkitCommand, UsageError} from '@toolkit/kit'

import {loadLayeredConfig} from '../../lib/layered-config.js'

export default class ConfigShow extends ToolkitCommand<typeof ConfigShow> {
  static args = {
    section: Args.string({description: 'Only this section (toolkit, svc, gw, campaign or a third-party plugin\'s)', required: false}),
  }

  static description = `Show every setting of toolkit and its plugins and where each value came from.

Values merge as defaults < config files in the config directory (the section of config.json, then <section>.json) < the plugin's own file (svc: config.edn in the current directory; gw: the "serve" object of servers.json) < environment (TOOLKIT_<SECTION>_<KEY>) < flags. The source column says which: default, file:<path>:<line>, env:<NAME> or flag. See docs/plugins.md.`

  static examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> svc',
    'TOOLKIT_SVC_REST_PORT=3001 <%= config.bin %> <%= command.id %> svc --format json',
  ]

  public async run(): Promise<void> {
    const sections: Array<ConfigRequest<Record<string, ConfigValue>>> = [{defaults: {logLevel: 'info'}, namespace: 'toolkit'}]
    const {failures, successes} = await this.config.runHook(HOOK_CONFIG_SECTIONS, {cwd: process.cwd()})
    if (failures.length > 0) throw failures[0].error
    for (const s of successes) sections.push(...(s.result ?? []))
    const wanted = this.args.section
    const shown = wanted === undefined ? sections : sections.filter((s) => s.namespace === wanted)
    if (shown.length === 0) throw new UsageError(`no section "${wanted}" (known: ${sections.map((s) => s.namespace).join(', ')})`)
    const files = new Set<string>()
    for (const request of shown) {
      const {files: read, sources, values} = loadLayeredConfig(this.config.configDir, request)
      for (const f of read) files.add(f)
      for (const key of Object.keys(values)) {
        const value = values[key]
        this.out.record({key, section: request.namespace, source: sources[key], value}, `${request.namespace}.${key} = ${JSON.stringify(value)}  ${this.out.color.dim(`(${sources[key]})`)}`)
      }
    }
    this.out.log(`config directory: ${this.config.configDir}${files.size > 0 ? ` (read ${[...files].join(', ')})` : ''}`)
  }
}
