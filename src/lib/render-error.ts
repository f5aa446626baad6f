import {describeError} from '@toolkit/kit/errors'

import {stopSpinners} from './output.js'

/** True when the argument list asks for JSON records (`--format json` or `--format=json`). */
export function wantsJson(argv: string[]): boolean {
  const i = argv.indexOf('--format')
  return argv.includes('--format=json') || (i !== -1 && argv[i + 1] === 'json')
}

/**
 * The one place every failure of every command (ours or a third-party plugin's) is shown:
 * one line on stderr, an error record on stdout with --format json, and the exit code.
 */
export function renderError(err: unknown, argv: string[]): number {
  const e = err as {code?: string; oclif?: {exit?: number}}
  // this.exit(n) inside a command: nothing to print.
  if (e?.code === 'EEXIT') return e.oclif?.exit ?? 0
  stopSpinners()
  const record = describeError(err)
  process.stderr.write(`Error: ${record.message}\n`)
  if (process.env.DEBUG && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`)
  if (wantsJson(argv)) process.stdout.write(`${JSON.stringify({error: record, type: 'error'})}\n`)
  return record.exit
}
