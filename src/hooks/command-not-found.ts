import type {Config} from '@oclif/core'

import {closest} from '@toolkit/kit/closest'
import {UsageError} from '@toolkit/kit/errors'

/**
 * Unknown command without a terminal (scripts, CI): one line with the nearest command and exit 2.
 * On a terminal bin/run.js leaves this to @oclif/plugin-not-found, which offers to run the suggestion.
 */
export default async function commandNotFound(options: {config: Config; id: string}): Promise<never> {
  const sep = options.config.topicSeparator
  const shown = (id: string) => id.replaceAll(':', sep)
  const visible = options.config.commands.filter((c) => !c.hidden).flatMap((c) => [c.id, ...c.aliases])
  const suggestion = closest(options.id, visible)
  const hint = suggestion ? ` Did you mean "${shown(suggestion)}"?` : ''
  throw new UsageError(`"${shown(options.id)}" is not a ${options.config.bin} command.${hint} Run "${options.config.bin} help" for a list of commands.`, 'unknown_command')
}
