/**
 * One budget of event-loop time for heavy work, shared by every connection of every protocol
 * (issue 24). Work that can be cut into pieces (a pipeline of replies, an MGET of large documents,
 * a large request body) asks `overBudget()` between pieces and, when it is over, waits for
 * `nextTurn()`. Waiting pieces resume one per turn of the event loop, in arrival order, so sockets
 * are polled between any two slices and a light client's request waits for about one slice,
 * however many heavy clients there are.
 *
 * Why not a `setImmediate` per connection: every immediate queued before a check phase runs in
 * that phase, so forty slow readers that each yielded after their own 8 ms woke together and held
 * the loop for a second.
 */
import {performance} from 'node:perf_hooks'

/** Heavy work runs at most about this long before the loop polls sockets again. */
export const SLICE_MS = 4

let sliceStart = 0
/** Whether `sliceStart` belongs to the current turn of the loop. */
let armed = false
let resetQueued = false
let dispatchQueued = false
const waiting: Array<() => void> = []

function startSlice(): void {
  sliceStart = performance.now()
  armed = true
  if (!resetQueued) {
    resetQueued = true
    setImmediate(reset)
  }
}

function reset(): void {
  resetQueued = false
  armed = false
}

/** True when heavy work in this turn of the loop (by any connection) has used up the slice. */
export function overBudget(): boolean {
  if (!armed) startSlice()
  return performance.now() - sliceStart > SLICE_MS
}

/** Resolves in a later turn of the loop, after the heavy work that asked before it. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve)
    if (!dispatchQueued) {
      dispatchQueued = true
      setImmediate(dispatch)
    }
  })
}

/** Waits for a later turn when this one's slice is used up. */
export async function pace(): Promise<void> {
  if (overBudget()) await nextTurn()
}

function dispatch(): void {
  dispatchQueued = false
  const next = waiting.shift()
  if (waiting.length > 0) {
    dispatchQueued = true
    setImmediate(dispatch)
  }
  startSlice()
  next?.()
}
