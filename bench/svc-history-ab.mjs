#!/usr/bin/env node
// What the history index costs the write path: N writes (32 writers, one commit each, full-text
// off) with the history index off, then on, twice, in the same run; prints writes/s and the load.
// Usage: npm run build -w plugins/svc && node bench/svc-history-ab.mjs [documents, default 8000]
//
// History and as-of reads of two builds on kept fixtures (bench/svc-fixture.mjs), alternating, in
// one process, so an index whose file format differs is read on a fixture of its own format:
//   node bench/svc-history-ab.mjs --reads CHECKOUT_A:FIXTURE_A,CHECKOUT_B:FIXTURE_B [--docs N] [--n 2000] [--rounds 2]
// Each round opens a copy of each fixture (repository hard-linked, index and WAL copied) with its
// checkout's build, waits for the history index to catch up, and times the same seeded reads:
// `history` (limit 10) of documents never read before, `history` after the cursor of the version
// found (the commit-id lookup), and `asOf` by a time between the first and the last commit. Prints
// p50 / p99 ms, this process's CPU per read (the engine's own share; cat-file is a child) and
// whether every answer was the same as the other build's in that round. Which build goes first alternates.
import {spawnSync} from 'node:child_process'
import {cpSync, existsSync, mkdirSync, mkdtempSync, rmSync} from 'node:fs'
import {loadavg, tmpdir} from 'node:os'
import {join} from 'node:path'

const opt = (name, def) => {
  const i = process.argv.indexOf(`--${name}`)
  return i === -1 ? def : process.argv[i + 1]
}

if (opt('reads', undefined) === undefined) await writes()
else await reads()

async function writes() {
  const {openEngine} = await import(new URL('../plugins/svc/dist/index.js', import.meta.url))
  const N = Number(process.argv[2] ?? 8000)
  async function run(historyIndex) {
    const dir = mkdtempSync(join(tmpdir(), 'svc-history-ab-'))
    try {
      const db = await openEngine(dir, {fullText: false, historyIndex})
      let next = 0
      const t0 = performance.now()
      await Promise.all(Array.from({length: 32}, async () => {
        for (;;) {
          const i = next++
          if (i >= N) return
          await db.put({id: `items:${i}`, v: 'x'.repeat(150)})
        }
      }))
      await db.flush()
      const rate = N / ((performance.now() - t0) / 1000)
      await db.close()
      return rate
    } finally {
      rmSync(dir, {force: true, recursive: true})
    }
  }
  const rates = {false: [], true: []}
  for (const h of [false, true, false, true]) {
    const r = await run(h)
    rates[h].push(r)
    console.log(`history index ${h ? 'on ' : 'off'}: ${r.toFixed(0)} writes/s (load ${loadavg()[0].toFixed(1)})`)
  }
  console.log(`on/off: ${rates.true.map((r, i) => (r / rates.false[i]).toFixed(2)).join(', ')}`)
}

async function reads() {
  const pairs = String(opt('reads')).split(',').map((p) => {
    const [build, fixture] = p.split(':')
    return {build, fixture}
  })
  const docs = Number(opt('docs', 100_000))
  const n = Number(opt('n', 2000))
  const rounds = Number(opt('rounds', 2))
  // mulberry32, seeded: the same ids and times for every build and round.
  const seeded = (seed) => () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const pct = (v, p) => [...v].sort((a, b) => a - b)[Math.min(v.length - 1, Math.floor((v.length * p) / 100))]
  const git = (repo, args) => spawnSync('git', ['-C', repo, ...args], {encoding: 'utf8'}).stdout.trim()
  const repo0 = join(pairs[0].fixture, 'repo')
  const first = Number(git(repo0, ['log', '--reverse', '--format=%ct', 'main']).split('\n', 1)[0]) * 1000
  const last = Number(git(repo0, ['log', '-1', '--format=%ct', 'main'])) * 1000
  const results = []
  let reference
  for (let round = 0; round < rounds; round++) {
    // Which build goes first alternates by round (the first one in a process also warms its JIT).
    for (const b of round % 2 === 0 ? pairs.keys() : [...pairs.keys()].reverse()) {
      const {build, fixture} = pairs[b]
      const dir = join(mkdtempSync(join(tmpdir(), 'svc-history-reads-')), 'data')
      mkdirSync(dir)
      spawnSync('cp', ['-al', join(fixture, 'repo'), join(dir, 'repo')])
      for (const d of ['index', 'wal']) if (existsSync(join(fixture, d))) cpSync(join(fixture, d), join(dir, d), {recursive: true})
      const {openEngine} = await import(new URL('plugins/svc/dist/index.js', `file://${build}/`))
      const db = await openEngine(dir, {fullText: false})
      await db.historyCaughtUp()
      const rand = seeded(26 + round)
      const ids = Array.from({length: n + 200}, () => `items:${Math.floor(rand() * docs)}`)
      const times = Array.from({length: n + 200}, () => first + Math.floor(rand() * (last - first)))
      const answers = []
      const timed = async (fn) => {
        for (let i = 0; i < 200; i++) await fn(n + i) // warm-up, not counted
        const ms = []
        const c0 = process.cpuUsage()
        for (let i = 0; i < n; i++) {
          const t = performance.now()
          answers.push(await fn(i))
          ms.push(performance.now() - t)
        }
        const c = process.cpuUsage(c0)
        return {cpuUs: (c.user + c.system) / n, p50: pct(ms, 50), p99: pct(ms, 99)}
      }
      const load = loadavg()[0].toFixed(2)
      const history = await timed((i) => db.history(ids[i], {limit: 10}))
      const cursor = await timed(async (i) => {
        const h = await db.history(ids[i], {limit: 1})
        return h.versions[0] ? db.history(ids[i], {cursor: h.versions[0].commit, limit: 10}) : h
      })
      const asOf = await timed((i) => db.asOf(ids[i], {time: times[i]}))
      await db.close()
      rmSync(join(dir, '..'), {force: true, recursive: true})
      const key = JSON.stringify(answers.filter((_, i) => i % 7 === 0))
      const r = {asOf, build, cursor, fixture, history, load, round: round + 1, same: undefined}
      if (reference?.round === round) r.same = key === reference.key
      else reference = {key, round}
      results.push(r)
      const f = (x) => `${x.p50.toFixed(3)} / ${x.p99.toFixed(3)} ms, ${x.cpuUs.toFixed(0)} us CPU`
      console.log(`round ${r.round} ${build} on ${fixture} (load ${load}): history ${f(history)}; after a cursor ${f(cursor)}; as-of ${f(asOf)}${r.same === undefined ? '' : `; answers ${r.same ? 'the same' : 'DIFFER'}`}`)
    }
  }
  const med = (v) => pct(v, 50)
  for (const part of ['history', 'cursor', 'asOf']) {
    const of = (build, k) => med(results.filter((r) => r.build === pairs[build].build).map((r) => r[part][k]))
    console.log(`median ${part}: p50 ${of(1, 'p50').toFixed(3)} -> ${of(0, 'p50').toFixed(3)} ms (${(of(0, 'p50') / of(1, 'p50')).toFixed(2)}x), CPU ${of(1, 'cpuUs').toFixed(0)} -> ${of(0, 'cpuUs').toFixed(0)} us (${(of(0, 'cpuUs') / of(1, 'cpuUs')).toFixed(2)}x) (${pairs[1].build} -> ${pairs[0].build})`)
  }
}
