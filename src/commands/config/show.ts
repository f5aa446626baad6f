import {loadConfig, ToolkitCommand} from '@toolkit/kit'

export default class ConfigShow extends ToolkitCommand<typeof ConfigShow> {
  static description = `Show toolkit's own settings and where each value came from.

Values merge as defaults < config files in the config directory (the "toolkit" section of config.json, then toolkit.json) < environment (TOOLKIT_TOOLKIT_<KEY>) < flags. Each plugin reads its own section the same way (see docs/plugins.md).`

  static examples = [
    '<%= config.bin %> <%= command.id %>',
    'TOOLKIT_TOOLKIT_LOG_LEVEL=debug <%= config.bin %> <%= command.id %> --format json',
  ]

  public async run(): Promise<void> {
    const {files, sources, values} = await loadConfig(this.config, {
      defaults: {logLevel: 'info'},
      namespace: 'toolkit',
    })
    this.out.log(`config directory: ${this.config.configDir}${files.length > 0 ? ` (read ${files.join(', ')})` : ''}`)
    for (const key of Object.keys(values) as Array<keyof typeof values>) {
      const value = values[key]
      this.out.record({key, source: sources[key], value}, `${key} = ${JSON.stringify(value)}  ${this.out.color.dim(`(${sources[key]})`)}`)
    }
  }
}
