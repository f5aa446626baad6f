import {expect} from 'chai'

import {CheckpointSchedule} from '../src/engine/checkpoint-schedule.js'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe('svc engine checkpoint schedule', () => {
  it('runs one checkpoint after a burst of writes, once the writes have been quiet for the delay', async () => {
    const ranAt: number[] = []
    const s = new CheckpointSchedule(() => ranAt.push(performance.now()), {delayMs: 300, maxDelayMs: 60_000})
    let lastWrite = 0
    for (let i = 0; i < 5; i++) {
      s.schedule()
      lastWrite = performance.now()
      await sleep(20)
    }
    for (let i = 0; i < 200 && ranAt.length === 0; i++) await sleep(10)
    await sleep(50)
    expect(ranAt).to.have.length(1)
    // Counted from the last write, not the first (the timer armed by the first one waits for the rest).
    expect(ranAt[0] - lastWrite).to.be.at.least(298)
    s.cancel()
  })

  it('a steady stream of writes still gets a checkpoint once the first one has waited the longest delay', async () => {
    let runs = 0
    const s = new CheckpointSchedule(() => runs++, {delayMs: 50, maxDelayMs: 100})
    // A write every 5 ms never leaves the quiet period the short delay asks for.
    for (let i = 0; i < 100 && runs === 0; i++) {
      s.schedule()
      await sleep(5)
    }
    expect(runs).to.equal(1)
    s.cancel()
  })

  it('while checkpoints finish with writes behind them, the next waits for a bound that doubles up to its cap; one with none behind ends that', async () => {
    const bounds: number[] = []
    let behind = true
    const s: CheckpointSchedule = new CheckpointSchedule(
      () => {
        bounds.push(s.maxDelayMs)
        s.checkpointed(behind)
      },
      {delayMs: 20, maxDelayMs: 60, sustainedMaxDelayMs: 200},
    )
    // Writes 30 ms apart leave the 20 ms quiet period each time; only the first checkpoint comes from it.
    for (let i = 0; i < 400 && bounds.length < 4; i++) {
      s.schedule()
      await sleep(30)
    }
    expect(bounds).to.deep.equal([60, 120, 200, 200])
    // The stream ends: the next checkpoint finds nothing behind it, and a lone write is checkpointed after the quiet period again.
    behind = false
    s.schedule()
    for (let i = 0; i < 100 && bounds.length < 5; i++) await sleep(10)
    expect(s.maxDelayMs).to.equal(60)
    s.schedule()
    await sleep(150)
    expect(bounds).to.have.length(6)
    s.cancel()
  })

  it('a sustained stream that stops is checkpointed after a longer quiet period, not at its grown bound', async () => {
    const ranAt: number[] = []
    const s: CheckpointSchedule = new CheckpointSchedule(
      () => {
        ranAt.push(performance.now())
        s.checkpointed(true)
      },
      {delayMs: 10, maxDelayMs: 40, sustainedMaxDelayMs: 60_000},
    )
    // Writes 30 ms apart: sustained after the first checkpoint, and the bound grows past the test.
    for (let i = 0; i < 400 && ranAt.length < 4; i++) {
      s.schedule()
      await sleep(30)
    }
    // Four checkpoints with writes behind: the bound is 640 ms now.
    expect(s.maxDelayMs).to.equal(640)
    // The stream stops: one last write, then nothing. Its checkpoint comes after ten quiet periods (100 ms), long before the bound.
    const before = ranAt.length
    const last = performance.now()
    s.schedule()
    for (let i = 0; i < 200 && ranAt.length === before; i++) await sleep(10)
    expect(ranAt.length).to.equal(before + 1)
    expect(ranAt.at(-1)! - last).to.be.at.least(95).and.below(400)
    s.cancel()
  })

  it('cancel drops the pending checkpoint', async () => {
    let runs = 0
    const s = new CheckpointSchedule(() => runs++, {delayMs: 20, maxDelayMs: 1000})
    s.schedule()
    s.cancel()
    await sleep(100)
    expect(runs).to.equal(0)
  })
})
