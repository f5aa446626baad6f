import {expect} from 'chai'

import {pauseBefore, restartWithBackoff} from '../src/engine/writer-recovery.js'

/**
 * When the Git writer dies of a full disk, each failed restart doubles the pause before the next
 * one (up to 30 s). Freeing space must end the pause at once: writes were refused for up to
 * 30 s after the disk had room again. A clock of our own: no test waits on the wall clock.
 */
describe('svc git writer restart pauses', () => {
  function clock() {
    let t = 0
    return {now: () => t, tick: async (ms: number) => void (t += ms)}
  }

  it('pauses 250 ms doubling up to 30 s between failed attempts', () => {
    expect([1, 2, 3, 4, 9, 10, 20].map(pauseBefore)).to.deep.equal([0, 250, 500, 1000, 30_000, 30_000, 30_000])
  })

  it('without news from retryNow, the 8th attempt comes after 16 s more', async () => {
    const c = clock()
    const at: number[] = []
    await restartWithBackoff({
      attempt: async (n) => {
        at.push(c.now())
        if (n < 8) throw new Error('No space left on device')
        return 'done'
      },
      closed: () => false,
      failed: () => {},
      ...c,
    })
    expect(at.at(-1)! - at.at(-2)!).to.equal(16_000)
  })

  it('retries as soon as retryNow says space was freed, whatever the pause has grown to', async () => {
    const c = clock()
    const at: number[] = []
    let freedAt = Infinity
    await restartWithBackoff({
      attempt: async (n) => {
        at.push(c.now())
        if (n === 7) freedAt = c.now() + 1_000
        if (c.now() < freedAt) throw new Error('No space left on device')
        return 'done'
      },
      closed: () => false,
      failed: () => {},
      retryNow: () => c.now() >= freedAt,
      ...c,
    })
    // Attempt 8 would have waited 16 s; it came 1 s after attempt 7, when space was freed.
    expect(at).to.have.length(8)
    expect(at[7] - at[6]).to.equal(1_000)
  })

  it('stops pausing and attempting once the engine closes', async () => {
    const c = clock()
    let attempts = 0
    let closed = false
    await restartWithBackoff({
      attempt: async () => {
        if (++attempts === 3) closed = true
        throw new Error('git writer died')
      },
      closed: () => closed,
      failed: () => {},
      ...c,
    })
    expect(attempts).to.equal(3)
  })
})
