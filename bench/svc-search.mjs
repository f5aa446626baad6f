#!/usr/bin/env node
// Full-text index over 100k documents of ~200 bytes: catch-up rate when the server starts with no
// index, search latency through REST, and the server's RSS; peers in the same run: raw MiniSearch
// (the library the first version used, alone, in-process) for indexing and search, same queries
// (AND, prefix on the last word).
// Usage: node bench/svc-search.mjs [--docs 100000] [--queries 300] [--fixture DIR] [--per-query]
//   --per-query prints the slowest 5% of the queries (the p95's makers) with their totals.
//   --fixture DIR keeps the generated repository in DIR and reuses it on the next run.
import {cpSync, existsSync, readFileSync} from 'node:fs'
import {join} from 'node:path'
import {loadavg} from 'node:os'

import MiniSearch from 'minisearch'

import {arg, drive, http, line, pct, startServer, tempDir} from './svc-common.mjs'
import {buildDataDir, makeDoc, rand, word} from './svc-fixture.mjs'

const DOCS = arg('docs', 100_000)
const QUERIES = arg('queries', 300)

const rss = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024
const metric = (text, name) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? ([\\d.e+-]+)`, 'm').exec(text)?.[1] ?? NaN)

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
for (const q of warmup) await http(server.port, 'GET', `/api/v1/search?q=${encodeURIComponent(q)}&limit=10`)
const lat = []
const perQuery = []
for (const q of queries) {
  const s = performance.now()
  const r = await http(server.port, 'GET', `/api/v1/search?q=${encodeURIComponent(q)}&limit=10`)
  const ms = performance.now() - s
  if (r.status !== 200) throw new Error(`search ${q}: ${r.status} ${r.body}`)
  lat.push(ms)
  const answer = JSON.parse(r.body)
  perQuery.push({ms, q, total: answer.total, estimated: answer.totalEstimated === true})
}
await drive(DOCS, 16, (i) => http(server.port, 'GET', `/api/v1/documents/items:${i}`))
const rssMb = rss(server.child.pid)
await server.stop()

line('documents (fixture built with fast-import in)', `${DOCS} (${buildSeconds.toFixed(1)} s)`)
line('MiniSearch alone: addAll (peer)', `${peerIndexRate.toFixed(0)} docs/s`)
line('svc index catch-up at start (reindex run)', `${(DOCS / catchupRun).toFixed(0)} docs/s (${catchupRun.toFixed(1)} s; ${catchupWall.toFixed(1)} s from spawn)`)
line('ratio svc catch-up / MiniSearch alone; goal >= 10k docs/s', `${(DOCS / catchupRun / peerIndexRate).toFixed(2)}; ${DOCS / catchupRun >= 10_000 ? 'met' : 'NOT met'}`)
line('MiniSearch alone: search p50 / p95 (peer)', `${pct(peerLat, 50).toFixed(2)} / ${pct(peerLat, 95).toFixed(2)} ms`)
line('svc REST search p50 / p95 (limit 10, documents included)', `${pct(lat, 50).toFixed(2)} / ${pct(lat, 95).toFixed(2)} ms`)
line('load average (1/5/15 min)', loadavg().map((x) => x.toFixed(2)).join(' '))
if (process.argv.includes('--per-query')) {
  // The queries that make the tail: the slowest 5%, with how many documents they match.
  for (const p of perQuery.sort((a, b) => b.ms - a.ms).slice(0, Math.ceil(perQuery.length / 20))) {
    console.log(`  ${p.ms.toFixed(2).padStart(7)} ms  total ${String(p.total).padStart(6)}${p.estimated ? ' (est.)' : '       '}  ${JSON.stringify(p.q)}`)
  }
}
line('goal p95 <= 10 ms', pct(lat, 95) <= 10 ? 'met' : 'NOT met')
line('svc server RSS after index, searches and reading all', `${rssMb.toFixed(0)} MB (goal <= 500 MB)`)
process.exit(0)
