/** An error that becomes a PostgreSQL ErrorResponse with this SQLSTATE. */
export class SqlError extends Error {
  readonly code: string
  readonly detail?: string
  readonly hint?: string
  readonly position?: number

  constructor(code: string, message: string, extra: {detail?: string; hint?: string; position?: number} = {}) {
    super(message)
    this.name = 'SqlError'
    this.code = code
    this.detail = extra.detail
    this.hint = extra.hint
    this.position = extra.position
  }
}

export const unsupported = (what?: string): SqlError =>
  new SqlError('0A000', 'Unsupported SQL statement', what ? {detail: what, hint: 'see docs/svc-sql.md for the supported subset'} : {hint: 'see docs/svc-sql.md for the supported subset'})

/** Maps an engine error code (plugins/svc/src/engine/errors.ts) to a SQLSTATE. */
export function fromEngine(e: unknown): SqlError {
  if (e instanceof SqlError) return e
  const msg = e instanceof Error ? e.message : String(e)
  const code = (e as {code?: unknown})?.code
  const map: Record<string, string> = {
    branch_exists: '42P06',
    branch_not_found: '3F000',
    closed: '57P01',
    conflict: '40001',
    damaged: 'XX001',
    invalid_argument: '22023',
    invalid_document: '22023',
    invalid_id: '22023',
    locked: '55P03',
    not_found: '42704',
    read_only: '25006',
    reserved: '42501',
    too_large: '54000',
    unavailable: '57P03',
  }
  return new SqlError(typeof code === 'string' && map[code] ? map[code] : 'XX000', msg)
}
