import {expect} from 'chai'

import {KeyLocks} from '../../src/servers/redis/shared.js'

const tick = () => new Promise((r) => setImmediate(r))

describe('svc Redis key locks', () => {
  it('runs commands on one key one at a time, in arrival order, others at once, and forgets free keys', async () => {
    const locks = new KeyLocks()
    const log: string[] = []
    const gates = new Map<string, () => void>()
    const hold = (key: string, name: string) =>
      locks.with(key, async () => {
        log.push(`start ${name}`)
        await new Promise<void>((r) => gates.set(name, r))
        log.push(`end ${name}`)
        return name
      })
    const a1 = hold('a', 'a1')
    const a2 = hold('a', 'a2')
    const a3 = hold('a', 'a3')
    const b1 = hold('b', 'b1')
    await tick()
    expect(log).to.deep.equal(['start a1', 'start b1'])
    gates.get('a1')!()
    await tick()
    expect(log).to.deep.equal(['start a1', 'start b1', 'end a1', 'start a2'])
    gates.get('b1')!()
    gates.get('a2')!()
    await tick()
    gates.get('a3')!()
    expect(await Promise.all([a1, a2, a3, b1])).to.deep.equal(['a1', 'a2', 'a3', 'b1'])
    expect(log.filter((l) => l.startsWith('start a'))).to.deep.equal(['start a1', 'start a2', 'start a3'])
    expect(locks.size).to.equal(0)
  })

  it('a failing command releases the key to the next one', async () => {
    const locks = new KeyLocks()
    const failed = locks.with('k', async () => {
      throw new Error('boom')
    })
    const next = locks.with('k', async () => 'ran')
    expect(await failed.catch((error: Error) => error.message)).to.equal('boom')
    expect(await next).to.equal('ran')
    expect(locks.size).to.equal(0)
  })
})
