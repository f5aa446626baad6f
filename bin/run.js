#!/usr/bin/env node
import {Config, flush, run} from '@oclif/core'

const argv = process.argv.slice(2)
try {
  const config = await Config.load(import.meta.url)
  // Unknown commands: on a terminal @oclif/plugin-not-found asks "did you mean ...?";
  // without one, toolkit's own hook prints the suggestion on one line and exits 2.
  const notFoundOwner = process.stdin.isTTY ? config.rootPlugin : config.plugins.get('@oclif/plugin-not-found')
  if (notFoundOwner) notFoundOwner.hooks.command_not_found = []
  await run(argv, config)
  await flush()
} catch (error) {
  const {renderError} = await import('../dist/lib/render-error.js')
  const code = renderError(error, argv)
  // Let stdout drain before leaving so a piped error record is never cut off.
  process.stdout.write('', () => process.exit(code))
}
