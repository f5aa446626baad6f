import {setTimeout as sleep} from 'node:timers/promises'

/** What the loop needs to know about a failed model request, whichever SDK threw it. */
export interface Failure {
  /** The vendor said the conversation is longer than the model's context. */
  context: boolean
  message: string
  retryable: boolean
  /** Seconds the vendor asked us to wait (retry-after), when it said so. */
  retryAfter: null | number
  status: null | number
}

const CONTEXT = /prompt is too long|context[ _]length|context window|maximum context|too many tokens|input is too long|exceeds the maximum/i

/** Reads the status, headers and message of an SDK error (all three SDKs use these names). */
export function classify(error: unknown): Failure {
  const e = (error ?? {}) as {code?: unknown; headers?: unknown; message?: unknown; name?: unknown; status?: unknown}
  const status = typeof e.status === 'number' ? e.status : typeof e.code === 'number' ? e.code : null
  const message = typeof e.message === 'string' ? e.message : String(error)
  const retryAfter = retryAfterOf(e.headers)
  if (status === null) {
    // No HTTP status: the connection failed or the stream was cut, or the stream carried an error
    // event (overloaded). Worth another try, unless it was our own abort.
    return {context: false, message, retryable: e.name !== 'AbortError' && !/abort/i.test(String(e.name)), retryAfter, status}
  }
  const context = (status === 400 || status === 413) && CONTEXT.test(message)
  const retryable = status === 408 || status === 409 || status === 429 || status >= 500
  return {context, message, retryable, retryAfter, status}
}

function retryAfterOf(headers: unknown): null | number {
  const get = (name: string): null | string => {
    if (!headers) return null
    if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name)
    const v = (headers as Record<string, unknown>)[name]
    return typeof v === 'string' ? v : null
  }
  const ms = Number(get('retry-after-ms'))
  if (get('retry-after-ms') !== null && Number.isFinite(ms)) return ms / 1000
  const raw = get('retry-after')
  if (raw === null) return null
  const seconds = Number(raw)
  if (Number.isFinite(seconds)) return seconds
  const at = Date.parse(raw)
  return Number.isNaN(at) ? null : Math.max(0, (at - Date.now()) / 1000)
}

export interface RetryOptions {
  /** Tries after the first. */
  retries: number
  signal: AbortSignal
  /** Called before each wait, so the run can say it is waiting. */
  waiting(seconds: number, failure: Failure, attempt: number): void
}

/** Exponential backoff (1, 2, 4 ... 30 s, with jitter) unless the vendor said how long to wait. */
export function backoff(attempt: number, failure: Failure): number {
  if (failure.retryAfter !== null) return Math.min(failure.retryAfter, 120)
  return Math.min(30, 2 ** (attempt - 1)) * (0.75 + Math.random() * 0.5)
}

/** Runs `request` until it succeeds, a failure is not retryable, or the tries run out. */
export async function withRetries<T>(request: () => Promise<T>, o: RetryOptions): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await request()
    } catch (error) {
      if (o.signal.aborted) throw error
      const failure = classify(error)
      if (!failure.retryable || attempt > o.retries) throw error
      const seconds = backoff(attempt, failure)
      o.waiting(seconds, failure, attempt)
      await sleep(seconds * 1000, undefined, {signal: o.signal})
    }
  }
}
