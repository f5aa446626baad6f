import {expect} from 'chai'
import {openSync, readSync} from 'node:fs'
import type {Socket} from 'node:net'
import {performance} from 'node:perf_hooks'

import type pg from 'pg'

import {type Harness, pgClient, startHarness} from '../redis/harness.js'

/**
 * A clock of this thread's CPU time in ms (Linux schedstat), or undefined elsewhere. The kernel
 * brings it up to date at its ticks and context switches, so one reading can be a tick late.
 */
function threadCpuClock(): (() => number) | undefined {
  try {
    const fd = openSync('/proc/thread-self/schedstat', 'r')
    const buf = Buffer.alloc(128)
    return () => Number(buf.toString('latin1', 0, readSync(fd, buf, 0, 128, 0)).split(' ')[0]) / 1e6
  } catch {
    return undefined
  }
}

/**
 * Runs each of `works` in turn while a 1 ms timer marks the turns of the event loop: for each
 * work, the longest turn it ran in. A turn that did not poll sockets kept every other client
 * waiting that long. A turn's length is the lesser of its wall time and this thread's CPU time
 * in it: a loaded machine lengthens the wall time (the thread waits for a core), not the CPU
 * time, and the wall time bounds the CPU clock's late ticks. The server runs on this thread.
 */
async function longestTurns(works: Array<() => Promise<unknown>>): Promise<number[]> {
  const cpuClock = threadCpuClock()
  const longest = works.map(() => 0)
  let current = 0
  let lastWall = performance.now()
  let lastCpu = cpuClock?.() ?? 0
  const timer = setInterval(() => {
    const wall = performance.now()
    const cpu = cpuClock?.() ?? wall
    longest[current] = Math.max(longest[current], Math.min(wall - lastWall, cpuClock ? cpu - lastCpu : wall - lastWall))
    lastWall = wall
    lastCpu = cpu
  }, 1)
  try {
    for (const [i, work] of works.entries()) {
      current = i
      await work()
    }
    return longest
  } finally {
    clearInterval(timer)
  }
}

// Issue 24: the heaviest statement the limits allow (a 100,000-value IN list) is lifted, planned,
// filtered and answered in slices of the event loop, so another connection's point selects are
// answered between them; before, its keys were built in one turn of 20-35 ms on a CPU.
describe('svc PostgreSQL: a 100,000-value IN list does not hold the event loop (node-postgres)', function () {
  this.timeout(120_000)
  let h: Harness
  let heavy: pg.Client
  let light: pg.Client
  const ROWS = 1000
  const VALUES = 100_000

  before(async () => {
    h = await startHarness({redis: false})
    heavy = await pgClient(h)
    light = await pgClient(h)
    await heavy.query('CREATE TABLE accounts (id int PRIMARY KEY, abalance int)')
    for (let start = 1; start <= ROWS; start += 500) {
      const values: string[] = []
      for (let i = start; i < start + 500; i++) values.push(`(${i}, ${i % 100})`)
      await heavy.query(`INSERT INTO accounts (id, abalance) VALUES ${values.join(', ')}`)
    }
  })

  after(async () => {
    await heavy?.end().catch(() => undefined)
    await light?.end().catch(() => undefined)
    await h?.close()
  })

  // Every other value from 2: 500 of the table's ids are in the list, one fewer with each offset.
  const inList = (offset: number): string => `SELECT count(*) AS n FROM accounts WHERE id IN (${Array.from({length: VALUES}, (_, j) => 2 * j + 2 + 2 * offset).join(',')})`
  const texts = [0, 1, 2, 3, 4].map((k) => inList(k))
  const warmUp = inList(5)

  it('answers point selects on another connection between the slices of the heaviest IN lists', async () => {
    let stop = false
    let selects = 0
    const pointSelects = (async () => {
      for (let i = 0; !stop; i++) {
        const id = 1 + (i % ROWS)
        const r = await light.query('SELECT abalance FROM accounts WHERE id = $1', [id])
        expect(r.rows).to.deep.equal([{abalance: id % 100}])
        selects++
      }
    })()
    // Once unmeasured: the first run of the lexer and the planner is not yet optimised.
    await heavy.query(warmUp)
    const counts: number[] = []
    const longest = await longestTurns(texts.map((text) => async () => counts.push(Number((await heavy.query(text)).rows[0].n))))
    stop = true
    await pointSelects
    expect(counts).to.deep.equal([500, 499, 498, 497, 496])
    expect(selects).to.be.greaterThan(texts.length * 3)
    // Each statement's longest turn; the median, so that one garbage collection or late tick does
    // not decide. Measured on a loaded 2-core machine: 12-15 ms when the keys were built in one
    // turn (the 15-37 ms turns of the noisy-neighbour bench), 6-9 ms since.
    const median = [...longest].sort((a, b) => a - b)[Math.floor(longest.length / 2)]
    if (process.env.HEAVY_DEBUG) console.log('longest turns', longest.map((x) => x.toFixed(1)).join(' '))
    expect(median, `longest turns on a CPU: ${longest.map((x) => x.toFixed(1)).join(', ')} ms`).to.be.lessThan(13)
  })

  it('reads a 100,000-element = ANY($1) array in slices too, and answers it exactly', async () => {
    // The array's text form, as node-postgres sends a JS array (made here beforehand: this thread
    // is also the server's): 600 KB for the planner and the filter to read.
    const arrays = [0, 1, 2, 3].map((k) => `{${Array.from({length: VALUES}, (_, j) => 2 * j + 2 + 2 * k).join(',')}}`)
    await heavy.query('SELECT count(*) AS n FROM accounts WHERE id = ANY($1)', [arrays[3]])
    const counts: number[] = []
    const longest = await longestTurns(arrays.slice(0, 3).map((a) => async () => counts.push(Number((await heavy.query('SELECT count(*) AS n FROM accounts WHERE id = ANY($1)', [a])).rows[0].n))))
    expect(counts).to.deep.equal([500, 499, 498])
    const median = [...longest].sort((a, b) => a - b)[1]
    if (process.env.HEAVY_DEBUG) console.log('longest turns', longest.map((x) => x.toFixed(1)).join(' '))
    // Before, the array was read twice in one turn each: 40-100 ms.
    expect(median, `longest turns on a CPU: ${longest.map((x) => x.toFixed(1)).join(', ')} ms`).to.be.lessThan(13)
  })

  it('EXPLAIN names the access path the IN list takes, and it stays under the limit', async () => {
    const plan = (await heavy.query(`EXPLAIN ${texts[0]}`)).rows.map((r: {'QUERY PLAN': string}) => r['QUERY PLAN']).join('\n')
    expect(plan).to.match(/Table Scan on accounts/)
    const small = (await heavy.query('EXPLAIN SELECT * FROM accounts WHERE id IN (1,2,3,4,5,6,7,8,9,10)')).rows.map((r: {'QUERY PLAN': string}) => r['QUERY PLAN']).join('\n')
    expect(small).to.match(/Id Lookup on accounts {2}\(engine get, 10 keys\)/)
    const over = await heavy.query(`SELECT count(*) FROM accounts WHERE id IN (${Array.from({length: VALUES + 1}, (_, j) => j).join(',')})`).catch((error: {code?: string}) => error)
    expect((over as {code?: string}).code).to.equal('54001')
  })

  it('stops a statement whose client went away before it reads the table', async () => {
    const before = {count: h.calls.count ?? 0, list: h.calls.list ?? 0}
    const gone = await pgClient(h)
    gone.on('error', () => {})
    const stream = (gone as unknown as {connection: {stream: Socket}}).connection.stream
    const answered = gone.query(texts[0]).then(() => 'answered', (error: Error) => error.message)
    // Once the whole text is in the kernel's hands the server reads it; then the client goes away.
    while (stream.writableLength > 0) await new Promise((r) => setTimeout(r, 1))
    stream.destroy()
    expect(await answered).to.not.equal('answered')
    // The server's pauses look at the closed connection well within this.
    for (let i = 0; i < 20; i++) await new Promise((r) => setTimeout(r, 25))
    expect({count: h.calls.count ?? 0, list: h.calls.list ?? 0}).to.deep.equal(before)
    // The server still answers others.
    expect((await light.query('SELECT abalance FROM accounts WHERE id = 7')).rows).to.deep.equal([{abalance: 7}])
  })
})
