/**
 * The host's start-up path, bundled with @oclif/core into one file at build time
 * (scripts/build.mjs): resolving a few hundred small CommonJS modules was most of
 * `toolkit --help`'s wall time. The copy is lent to our plugins too (below): loading their own
 * (about 110 CommonJS files with semver) cost every plugin command about 0.3 s of CPU.
 */
import {Args, Command, Config, Flags, flush, run} from '@oclif/core'

import {renderError} from './lib/render-error.js'

/**
 * A reader that stops early (`toolkit ... | head`) is not an error. The command goes on to its
 * end (a run that writes files must not stop half-way) and what it prints is dropped.
 */
function quietOnClosedStdout(): void {
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED') return
    throw error
  })
}

/**
 * What our plugins' builds take from @oclif/core (scripts/oclif-from-host.mjs reads it here and
 * imports the package itself when a plugin runs under another host, or under `oclif manifest`).
 */
export const HOST_OCLIF = Symbol.for('toolkit.host-oclif-core')

export async function main(argv: string[], root: string): Promise<void> {
  ;(globalThis as Record<symbol, unknown>)[HOST_OCLIF] = {Args, Command, Flags}
  quietOnClosedStdout()
  try {
    const config = await Config.load(root)
    // Unknown commands: on a terminal @oclif/plugin-not-found asks "did you mean ...?";
    // without one, toolkit's own hook prints the suggestion on one line and exits 2.
    const notFoundOwner = process.stdin.isTTY ? config.plugins.get(config.pjson.name) : config.plugins.get('@oclif/plugin-not-found')
    if (notFoundOwner) notFoundOwner.hooks.command_not_found = []
    await run(argv, config)
    // oclif's flush waits for a 'drain' that never comes once the reader has gone.
    if (!process.stdout.destroyed && !process.stdout.errored) await flush()
  } catch (error) {
    const code = renderError(error, argv)
    // Let stdout drain before leaving so a piped error record is never cut off.
    process.stdout.write('', () => process.exit(code))
  }
}
