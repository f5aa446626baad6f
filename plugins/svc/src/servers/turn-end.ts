/**
 * Work run once at the end of this turn of the event loop, after every socket read in it has been
 * served: the Redis and PostgreSQL servers write their answers there, as redis writes its replies
 * in beforeSleep. Writing each connection's answer as soon as it was made woke its client, and on
 * a busy 2-core machine each wake-up took the CPU from the server before it had answered the
 * others (about one involuntary context switch per query at 8 pgbench clients). The check phase
 * follows the poll phase without waiting, so no timer delays an answer.
 */
const due = new Map<object, () => void>()
let queued = false

/** Runs `run` at the end of this turn; a second call for the same `owner` in the turn adds nothing. */
export function atTurnEnd(owner: object, run: () => void): void {
  if (due.has(owner)) return
  due.set(owner, run)
  if (queued) return
  queued = true
  setImmediate(runDue)
}

function runDue(): void {
  queued = false
  for (const run of due.values()) run()
  due.clear()
}
