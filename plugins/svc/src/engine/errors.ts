/**
 * Errors the engine raises. Every adapter maps `code` to its own protocol (REST status, Redis
 * error reply, PostgreSQL SQLSTATE), so the codes are part of the engine API.
 */
export type EngineErrorCode =
  | 'branch_exists'
  | 'branch_not_found'
  | 'closed'
  | 'conflict'
  /** Stored data is unreadable (a Git object is missing); the message names it. */
  | 'damaged'
  /** A JSON number literal a 64-bit float would not read back as written. */
  | 'inexact_number'
  | 'internal'
  | 'invalid_argument'
  | 'invalid_document'
  | 'invalid_id'
  | 'locked'
  | 'not_found'
  | 'reserved'
  | 'too_deep'
  | 'too_large'
  | 'unavailable'

export class EngineError extends Error {
  readonly code: EngineErrorCode
  /** Process exit code when this error ends a command. */
  readonly exitCode: number

  constructor(code: EngineErrorCode, message: string, options: {cause?: unknown} = {}) {
    super(message, options.cause === undefined ? undefined : {cause: options.cause})
    this.name = 'EngineError'
    this.code = code
    this.exitCode = code === 'invalid_argument' || code === 'invalid_id' || code === 'invalid_document' || code === 'reserved' || code === 'inexact_number' || code === 'too_deep' ? 2 : 1
  }
}

export function isEngineError(err: unknown): err is EngineError {
  return err instanceof Error && (err as {name?: string}).name === 'EngineError' && typeof (err as {code?: unknown}).code === 'string'
}
