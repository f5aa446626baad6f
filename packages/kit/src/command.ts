import {Command, Flags, type Interfaces} from '@oclif/core'

import type {Output} from './contract.js'
import {useOutput} from './services.js'

export type CommandFlags<T extends typeof Command> = Interfaces.InferredFlags<(typeof ToolkitCommand)['baseFlags'] & T['flags']>
export type CommandArgs<T extends typeof Command> = Interfaces.InferredArgs<T['args']>

/**
 * The thin base every toolkit command shares: the global `--format` flag, parsed flags and args,
 * and the host's output service. Errors are left to the host's renderer (bin/run.js), which
 * prints one line on stderr and, with --format json, an error record on stdout.
 */
export abstract class ToolkitCommand<T extends typeof Command> extends Command {
  static baseFlags = {
    format: Flags.option({
      default: 'text' as const,
      description: 'Output format: json writes one JSON object per line on stdout',
      helpGroup: 'GLOBAL',
      options: ['json', 'text'] as const,
    })(),
  }

  protected args!: CommandArgs<T>
  protected flags!: CommandFlags<T>
  protected out!: Output

  public async init(): Promise<void> {
    await super.init()
    const {args, flags} = await this.parse({
      args: this.ctor.args,
      baseFlags: (super.ctor as typeof ToolkitCommand).baseFlags,
      enableJsonFlag: false,
      flags: this.ctor.flags,
      strict: this.ctor.strict,
    })
    this.flags = flags as CommandFlags<T>
    this.args = args as CommandArgs<T>
    this.out = await useOutput(this.config, this.flags.format)
  }
}
