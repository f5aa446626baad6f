/**
 * Background work that no request waits for (the history index's catch-up, the full-text row
 * lengths' warm-up) gives way while requests keep arriving, instead of competing with them for
 * the cores and the event loop (issue 13: right after start every search of the first seconds ran
 * beside `git log`, its relay and the history worker, and the slowest 5% of 300 searches took
 * 10-40x their own time; issue 26: current reads at 1M ran beside the warm-up's slices).
 *
 * Requests are noticed by the engine's entry points (`noteForeground`: a counter, nothing else on
 * the request path). A task asks `hold()` between its steps: true while a request came within
 * the last QUIET_MS. The hold is bounded: after MAX_HOLD_MS of holding the task runs MIN_RUN_MS
 * whatever arrives, so under a steady stream of requests it still finishes, at about a tenth of
 * its speed (what nice 10 gave it on a busy core before).
 */
import {performance} from 'node:perf_hooks'

/** A request this recent counts as "requests are in flight". */
export const QUIET_MS = 50
/** The longest one hold lasts while requests keep arriving. */
export const MAX_HOLD_MS = 1000
/** After a hold ran out, the task runs at least this long before it may be held again. */
export const MIN_RUN_MS = 100
/** How often a held task looks again. */
const POLL_MS = 20

let ops = 0
let seenOps = 0
let lastRequestAt = Number.NEGATIVE_INFINITY

/** A request reached the engine (reads, searches, writes: the engine's public entry points). */
export function noteForeground(): void {
  ops++
}

/** True when a request arrived within QUIET_MS (as seen by the samples taken so far). */
export function requestsInFlight(now = performance.now()): boolean {
  // Sampled when asked: a change seen late counts as recent, so a long gap between two asks
  // errs towards holding (the bound still applies).
  if (ops !== seenOps) {
    seenOps = ops
    lastRequestAt = now
  }
  return now - lastRequestAt < QUIET_MS
}

/**
 * Resolves once no request has reached the engine for `quietMs` while `ready()` held (the other
 * start-up catch-up is over), or `maxWaitMs` after the call whatever arrives, or at once when
 * `urgent()` (a request waits for the job itself), or at abort. For
 * a job that cannot be held once it runs (one `git` process for seconds: the commit-graph write),
 * so it starts in a pause instead of under the first requests after open.
 */
export async function whenQuiet(quietMs: number, maxWaitMs: number, signal: AbortSignal, ready: () => boolean = () => true, urgent: () => boolean = () => false): Promise<void> {
  const started = performance.now()
  let seen = ops
  // The quiet is counted from the call: the clients of a server that just opened are arriving.
  let quietSince = started
  while (!signal.aborted && !urgent()) {
    const now = performance.now()
    if (ops !== seen || !ready()) {
      seen = ops
      quietSince = now
    }
    if (now - quietSince >= quietMs || now - started >= maxWaitMs) return
    await new Promise<void>((resolve) => {
      const t = setTimeout(done, QUIET_POLL_MS)
      t.unref()
      function done(): void {
        clearTimeout(t)
        signal.removeEventListener('abort', done)
        resolve()
      }
      signal.addEventListener('abort', done, {once: true})
    })
  }
}

/** How often whenQuiet looks. */
const QUIET_POLL_MS = 50

/** How many times background tasks were held (tests, /metrics-style counters). */
export const gateStats = {held: 0}

/** One background task's gate: its own hold and run times. */
export class BackgroundGate {
  private heldSince: number | undefined
  private runUntil = 0

  /** Whether the task should wait now (requests in flight, and its bounded hold not used up). */
  hold(now = performance.now()): boolean {
    if (now < this.runUntil) return false
    if (!requestsInFlight(now)) {
      this.heldSince = undefined
      return false
    }
    if (this.heldSince === undefined) {
      this.heldSince = now
      gateStats.held++
    }
    if (now - this.heldSince < MAX_HOLD_MS) return true
    this.heldSince = undefined
    this.runUntil = now + MIN_RUN_MS
    return false
  }

  /**
   * Resolves once the task may go on: at once when nothing holds it, else when the requests
   * stop, the hold runs out, `urgent()` says a request now waits for this task itself, or
   * `signal` aborts (the engine closing).
   */
  async pass(signal?: AbortSignal, urgent?: () => boolean): Promise<void> {
    while (!signal?.aborted && !urgent?.() && this.hold()) await new Promise((r) => setTimeout(r, POLL_MS))
  }
}
