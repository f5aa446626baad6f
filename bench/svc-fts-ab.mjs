#!/usr/bin/env node
// Full-text search of two builds in one process (issue 13's same-run A/B): each checkout's
// IndexStore indexes the same 100k fixture documents, then the same 300 queries of
// svc-search.mjs's kind (half one word, half two, prefix on the last word, limit 10) run on
// both, alternating which goes first, once each in order: repeated words are repeated searches,
// as in the REST bench. Prints p50/p95/p99 of the wall time and of the CPU time per search (the
// figure to trust on a shared machine), the sums, how many answers are identical (or differ only
// in the order of scores within 1e-5: ties), and with --per-query the 15 slowest queries of A
// (by CPU) with B's beside, then B's 15 slowest. --docs N (default 100000) sets the documents; when both checkouts
// write the same index format, B searches a copy of the file A built (half the build time at 1M).
// --fixture DIR keeps A's built index in DIR (index-N.sqlite) and reuses it on the next run (a
// 1M-document build takes minutes); both searches then run on copies of it. --warm-lengths
// first reads every row length into memory on both stores (warmLengths, as the engine does in the
// background after its catch-up), so first searches of a word do not read their rows' lengths.
// --idle gives each store one piece of its background work between searches, as the server's loop
// turns between requests, and prints that background CPU apart from the searches' (the process's
// CPU, so the worker thread's too): per-row counts of common phrases, as one slice of countStep
// (branch fts-count) or one phrase counted by the worker thread (count-worker.ts, waited for: in
// the server the worker runs beside the searches, so its counts arrive some searches later); a
// build with neither does nothing. --warm-counts first runs the engine's warm-up of the commonest
// terms' per-row counts (count-worker.ts warmCommonCounts, after the row lengths) on a store that
// has it, waited for, and prints its time, CPU (the worker's included) and the RSS after it.
// --writes-per-search K puts K documents between two searches, through the store's write path
// (one transaction, as the engine indexes a batch of acknowledged writes), the same ones on both
// stores: new text from the fixture's generator, 80% rewrites of a random document, 20% new
// documents. Their CPU is printed apart; the searches' figures are then searches on an index that
// is written between them (every kept answer, count and list of a store that drops them on a
// write is gone by the next search).
// Usage: node bench/svc-fts-ab.mjs <checkout A> <checkout B> [--docs N] [--fixture DIR] [--per-query] [--warm-lengths] [--warm-counts] [--idle] [--writes-per-search K]   (both built)
import {copyFileSync, existsSync, mkdirSync} from 'node:fs'
import {join} from 'node:path'
import {loadavg} from 'node:os'
const [A, B] = process.argv.slice(2)
const docsArg = process.argv.indexOf('--docs')
const DOCS = docsArg === -1 ? 100_000 : Number(process.argv[docsArg + 1])
const bench = new URL(`file://${A}/bench/`)
const {pct, tempDir} = await import(new URL('svc-common.mjs', bench))
const {makeDoc, rand, word} = await import(new URL('svc-fixture.mjs', bench))
const load = async (root) => ({
  warmCommonCounts: existsSync(`${root}/plugins/svc/dist/engine/fts/count-worker.js`) ? (await import(`file://${root}/plugins/svc/dist/engine/fts/count-worker.js`)).warmCommonCounts : undefined,
  SEARCH_WINDOW: (await import(`file://${root}/plugins/svc/dist/engine/fts/store.js`)).SEARCH_WINDOW,
  PhraseCounter: existsSync(`${root}/plugins/svc/dist/engine/fts/count-worker.js`) ? (await import(`file://${root}/plugins/svc/dist/engine/fts/count-worker.js`)).PhraseCounter : undefined,
  IndexStore: (await import(`file://${root}/plugins/svc/dist/engine/fts/store.js`)).IndexStore,
  format: (await import(`file://${root}/plugins/svc/dist/engine/fts/store.js`)).FTS_FORMAT,
  documentText: (await import(`file://${root}/plugins/svc/dist/engine/fulltext.js`)).documentText,
})
const la = await load(A), lb = await load(B)
const docs = Array.from({length: DOCS}, (_, j) => makeDoc(j, j))
const build = (l, f) => { const s = new l.IndexStore(f); s.beginBulk(); for (let i = 0; i < docs.length; i += 4000) s.transaction(() => { for (let j = i; j < Math.min(docs.length, i + 4000); j++) s.put(docs[j].id, `sha${j}`, l.documentText(docs[j]), null) }); s.endBulk(); return s }
const dir = tempDir()
const fixtureArg = process.argv.indexOf('--fixture')
const kept = fixtureArg === -1 ? undefined : join(process.argv[fixtureArg + 1], `index-${DOCS}.sqlite`)
const built = performance.now()
let sa, sb
if (kept !== undefined && existsSync(kept)) copyFileSync(kept, join(dir, 'a.sqlite'))
else {
  sa = build(la, join(dir, 'a.sqlite'))
  sa.close()
  if (kept !== undefined) { mkdirSync(process.argv[fixtureArg + 1], {recursive: true}); copyFileSync(join(dir, 'a.sqlite'), kept) }
}
if (la.format === lb.format) {
  copyFileSync(join(dir, 'a.sqlite'), join(dir, 'b.sqlite'))
  sa = new la.IndexStore(join(dir, 'a.sqlite'))
  sb = new lb.IndexStore(join(dir, 'b.sqlite'))
} else {
  sa = new la.IndexStore(join(dir, 'a.sqlite'))
  sb = build(lb, join(dir, 'b.sqlite'))
}
console.log(`${DOCS} documents indexed in ${((performance.now() - built) / 1000).toFixed(0)} s${la.format === lb.format ? ' (once; B searches a copy)' : ''}`)
if (process.argv.includes('--warm-lengths')) {
  for (const [k, s] of [['A', sa], ['B', sb]]) {
    const c = process.cpuUsage()
    while (s.warmLengths()) { /* slices of 4096 rows, as the engine's background loop */ }
    const d = process.cpuUsage(c)
    console.log(`${k}: row lengths warmed in ${((d.user + d.system) / 1000).toFixed(0)} ms of CPU`)
  }
}
const counters = {a: la.PhraseCounter && new la.PhraseCounter(), b: lb.PhraseCounter && new lb.PhraseCounter()}
// One phrase counted by the worker, its answer kept as the engine keeps it (fulltext.ts countPhrases).
const countOne = async (s, counter) => {
  const job = s.countJob()
  if (job === undefined) return
  const answer = await counter.count(s.file, job.phrase, job.any)
  if (!('error' in answer)) s.countsDone(job, 'none' in answer ? null : answer)
}
if (process.argv.includes('--warm-counts')) {
  for (const [k, s, l] of [['a', sa, la], ['b', sb, lb]]) {
    if (l.warmCommonCounts === undefined) continue
    const c = process.cpuUsage()
    const t = performance.now()
    await l.warmCommonCounts(counters[k], s, l.SEARCH_WINDOW, () => true)
    const d = process.cpuUsage(c)
    console.log(`${k.toUpperCase()}: commonest terms' per-row counts warmed in ${((performance.now() - t) / 1000).toFixed(1)} s, ${((d.user + d.system) / 1000).toFixed(0)} ms of CPU (worker included); RSS ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MB`)
  }
}
const queries = Array.from({length: 300}, () => (rand() < 0.5 ? word() : `${word()} ${word()}`))
const warm = Array.from({length: 50}, () => (rand() < 0.5 ? word() : `${word()} ${word()}`))
const perSearchArg = process.argv.indexOf('--writes-per-search')
const PER_SEARCH = perSearchArg === -1 ? 0 : Number(process.argv[perSearchArg + 1])
// Made after the queries, so the queries are the same with and without writes.
let nextNew = DOCS
const writes = Array.from({length: queries.length}, (_, i) => Array.from({length: PER_SEARCH}, (_, k) => {
  const j = rand() < 0.8 ? Math.floor(rand() * nextNew) : nextNew++
  return makeDoc(j, DOCS + i * PER_SEARCH + k)
}))
const writeCpu = {a: 0, b: 0}
if (PER_SEARCH > 0) console.log(`${PER_SEARCH} document writes between searches (${nextNew - DOCS} of them new documents)`)
for (const q of warm) { sa.search(q, {limit: 10, offset: 0}); sb.search(q, {limit: 10, offset: 0}) }
const idle = {a: 0, b: 0}
const lat = {a: [], b: []}; const cpu = {a: [], b: []}; let same = 0, sameEst = 0, est = 0, ties = 0; const rows = []
for (const [i, q] of queries.entries()) {
  const order = i % 2 ? [['a', sa], ['b', sb]] : [['b', sb], ['a', sa]]
  if (PER_SEARCH > 0) for (const [k, s] of order) {
    const l = k === 'a' ? la : lb
    const c = process.cpuUsage()
    s.transaction(() => { for (const doc of writes[i]) s.put(doc.id, `sha-${doc.id}-${doc.rev}`, l.documentText(doc)) })
    const d = process.cpuUsage(c)
    writeCpu[k] += (d.user + d.system) / 1000
  }
  const r = {}
  for (const [k, s] of order) {
    const c = process.cpuUsage()
    const t = performance.now()
    r[k] = s.search(q, {limit: 10, offset: 0})
    lat[k].push(performance.now() - t)
    const d = process.cpuUsage(c)
    cpu[k].push((d.user + d.system) / 1000)
  }
  const eq = JSON.stringify(r.a) === JSON.stringify(r.b)
  if (!eq && r.a.total === r.b.total && r.a.hits.length === r.b.hits.length && r.a.hits.every((h, j) => Math.abs(h.score - r.b.hits[j].score) < 1e-5)) ties++
  if (r.a.estimated) { est++; if (eq) sameEst++ } else if (eq) same++
  if (process.argv.includes('--idle')) for (const [k, s] of [['a', sa], ['b', sb]]) if (typeof s.countStep === 'function' || typeof s.countJob === 'function') {
    const c = process.cpuUsage()
    if (typeof s.countJob === 'function') await countOne(s, counters[k])
    else s.countStep()
    const d = process.cpuUsage(c)
    idle[k] += (d.user + d.system) / 1000
  }
  rows.push({q, a: cpu.a.at(-1), b: cpu.b.at(-1), total: r.a.total, est: r.a.estimated === true})
}
const f = (x) => x.toFixed(2)
console.log(`load ${loadavg().map(f).join(' ')}`)
for (const p of [50, 95, 99]) console.log(`p${p} ms A ${f(pct(lat.a, p))}  B ${f(pct(lat.b, p))}   CPU ms A ${f(pct(cpu.a, p))}  B ${f(pct(cpu.b, p))}`)
console.log(`sum ms A ${f(lat.a.reduce((x, y) => x + y))}  B ${f(lat.b.reduce((x, y) => x + y))}   CPU ms A ${f(cpu.a.reduce((x, y) => x + y))}  B ${f(cpu.b.reduce((x, y) => x + y))}`)
if (process.argv.includes('--idle')) console.log(`background CPU between searches ms A ${f(idle.a)}  B ${f(idle.b)}`)
if (PER_SEARCH > 0) console.log(`CPU of the ${300 * PER_SEARCH} writes ms A ${f(writeCpu.a)}  B ${f(writeCpu.b)} (per write A ${f(writeCpu.a / (300 * PER_SEARCH))}  B ${f(writeCpu.b / (300 * PER_SEARCH))})`)
console.log(`exact queries with identical answers ${same} of ${300 - est}; estimated identical ${sameEst} of ${est}; the rest differ only in ties within 1e-5: ${ties} of ${300 - same - sameEst}`)
if (process.argv.includes('--per-query')) console.log('CPU ms of A, of B, total (* estimated), query')
if (process.argv.includes('--per-query')) for (const r of rows.sort((x, y) => y.a - x.a).slice(0, 15)) console.log(`${f(r.a).padStart(7)} ${f(r.b).padStart(7)} ${String(r.total).padStart(6)}${r.est ? '*' : ' '} ${JSON.stringify(r.q)}`)
if (process.argv.includes('--per-query')) console.log('the 15 slowest of B (by CPU): CPU ms of A, of B, total, query')
if (process.argv.includes('--per-query')) for (const r of rows.sort((x, y) => y.b - x.b).slice(0, 15)) console.log(`${f(r.a).padStart(7)} ${f(r.b).padStart(7)} ${String(r.total).padStart(6)}${r.est ? '*' : ' '} ${JSON.stringify(r.q)}`)
for (const c of Object.values(counters)) await c?.close()
sa.close(); sb.close()
