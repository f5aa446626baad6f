import {expect} from 'chai'
import fc from 'fast-check'
import {join} from 'node:path'

import {Redis} from 'ioredis'
import pg from 'pg'

import {startServer, type Started} from '../helpers/cli.js'
import {cleanupTempDirs, gitOut, tempDir} from '../helpers/tmp.js'

// Issue 20's crash soak, short enough for CI: SOAK_CYCLES (default 3) rounds of mixed writes from
// REST, Redis and PostgreSQL clients, a SIGKILL at a seeded random moment, a restart, and then
// every acknowledged write must read back, `git fsck --full` must be clean and the full-text index
// must count every document. The longer run: SOAK_CYCLES=20 npx mocha ... (docs/reliability.md).
const CYCLES = Number(process.env.SOAK_CYCLES ?? 3)
const SEED = Number(process.env.SOAK_SEED ?? 20_241_124)

describe('svc crash soak: SIGKILL during mixed REST/Redis/PostgreSQL writes loses no acknowledged write (built CLI)', function () {
  this.timeout(Math.max(600_000, CYCLES * 90_000))
  let s: Started | undefined
  after(() => {
    if (s?.child.exitCode === null) s.child.kill('SIGKILL')
    cleanupTempDirs()
  })

  it(`keeps every acknowledged write over ${CYCLES} kill -9 cycles; git fsck clean, index count = document count`, async () => {
    const dir = join(tempDir(), 'data')
    // Seeded kill moments: after 30 to 119 acknowledged writes of the cycle, plus 0 to 49 ms.
    const kills = fc.sample(fc.tuple(fc.integer({max: 119, min: 30}), fc.integer({max: 49, min: 0})), {numRuns: CYCLES, seed: SEED})
    const acked = new Map<string, string>()
    const start = async (): Promise<{pgPort: number; redisPort: number; rest: string}> => {
      s = await startServer(['--data-dir', dir, '--http-port', '0', '--redis-port', '0', '--pg-port', '0', '--log-level', 'error'])
      const r = s.ready as {pg: number; redis: number; rest: number}
      return {pgPort: r.pg, redisPort: r.redis, rest: `http://127.0.0.1:${r.rest}`}
    }

    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const {pgPort, redisPort, rest} = await start()
      const sql = new pg.Client({database: 'svc', host: '127.0.0.1', password: 'svc', port: pgPort, user: 'svc'})
      sql.on('error', () => {})
      await sql.connect()
      if (cycle === 0) await sql.query('CREATE TABLE soak (id text PRIMARY KEY, v text NOT NULL)')
      const redis = new Redis({host: '127.0.0.1', maxRetriesPerRequest: 0, port: redisPort, retryStrategy: () => null})
      redis.on('error', () => {})
      let stop = false
      const writer = async (name: string, write: (i: number) => Promise<[string, string]>): Promise<void> => {
        for (let i = 0; !stop; i++) {
          try {
            const [id, v] = await write(i)
            acked.set(id, v)
          } catch (error) {
            if (process.env.SOAK_DEBUG) console.log(name, i, (error as Error).message)
            return // the server is gone: this write was never acknowledged
          }
        }
      }
      const writers = [
        writer('rest', async (i) => {
          const id = `rest:c${cycle}-${i}`
          const v = `rest ${cycle} ${i}`
          const r = await fetch(`${rest}/api/v1/documents/${id}`, {body: JSON.stringify({v}), method: 'PUT'})
          if (r.status !== 200) throw new Error(`PUT ${r.status}`)
          return [id, v]
        }),
        writer('redis', async (i) => {
          const id = `redis:c${cycle}-${i}`
          const v = `redis ${cycle} ${i}`
          if ((await redis.set(id, v)) !== 'OK') throw new Error('SET failed')
          return [id, v]
        }),
        writer('pg', async (i) => {
          const key = `c${cycle}-${i}`
          const v = `pg ${cycle} ${i}`
          await sql.query('INSERT INTO soak (id, v) VALUES ($1, $2)', [key, v])
          return [`soak:${key}`, v]
        }),
      ]
      const [writes, ms] = kills[cycle]
      const target = acked.size + writes
      while (acked.size < target && s?.child.exitCode === null) await new Promise((r) => setTimeout(r, 2))
      await new Promise((r) => setTimeout(r, ms))
      s?.child.kill('SIGKILL')
      await s?.exited
      stop = true
      await Promise.all(writers)
      redis.disconnect()
      await sql.end().catch(() => {})
    }

    // Restart once more and check everything acknowledged in every cycle.
    const {pgPort, rest} = await start()
    expect(acked.size).to.be.at.least(CYCLES * 30)
    if (process.env.FUZZ_REPORT) console.log('crash soak', {acknowledged: acked.size, cycles: CYCLES})
    const missing: string[] = []
    for (const [id, v] of acked) {
      const r = await fetch(`${rest}/api/v1/documents/${encodeURIComponent(id)}`)
      if (r.status !== 200) {
        missing.push(`${id} (${r.status})`)
        continue
      }
      const doc = (await r.json()) as {v?: string; value?: string}
      // Redis strings are stored as {value}; REST and SQL documents carry v.
      if ((doc.v ?? doc.value) !== v) missing.push(`${id}: ${JSON.stringify(doc)}`)
    }
    expect(missing, `acknowledged writes lost or changed: ${missing.slice(0, 10).join(', ')}`).to.deep.equal([])
    const sql = new pg.Client({database: 'svc', host: '127.0.0.1', password: 'svc', port: pgPort, user: 'svc'})
    await sql.connect()
    const pgAcked = [...acked.keys()].filter((k) => k.startsWith('soak:')).length
    expect(Number((await sql.query('SELECT count(*) AS n FROM soak')).rows[0].n)).to.be.at.least(pgAcked)
    await sql.end()
    // The full-text index counts every document once it has caught up with the repository.
    const metrics = async (): Promise<{docs: number; index: number}> => {
      const text = await (await fetch(`${rest}/metrics`)).text()
      const num = (name: string): number => Number(new RegExp(`^${name}\\{branch="main"\\} (\\d+)`, 'm').exec(text)?.[1])
      return {docs: num('svc_documents'), index: num('svc_index_documents')}
    }
    let m = await metrics()
    for (let i = 0; i < 200 && m.docs !== m.index; i++) {
      await new Promise((r) => setTimeout(r, 100))
      m = await metrics()
    }
    expect(m.index, JSON.stringify(m)).to.equal(m.docs)
    s?.child.kill('SIGTERM')
    expect((await s?.exited)?.code).to.equal(0)
    gitOut(join(dir, 'repo'), ['fsck', '--full', '--no-progress'])
  })
})
