#!/usr/bin/env node
// Full-text index over 100k documents of ~200 bytes: catch-up rate when the server starts with no
// index, search latency through REST, and the server's RSS; peers in the same run: raw MiniSearch
// (the library the first version used, alone, in-process) for indexing and search, same queries
// (AND, prefix on the last word).
// Usage: node bench/svc-search.mjs [--docs 100000] [--queries 300] [--fixture DIR] [--per-query]
//   --per-query prints the slowest 5% of the queries (the p95's makers) with their totals and the
//   server's background git work running when each started (`log`: the history index's catch-up,
//   `graph`: the commit-graph write); no waiting is added: the bench measures what a user sees
//   right after start.
//   --fixture DIR keeps the generated repository in DIR and reuses it on the next run.
//   --settle MS waits MS more after the index is ready (and before the warm-up searches), so the
//   server's start-up background work can finish: the settled figure, printed as such. Off by
//   default: the bench measures right after start.
//   The monotonic clock (us, as in a V8 CPU profile of the server: SVC_BENCH_NODE_ARGS="--cpu-prof
//   ...") at the start and end of the measured searches is printed, to cut their window out of it.
import {cpSync, existsSync, readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'
import {loadavg} from 'node:os'

import MiniSearch from 'minisearch'

import {arg, drive, http, line, pct, startServer, tempDir} from './svc-common.mjs'
import {buildDataDir, makeDoc, rand, word} from './svc-fixture.mjs'

const DOCS = arg('docs', 100_000)
const QUERIES = arg('queries', 300)
const SETTLE_MS = arg('settle', 0)
/** CLOCK_MONOTONIC in us: the clock of V8's CPU profile timestamps. */
const monoUs = () => Number(process.hrtime.bigint() / 1000n)

const rss = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024
const metric = (text, name) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? ([\\d.e+-]+)`, 'm').exec(text)?.[1] ?? NaN)

/** CPU seconds (user + system) the process (or, with `tid`, one of its threads) has used so far. */
const cpu = (pid, tid) => {
  const stat = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8')
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(f[11]) + Number(f[12])) / 100
}
/** The background git commands running on `repo` (read from /proc: they run under the server's git helper). */
const background = (repo) => {
  const found = new Set()
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue
    let cmd
    try {
      cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0')
    } catch {
      continue
    }
    if (!cmd[0].endsWith('git') || !cmd.includes(repo)) continue
    if (cmd.includes('log') && cmd.includes('--reverse')) found.add('log')
    else if (cmd.includes('commit-graph')) found.add('graph')
  }
  return [...found].join(',')
}

const fixtureArg = process.argv.indexOf('--fixture')
const fixture = fixtureArg === -1 ? undefined : process.argv[fixtureArg + 1]
const t0 = performance.now()
const dir = join(tempDir(), 'd')
if (fixture && existsSync(join(fixture, 'repo'))) cpSync(join(fixture, 'repo'), join(dir, 'repo'), {recursive: true})
else {
  await buildDataDir(dir, {commits: DOCS, docs: DOCS})
  if (fixture) cpSync(join(dir, 'repo'), join(fixture, 'repo'), {recursive: true})
}
const buildSeconds = (performance.now() - t0) / 1000

// Peer: MiniSearch alone, same documents, same text extraction, in this process.
const docs = Array.from({length: DOCS}, (_, i) => makeDoc(i, i))
const text = (d) => [d.id.slice(d.id.indexOf(':') + 1), String(d.n), String(d.rev), d.title, d.body].join(' ')
const ms = new MiniSearch({fields: ['text'], idField: 'id'})
let t = performance.now()
ms.addAll(docs.map((d) => ({id: d.id, text: text(d)})))
const peerIndexRate = DOCS / ((performance.now() - t) / 1000)
const queries = Array.from({length: QUERIES}, () => (rand() < 0.5 ? word() : `${word()} ${word()}`))
// Both sides answer the same 50 warm-up queries first, so JIT compilation is not what is measured.
const warmup = Array.from({length: 50}, () => (rand() < 0.5 ? word() : `${word()} ${word()}`))
for (const q of warmup) ms.search(q, {combineWith: 'AND', prefix: (term, i, terms) => i === terms.length - 1 && term.length >= 3})
const peerLat = queries.map((q) => {
  const s = performance.now()
  ms.search(q, {combineWith: 'AND', prefix: (term, i, terms) => i === terms.length - 1 && term.length >= 3}).slice(0, 10)
  return performance.now() - s
})

const server = await startServer(dir)
const started = performance.now()
let m
for (;;) {
  m = (await http(server.port, 'GET', '/metrics')).body
  if (metric(m, 'svc_index_documents') >= DOCS && metric(m, 'svc_index_reindex_runs') >= 1) break
  await new Promise((r) => setTimeout(r, 50))
}
const catchupWall = (performance.now() - started) / 1000
const catchupRun = metric(m, 'svc_index_reindex_last_duration_seconds')
if (SETTLE_MS > 0) await new Promise((r) => setTimeout(r, SETTLE_MS))
for (const q of warmup) await http(server.port, 'GET', `/api/v1/search?q=${encodeURIComponent(q)}&limit=10`)
const lat = []
const perQuery = []
const perQueryBg = process.argv.includes('--per-query')
const cpuBefore = cpu(server.child.pid)
// The event loop's thread (its id is the process id): what a search waits behind.
const loopCpuBefore = cpu(server.child.pid, server.child.pid)
const searchStarted = performance.now()
const searchStartedUs = monoUs()
for (const q of queries) {
  const bg = perQueryBg ? background(join(dir, 'repo')) : ''
  const s = performance.now()
  const r = await http(server.port, 'GET', `/api/v1/search?q=${encodeURIComponent(q)}&limit=10`)
  const ms = performance.now() - s
  if (r.status !== 200) throw new Error(`search ${q}: ${r.status} ${r.body}`)
  lat.push(ms)
  const answer = JSON.parse(r.body)
  perQuery.push({bg, ms, q, total: answer.total, estimated: answer.totalEstimated === true})
}
const searchCpuMs = ((cpu(server.child.pid) - cpuBefore) * 1000) / QUERIES
const loopCpuMs = ((cpu(server.child.pid, server.child.pid) - loopCpuBefore) * 1000) / QUERIES
const searchWall = (performance.now() - searchStarted) / 1000
const searchEndedUs = monoUs()
const withBg = perQuery.filter((p) => p.bg !== '').length
await drive(DOCS, 16, (i) => http(server.port, 'GET', `/api/v1/documents/items:${i}`))
const rssMb = rss(server.child.pid)
await server.stop()

line('documents (fixture built with fast-import in)', `${DOCS} (${buildSeconds.toFixed(1)} s)`)
line('MiniSearch alone: addAll (peer)', `${peerIndexRate.toFixed(0)} docs/s`)
line('svc index catch-up at start (reindex run)', `${(DOCS / catchupRun).toFixed(0)} docs/s (${catchupRun.toFixed(1)} s; ${catchupWall.toFixed(1)} s from spawn)`)
line('ratio svc catch-up / MiniSearch alone; goal >= 10k docs/s', `${(DOCS / catchupRun / peerIndexRate).toFixed(2)}; ${DOCS / catchupRun >= 10_000 ? 'met' : 'NOT met'}`)
line('MiniSearch alone: search p50 / p95 (peer)', `${pct(peerLat, 50).toFixed(2)} / ${pct(peerLat, 95).toFixed(2)} ms`)
if (SETTLE_MS > 0) line('SETTLED: searches started after waiting', `${SETTLE_MS} ms past the index's catch-up (not the right-after-start figure)`)
line('svc REST search p50 / p95 (limit 10, documents included)', `${pct(lat, 50).toFixed(2)} / ${pct(lat, 95).toFixed(2)} ms`)
line('svc server CPU per search: all threads / event loop thread', `${searchCpuMs.toFixed(2)} / ${loopCpuMs.toFixed(2)} ms (incl. background work; ${QUERIES} searches in ${searchWall.toFixed(1)} s)`)
if (perQueryBg) line('searches started while background git work ran', `${withBg} of ${QUERIES}`)
line('searches window, monotonic us (CPU profile)', `${searchStartedUs} ${searchEndedUs}`)
line('load average (1/5/15 min)', loadavg().map((x) => x.toFixed(2)).join(' '))
if (process.argv.includes('--per-query')) {
  // The queries that make the tail: the slowest 5%, with how many documents they match.
  for (const p of perQuery.sort((a, b) => b.ms - a.ms).slice(0, Math.ceil(perQuery.length / 20))) {
    console.log(`  ${p.ms.toFixed(2).padStart(7)} ms  total ${String(p.total).padStart(6)}${p.estimated ? ' (est.)' : '       '}  ${JSON.stringify(p.q).padEnd(18)} ${p.bg === '' ? '' : `during ${p.bg}`}`)
  }
}
line('goal p95 <= 10 ms', pct(lat, 95) <= 10 ? 'met' : 'NOT met')
line('svc server RSS after index, searches and reading all', `${rssMb.toFixed(0)} MB (goal <= 500 MB)`)
process.exit(0)
