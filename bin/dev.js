#!/usr/bin/env -S node --import tsx --no-warnings
import {flush, run, settings} from '@oclif/core'

// Development mode runs the TypeScript sources of this package directly (plugins still load from their dist).
settings.debug = Boolean(process.env.DEBUG)
const argv = process.argv.slice(2)
try {
  await run(argv, {development: true, root: import.meta.dirname + '/..'})
  await flush()
} catch (error) {
  const {renderError} = await import('../src/lib/render-error.ts')
  const code = renderError(error, argv)
  process.stdout.write('', () => process.exit(code))
}
