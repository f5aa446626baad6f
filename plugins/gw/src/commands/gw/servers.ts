import {ToolkitCommand} from '@toolkit/kit'

export default class GwServers extends ToolkitCommand<typeof GwServers> {
  static description = 'List the configured MCP servers'
  static examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --format json']

  public async run(): Promise<void> {
    this.out.log('no servers configured yet')
  }
}
