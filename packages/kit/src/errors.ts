import {stripVTControlCharacters} from 'node:util'

/**
 * Errors that carry their exit code. The host's error renderer reads `exitCode` and `code`
 * by shape, not by class, because each plugin bundles its own copy of this module.
 */
export class ToolkitError extends Error {
  readonly code: string
  readonly exitCode: number

  constructor(message: string, options: {cause?: unknown; code?: string; exit?: number} = {}) {
    super(message, options.cause === undefined ? undefined : {cause: options.cause})
    this.name = 'ToolkitError'
    this.code = options.code ?? 'runtime_error'
    this.exitCode = options.exit ?? 1
  }
}

/** Wrong use of the command line: exit 2. */
export class UsageError extends ToolkitError {
  constructor(message: string, code = 'usage_error') {
    super(message, {code, exit: 2})
    this.name = 'UsageError'
  }
}

/** A malformed input or config file: exit 2, message names the file and line. */
export class InputError extends ToolkitError {
  readonly file?: string
  readonly line?: number

  constructor(message: string, where: {code?: string; column?: number; file?: string; line?: number} = {}) {
    const at = where.file ? `${where.file}${where.line ? `:${where.line}${where.column ? `:${where.column}` : ''}` : ''}: ` : ''
    super(`${at}${message}`, {code: where.code ?? 'invalid_input', exit: 2})
    this.name = 'InputError'
    this.file = where.file
    this.line = where.line
  }
}

export interface ErrorRecord {
  code: string
  exit: number
  message: string
}

/** The one line a user sees for any thrown value, and the exit code it maps to. */
export function describeError(err: unknown): ErrorRecord {
  const e = (err ?? {}) as {code?: unknown; exitCode?: unknown; message?: unknown; oclif?: {exit?: number}}
  let exit = typeof e.exitCode === 'number' ? e.exitCode : (e.oclif?.exit ?? 1)
  // oclif's not-found plugin exits 127; toolkit's contract says an unknown command is a usage error.
  if (exit === 127) exit = 2
  const raw = typeof e.message === 'string' && e.message ? e.message : String(err)
  const lines = stripVTControlCharacters(raw).split('\n').map((l) => l.trim()).filter(Boolean)
  const message = lines.find((l) => !/^see more help with/i.test(l)) ?? 'unknown error'
  const code = typeof e.code === 'string' && e.code && !e.code.startsWith('E') ? e.code : exit === 2 ? 'usage_error' : 'runtime_error'
  return {code, exit, message}
}
