/**
 * A mission failure that another attempt cannot fix (the provider cannot do what the input asks,
 * a credential is refused, ...). The scheduler does not retry it, records `retry: false` with the
 * reason, and the report says what must change before `--resume` can succeed. Providers may also
 * throw any error with `permanent: true`.
 */
export class PermanentFailure extends Error {
  readonly permanent = true

  constructor(message: string) {
    super(message)
    this.name = 'PermanentFailure'
  }
}

export function isPermanent(error: unknown): boolean {
  return error instanceof PermanentFailure || (typeof error === 'object' && error !== null && (error as {permanent?: unknown}).permanent === true)
}
