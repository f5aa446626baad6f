/**
 * Pauses for the heavy steps of one statement (lifting, planning, fetching and filtering a
 * 100,000-value IN list): they run in the event loop's shared slice (engine/loop-turns.ts) and let
 * other clients' sockets be served between slices (issue 24). A statement whose client cancelled
 * it or went away stops at its next pause with 57014 instead of finishing work nobody reads.
 */
import {nextTurn, overBudget} from '../engine/loop-turns.js'
import {SqlError} from './errors.js'

/** What a pause looks at: the session's cancel flag (set by CancelRequest or a closed socket). */
export interface Cancellable {
  cancelRequested: boolean
}

/** Items handled between two looks at the clock: a look costs about as much as one cheap item. */
export const ITEMS_PER_CHECK = 256

export function cancelled(): SqlError {
  return new SqlError('57014', 'canceling statement due to user request')
}

/**
 * Waits for a later turn of the loop when this turn's slice is used up, then throws 57014 if the
 * statement was cancelled meanwhile. Calling it before heavy work starts the slice's clock there.
 */
export async function pause(s?: Cancellable): Promise<void> {
  if (overBudget()) await nextTurn()
  if (s?.cancelRequested) {
    s.cancelRequested = false
    throw cancelled()
  }
}

/** Whether `pause` would wait or throw: a cheap look for loops over cheap items. */
function due(s?: Cancellable): boolean {
  return overBudget() || Boolean(s?.cancelRequested)
}

/**
 * The items that pass `keep`, looking at the slice every `every` items: a WHERE clause can cost
 * much more per row than a key (a subquery, a long OR chain), so it looks more often.
 */
export async function filterSliced<T>(items: T[], keep: (item: T) => boolean, s?: Cancellable, every = 16): Promise<T[]> {
  if (items.length <= every) return items.filter((x) => keep(x))
  await pause(s)
  const out: T[] = []
  for (let i = 0; i < items.length; i++) {
    if (i % every === every - 1 && due(s)) await pause(s)
    if (keep(items[i])) out.push(items[i])
  }
  return out
}

/** `items.map(f)`, looking at the slice every `ITEMS_PER_CHECK` items. */
export async function mapSliced<T, U>(items: T[], f: (item: T) => U, s?: Cancellable): Promise<U[]> {
  if (items.length <= ITEMS_PER_CHECK) return items.map((x) => f(x))
  await pause(s)
  const out: U[] = []
  for (let i = 0; i < items.length; i++) {
    if (i % ITEMS_PER_CHECK === ITEMS_PER_CHECK - 1 && due(s)) await pause(s)
    out.push(f(items[i]))
  }
  return out
}
