#!/usr/bin/env node
// svc at scale (issue 26): writes N of the fixture's ~200-byte documents through the engine API
// (32 writers, one commit per write), then measures what grows with the data: sustained write
// rate, current-read p50/p99, search p95, as-of and history reads, time to ready with the
// full-text index on disk and when it must be rebuilt, RSS, and the repository's size after
// compaction. Each size runs in its own child process (clean RSS), all sizes in the same run,
// and the growth ratios from the smallest size are printed.
// History and as-of reads are also measured walking Git (the engine opened with historyIndex off,
// as before the history index) on the same data in the same run, and both answers compared.
// Usage: node bench/svc-scale.mjs [--docs 100000,1000000] [--queries 300] [--reads 2000] [--walked 5] [--json]
import {spawnSync} from 'node:child_process'
import {rmSync} from 'node:fs'
import {loadavg} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {line, pct, tempDir} from './svc-common.mjs'
import {makeDoc, rand, word} from './svc-fixture.mjs'

const opt = (name, def) => {
  const i = process.argv.indexOf(`--${name}`)
  return i === -1 ? def : process.argv[i + 1]
}
/** Documents given a second version after the as-of point; as-of and history reads each read them once. */
const VERSIONED = 50
const load = () => loadavg().map((x) => x.toFixed(2)).join(' ')

if (opt('one', undefined) !== undefined) await one(Number(opt('one')))
else parent()

function parent() {
  const sizes = String(opt('docs', '100000,1000000')).split(',').map(Number)
  const results = []
  for (const n of sizes) {
    console.error(`svc-scale: ${n} documents (load ${load()}, ${new Date().toISOString()})`)
    const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--one', String(n), '--queries', String(opt('queries', 300)), '--reads', String(opt('reads', 2000)), '--walked', String(opt('walked', 5))], {
      encoding: 'utf8',
      maxBuffer: 1 << 24,
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    if (r.status !== 0) {
      console.error(`svc-scale: the ${n}-document run failed (exit ${r.status})`)
      break
    }
    results.push(JSON.parse(r.stdout.trim().split('\n').at(-1)))
    print(results.at(-1))
  }
  if (results.length > 1) {
    const a = results[0]
    for (const b of results.slice(1)) {
      console.log(`growth ${a.docs} -> ${b.docs} documents (ratio ${b.docs / a.docs}x the data; 1.00 = flat):`)
      for (const k of Object.keys(a)) if (k !== 'docs' && typeof a[k] === 'number' && a[k] > 0) line(`  ${k}`, `${(b[k] / a[k]).toFixed(2)}x`)
    }
  }
  if (process.argv.includes('--json')) console.log(JSON.stringify(results))
}

function print(r) {
  console.log(`${r.docs} documents (load at the end ${r.load}):`)
  line('  sustained writes/s (32 writers, until all in Git)', r.writesPerSec.toFixed(0))
  line('  repository MB after compaction', r.repoMB.toFixed(1))
  line('  open ms / index ready ms, index on disk', `${r.openMs.toFixed(0)} / ${r.readyMs.toFixed(0)}`)
  line('  current read p50 / p99 ms', `${r.getP50.toFixed(3)} / ${r.getP99.toFixed(3)}`)
  line('  search p95 ms (limit 10, documents read)', `${r.searchP95.toFixed(2)} (p50 ${r.searchP50.toFixed(2)}, totals estimated ${r.estimatedShare.toFixed(2)})`)
  line('  as-of read p50 / p99 ms', `${r.asOfP50.toFixed(2)} / ${r.asOfP99.toFixed(2)}`)
  line('  history (10 versions) p50 / p99 ms', `${r.historyP50.toFixed(2)} / ${r.historyP99.toFixed(2)}`)
  line('  walking Git instead: as-of / history p50 ms', `${r.walkedAsOfP50.toFixed(0)} / ${r.walkedHistoryP50.toFixed(0)} (indexed ${(r.walkedAsOfP50 / r.asOfP50).toFixed(0)}x / ${(r.walkedHistoryP50 / r.historyP50).toFixed(0)}x faster; ${r.walkedMismatches} answers differ)`)
  line('  history index: rebuild ms / commits/s, MB on disk', `${r.historyRebuildMs.toFixed(0)} / ${r.historyRebuildPerSec.toFixed(0)}, ${r.historyMB.toFixed(1)}`)
  line('  RSS MB after reads and searches', r.rssMB.toFixed(0))
  line('  rebuild: open ms / ready ms / docs/s', `${r.rebuildOpenMs.toFixed(0)} / ${r.rebuildReadyMs.toFixed(0)} / ${r.rebuildPerSec.toFixed(0)}`)
}

async function one(n) {
  const {openEngine} = await import(new URL('../plugins/svc/dist/index.js', import.meta.url))
  const dir = join(tempDir('svc-scale-'), 'data')
  const queries = Number(opt('queries', 300))
  const reads = Number(opt('reads', 2000))
  const r = {docs: n}
  const timed = async (count, fn) => {
    const l = []
    for (let i = 0; i < count; i++) {
      const t = performance.now()
      await fn(i)
      l.push(performance.now() - t)
    }
    return l
  }
  const ready = async (db) => {
    for (;;) {
      const states = db.details().branches.map((b) => b.index.state)
      if (states.every((s) => s === 'ready')) return
      await new Promise((res) => setTimeout(res, 50))
    }
  }

  // 1. Writes: one commit each, sustained until everything is in Git.
  let db = await openEngine(dir, {})
  let next = 0
  const t0 = performance.now()
  const midTime = {at: 0}
  await Promise.all(Array.from({length: 32}, async () => {
    for (;;) {
      const i = next++
      if (i >= n) return
      if (i === n >> 1) midTime.at = Date.now()
      await db.put(makeDoc(i, 0))
      if (i % 100_000 === 99_999) console.error(`  ${i + 1} written (${((i + 1) / ((performance.now() - t0) / 1000)).toFixed(0)}/s, load ${load()})`)
    }
  }))
  await db.flush()
  r.writesPerSec = n / ((performance.now() - t0) / 1000)
  // A second version of a few documents, after the as-of point, so as-of reads find older versions.
  await Promise.all(Array.from({length: VERSIONED}, (_, i) => db.put(makeDoc(i * Math.floor(n / VERSIONED), 1))))
  await ready(db)
  await db.compact()
  await db.close()
  r.repoMB = Number(spawnSync('du', ['-sk', join(dir, 'repo')], {encoding: 'utf8'}).stdout.split('\t')[0]) / 1024

  // 2. Restart with the index on disk: time to open (the server listens then) and to index ready.
  let t = performance.now()
  db = await openEngine(dir, {})
  r.openMs = performance.now() - t
  await ready(db)
  r.readyMs = performance.now() - t
  const ids = Array.from({length: reads}, () => `items:${Math.floor(rand() * n)}`)
  const gets = await timed(reads, (i) => db.get(ids[i]))
  r.getP50 = pct(gets, 50)
  r.getP99 = pct(gets, 99)
  const qs = Array.from({length: queries}, () => (rand() < 0.5 ? word() : `${word()} ${word()}`))
  for (const q of qs.slice(0, 20)) await db.search(q, {limit: 10})
  let estimated = 0
  const searches = await timed(queries, async (i) => {
    if ((await db.search(qs[i], {limit: 10})).totalEstimated) estimated++
  })
  r.searchP50 = pct(searches, 50)
  r.searchP95 = pct(searches, 95)
  r.estimatedShare = estimated / queries
  const versioned = Array.from({length: VERSIONED}, (_, i) => `items:${i * Math.floor(n / VERSIONED)}`)
  const asOf = await timed(VERSIONED, (i) => db.asOf(versioned[i], {time: midTime.at}))
  r.asOfP50 = pct(asOf, 50)
  r.asOfP99 = pct(asOf, 99)
  const history = await timed(VERSIONED, (i) => db.history(versioned[i], {limit: 10}))
  r.historyP50 = pct(history, 50)
  r.historyP99 = pct(history, 99)
  r.rssMB = process.memoryUsage().rss / 1048576
  const walkedCount = Number(opt('walked', 5))
  const sample = versioned.slice(0, walkedCount)
  const indexedAnswers = []
  for (const id of sample) indexedAnswers.push([await db.asOf(id, {time: midTime.at}), await db.history(id, {limit: 10})])
  await db.close()
  r.historyMB = Number(spawnSync('du', ['-sk', join(dir, 'index', '.history')], {encoding: 'utf8'}).stdout.split('\t')[0]) / 1024

  // 2b. The same reads walking Git (history index off), on the same data: the figures before the index.
  db = await openEngine(dir, {fullText: false, historyIndex: false})
  const walkedAnswers = []
  const walkedAsOf = await timed(sample.length, async (i) => walkedAnswers.push([await db.asOf(sample[i], {time: midTime.at})]))
  const walkedHistory = await timed(sample.length, async (i) => walkedAnswers[i].push(await db.history(sample[i], {limit: 10})))
  r.walkedAsOfP50 = pct(walkedAsOf, 50)
  r.walkedHistoryP50 = pct(walkedHistory, 50)
  r.walkedMismatches = sample.filter((_, i) => JSON.stringify(walkedAnswers[i]) !== JSON.stringify(indexedAnswers[i])).length
  await db.close()

  // 2c. The history index deleted: rebuilt from Git in one pass.
  rmSync(join(dir, 'index', '.history'), {force: true, recursive: true})
  db = await openEngine(dir, {fullText: false})
  t = performance.now()
  await db.historyCaughtUp()
  r.historyRebuildMs = performance.now() - t
  r.historyRebuildPerSec = (n + VERSIONED) / (r.historyRebuildMs / 1000)
  await db.close()

  // 3. The index deleted: open, and the rebuild from the repository.
  rmSync(join(dir, 'index'), {force: true, recursive: true})
  t = performance.now()
  db = await openEngine(dir, {})
  r.rebuildOpenMs = performance.now() - t
  await ready(db)
  r.rebuildReadyMs = performance.now() - t
  r.rebuildPerSec = n / ((r.rebuildReadyMs - r.rebuildOpenMs) / 1000)
  await db.close()
  r.load = load()
  console.log(JSON.stringify(r))
  process.exit(0)
}
