/**
 * Errors the engine raises. Every adapter maps `code` to its own protocol (REST status, Redis
 * error reply, PostgreSQL SQLSTATE), so the codes are part of the engine API.
 */
import type {Damage} from './types.js'

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
  /** A read-only follower refuses every write; the message names its leader. */
  | 'read_only'
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

/** The error text of a damaged document: what is wrong, and what to do. */
export function damageMessage(d: Damage): string {
  return `document ${d.id} is damaged: its git object ${d.object} ${d.reason ?? 'is missing from the repository'}; run toolkit svc diagnose, then restore from the last backup or put the document again`
}

/** A read that failed because the document is damaged (engine `blob`); carries what is damaged. */
export function damageOf(err: unknown): Damage | undefined {
  if (!isEngineError(err) || err.code !== 'damaged') return undefined
  return (err as {damage?: Damage}).damage
}

/** For multi-document reads: a damaged document is appended to `skipped` and reads as undefined; any other failure is rethrown. */
export function skipDamaged(error: unknown, skipped: Damage[] | undefined): undefined {
  const d = damageOf(error)
  if (d === undefined) throw error
  skipped?.push(d)
  return undefined
}

export function isEngineError(err: unknown): err is EngineError {
  return err instanceof Error && (err as {name?: string}).name === 'EngineError' && typeof (err as {code?: unknown}).code === 'string'
}

/** Whether a message (the WAL's ENOSPC, Git's own words) reports a full disk. */
export function isDiskFull(message: string): boolean {
  return /No space left on device|ENOSPC|Out of diskspace/i.test(message)
}

/**
 * Appends the spec's remedy to a message that reports a full disk (the WAL's ENOSPC, Git's "No
 * space left on device" / "Out of diskspace"); other messages are returned unchanged.
 */
export function withDiskFullRemedy(message: string): string {
  if (!isDiskFull(message)) return message
  return `${message} [No space left on device: free disk space (toolkit svc compact, or git gc on repo/), then restart the server if writes stay refused; acknowledged writes are kept]`
}
