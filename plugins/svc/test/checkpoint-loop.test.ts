import {expect} from 'chai'

import {CheckpointLoop} from '../src/engine/checkpoint-loop.js'

/**
 * A Git whose checkpoints the test completes by hand: every checkpoint the loop starts waits in
 * `pending` until the test resolves (or fails) it, so no assertion depends on timing.
 */
function fakeEngine() {
  const pending: Array<{fail(e: Error): void; finish(): void}> = []
  let announce: (() => void) | undefined
  const state = {behind: false, checkpoints: 0, closed: false, failed: [] as unknown[], failure: undefined as Error | undefined, writerDown: false}
  const loop: CheckpointLoop = new CheckpointLoop(
    {
      behind: () => state.behind,
      async checkpoint() {
        const generation = await loop.ask(
          () =>
            new Promise<void>((resolve, reject) => {
              pending.push({fail: reject, finish: resolve})
              announce?.()
            }),
        )
        state.checkpoints++
        state.behind = false
        loop.completed(generation, state.behind)
      },
      closed: () => state.closed,
      failed: (error) => state.failed.push(error),
      failure: () => state.failure,
      writerDown: () => state.writerDown,
    },
    // The debounce timer never fires within a test: only run() and force() start checkpoints.
    {delayMs: 3_600_000, maxDelayMs: 3_600_000},
  )
  /** Resolves when the loop has asked Git for checkpoint number `n` (1-based). */
  const requested = (n: number): Promise<void> =>
    new Promise((resolve) => {
      const check = (): void => {
        if (pending.length >= n) resolve()
        else announce = check
      }

      check()
    })
  return {loop, pending, requested, state}
}

/** Whether a promise has settled, looked at after every queued callback has run. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false
  p.then(
    () => (done = true),
    () => (done = true),
  )
  await new Promise((resolve) => setImmediate(resolve))
  return done
}

describe('svc engine checkpoint loop', () => {
  it('a caller who forces a checkpoint while one is on its way waits for the next one, which covers its writes', async () => {
    const {loop, pending, requested, state} = fakeEngine()
    state.behind = true
    const first = loop.run()
    await requested(1)
    expect(loop.inFlight).to.equal(1)
    // Writes made after the first checkpoint was asked for are not in it.
    const flushed = loop.force()
    pending[0].finish()
    await requested(2)
    expect(await settled(flushed), 'released by a checkpoint that started before it asked').to.equal(false)
    pending[1].finish()
    await flushed
    await first
    expect(state.checkpoints).to.equal(2)
    expect(loop.inFlight).to.equal(0)
    loop.cancel()
  })

  it('starts nothing while the Git writer is down, and catches up when run after its restart', async () => {
    const {loop, pending, requested, state} = fakeEngine()
    state.behind = true
    state.writerDown = true
    await loop.run()
    expect(pending).to.have.length(0)
    state.writerDown = false
    const resumed = loop.run()
    await requested(1)
    pending[0].finish()
    await resumed
    expect(state.checkpoints).to.equal(1)
    loop.cancel()
  })

  it("hands a failed checkpoint to the engine, and a failed engine's waiters get its error instead of waiting forever", async () => {
    const {loop, pending, requested, state} = fakeEngine()
    state.behind = true
    const flushed = loop.force()
    await requested(1)
    pending[0].fail(new Error('fast-import died'))
    await new Promise((resolve) => setImmediate(resolve))
    expect((state.failed[0] as Error).message).to.equal('fast-import died')
    expect(await settled(flushed)).to.equal(false)
    state.failure = new Error('git writer failed for good')
    loop.rejectWaiters(state.failure)
    let caught: unknown
    await flushed.catch((error: unknown) => (caught = error))
    expect(caught).to.equal(state.failure)
    // Later callers are refused at once.
    caught = undefined
    await loop.force().catch((error: unknown) => (caught = error))
    expect(caught).to.equal(state.failure)
    loop.cancel()
  })
})
