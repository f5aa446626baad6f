import {expect} from 'chai'
import {spawn} from 'node:child_process'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {Redis} from 'ioredis'
import pg from 'pg'

import {startServer, type Started} from './helpers/cli.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'

/** Rounds of the four light requests sent while the heavy statements run. */
const LIGHT_ROUNDS = 8
/**
 * A heavy statement ending this soon after a light request was sent does not count against it:
 * the request may fairly be answered just after. A server that ran each heavy statement to its
 * end before answering anyone would still fail nearly every round (its statements last
 * hundreds of milliseconds).
 */
const GRACE_MS = 50

/** Runs psql on a file; resolves with its output once it exits. */
function psqlFile(port: number, file: string): Promise<{code: null | number; out: string}> {
  return new Promise((resolve) => {
    const child = spawn('psql', ['-h', '127.0.0.1', '-p', String(port), '-U', 'svc', '-X', '-A', '-t', '-f', file], {env: {...process.env, PGPASSWORD: 'svc'}})
    let out = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (out += d.toString()))
    child.on('close', (code) => resolve({code, out}))
  })
}

// Issue 24: one client's heavy request must not stall the others. Speed is measured by
// bench/svc-noisy-neighbour.mjs; here only the order is asserted: light requests from other
// clients answer before the heavy statements in flight when they were sent have ended. (A server
// that runs a heavy statement to its end first fails nearly every request: checked by turning
// the loop budget of engine/loop-turns.ts off.)
describe('svc: a heavy request from one client does not stop the others (built CLI, psql, ioredis, node-postgres)', function () {
  this.timeout(180_000)
  let s: Started | undefined
  let redis: Redis | undefined
  after(() => {
    redis?.disconnect()
    if (s?.child.exitCode === null) s.child.kill('SIGKILL')
    cleanupTempDirs()
  })

  it('answers Redis GET, a PostgreSQL point select and REST reads while three 100,000-value IN lists (the most :max-in-values allows) and a 3,000-term OR chain run', async () => {
    const dir = tempDir()
    s = await startServer(['--data-dir', join(dir, 'data'), '--http-port', '0', '--redis-port', '0', '--pg-port', '0', '--log-level', 'error'])
    const ports = s.ready as {pg: number; redis: number; rest: number}
    const client = new pg.Client({database: 'svc', host: '127.0.0.1', password: 'svc', port: ports.pg, user: 'svc'})
    // A server that dies fails the test below with its stderr, not as an uncaught client error.
    client.on('error', () => {})
    await client.connect()
    await client.query('CREATE TABLE accounts (id int PRIMARY KEY, abalance int)')
    await client.query(`INSERT INTO accounts (id, abalance) VALUES ${Array.from({length: 200}, (_, i) => `(${i + 1}, ${i})`).join(', ')}`)
    const r = new Redis({host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, port: ports.redis})
    redis = r
    await r.connect()
    await r.set('k', 'v')

    const inStatement = `SELECT count(*) FROM accounts WHERE id IN (${Array.from({length: 100_000}, (_, i) => i + 1).join(',')})`
    const orChain = join(dir, 'or.sql')
    writeFileSync(orChain, `SELECT count(*) FROM accounts WHERE ${Array.from({length: 3000}, (_, i) => `id = ${i}`).join(' OR ')};\n`)
    // Three clients run the IN list back to back until the light rounds are over, so the load
    // outlasts them however fast or loaded the machine is. Each statement's start and end are
    // kept: a light request must be answered before the statements in flight when it was sent
    // end, not after them.
    const running: Array<{end?: number; start: number}> = []
    let stop = false
    const heavyClient = async (): Promise<string[]> => {
      const c = new pg.Client({database: 'svc', host: '127.0.0.1', password: 'svc', port: ports.pg, user: 'svc'})
      c.on('error', () => {})
      await c.connect()
      const counts: string[] = []
      try {
        while (!stop) {
          const run: {end?: number; start: number} = {start: performance.now()}
          running.push(run)
          const res = await c.query<{count: string}>(inStatement)
          run.end = performance.now()
          counts.push(res.rows[0].count)
        }
      } finally {
        await c.end()
      }
      return counts
    }
    const heavy = [heavyClient(), heavyClient(), heavyClient()]
    const or = psqlFile(ports.pg, orChain)
    // Let the statements reach the server before the light clients start.
    await new Promise((r) => setTimeout(r, 300))

    const light: Array<[string, () => Promise<unknown>]> = [
      ['Redis GET', async () => expect(await r.get('k')).to.equal('v')],
      ['PostgreSQL point select', async () => expect((await client.query('SELECT abalance FROM accounts WHERE id = $1', [7])).rows).to.deep.equal([{abalance: 6}])],
      ['REST GET', async () => expect((await fetch(`http://127.0.0.1:${ports.rest}/api/v1/documents/accounts:7`)).status).to.equal(200)],
      ['REST health', async () => expect((await fetch(`http://127.0.0.1:${ports.rest}/healthz`)).status).to.equal(200)],
    ]
    const late: string[] = []
    let checked = 0
    for (let round = 0; round < LIGHT_ROUNDS; round++) {
      for (const [what, run] of light) {
        const sent = performance.now()
        const inFlight = running.filter((h) => h.start <= sent && h.end === undefined)
        await run()
        const answered = performance.now()
        // Only statements that were in flight and did not end within the grace period count.
        const overtaken = inFlight.filter((h) => h.end !== undefined && h.end > sent + GRACE_MS && h.end < answered)
        if (inFlight.length > 0) checked++
        if (overtaken.length > 0) late.push(`${what} (round ${round}): ${(answered - sent).toFixed(0)} ms, after ${overtaken.length} heavy statement(s) ended`)
      }
    }
    stop = true
    // Most light requests were sent while heavy statements ran, and at most one in ten was
    // answered only after one of them ended (a GC pause on a loaded machine may cause that).
    expect(checked, 'light requests sent while a heavy statement ran').to.be.at.least(light.length * LIGHT_ROUNDS * 0.75)
    expect(late.length, late.join('\n')).to.be.at.most(Math.floor(checked / 10))

    // The heavy statements are answered correctly too, and nothing stored changed.
    for (const counts of await Promise.all(heavy)) {
      expect(counts.length).to.be.at.least(1)
      expect(new Set(counts)).to.deep.equal(new Set(['200']))
    }
    const orOut = await or
    expect(orOut.code, orOut.out).to.equal(0)
    expect(orOut.out.trim()).to.equal('200')
    expect((await client.query('SELECT count(*)::int AS n, sum(abalance)::int AS total FROM accounts')).rows).to.deep.equal([{n: 200, total: 19_900}])
    await client.end()
    r.disconnect()
    redis = undefined
    s.child.kill('SIGTERM')
    expect((await s.exited).code).to.equal(0)
  })
})
