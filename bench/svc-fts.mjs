#!/usr/bin/env node
// The two designs of an on-disk full-text index, measured on the same documents in one process:
// SQLite FTS5 (plugins/svc/src/engine/fts/store.ts, what svc uses) against postings of our own
// (the in-memory TextIndex svc used before, whose JSON form is what own segments would load).
// Figures: build rate, bytes on disk, time to open a saved index, heap held, and search
// latency for the same queries as bench/svc-search.mjs (AND, prefix on the last word).
// Usage: node bench/svc-fts.mjs [--docs 100000] [--queries 300]
import {statSync, writeFileSync, readFileSync} from 'node:fs'
import {join} from 'node:path'

import {line, pct, tempDir} from './svc-common.mjs'
import {makeDoc, rand, word} from './svc-fixture.mjs'

const DOCS = arg('docs', 100_000)
const QUERIES = arg('queries', 300)
const BATCH = 2000

function arg(name, def) {
  const i = process.argv.indexOf(`--${name}`)
  return i === -1 ? def : Number(process.argv[i + 1])
}

const dist = new URL('../plugins/svc/dist/engine/', import.meta.url)
const {IndexStore} = await import(new URL('fts/store.js', dist))
const {TextIndex} = await import(new URL('text-index.js', dist))
const {documentText} = await import(new URL('fulltext.js', dist))

const dir = tempDir()
const texts = Array.from({length: DOCS}, (_, i) => {
  const d = makeDoc(i, i)
  return [d.id, documentText(d)]
})
const queries = Array.from({length: QUERIES}, () => (rand() < 0.5 ? word() : `${word()} ${word()}`))
const warmup = Array.from({length: 50}, () => (rand() < 0.5 ? word() : `${word()} ${word()}`))
const heap = () => {
  globalThis.gc?.()
  const m = process.memoryUsage()
  // Typed-array postings live outside the V8 heap: count both.
  return (m.heapUsed + m.arrayBuffers) / 1048576
}
const latencies = (search) => {
  for (const q of warmup) search(q)
  return queries.map((q) => {
    const s = performance.now()
    search(q)
    return performance.now() - s
  })
}

// FTS5
const file = join(dir, 'fts.sqlite')
let store = new IndexStore(file)
let t = performance.now()
for (let i = 0; i < DOCS; i += BATCH) store.transaction(() => {
  for (let j = i; j < Math.min(DOCS, i + BATCH); j++) store.put(texts[j][0], `sha${j}`, texts[j][1])
})
const ftsRate = DOCS / ((performance.now() - t) / 1000)
store.close()
const ftsBytes = statSync(file).size
t = performance.now()
store = new IndexStore(file)
const ftsOpen = performance.now() - t
const ftsLat = latencies((q) => store.search(q, {limit: 10, offset: 0}))

// Own postings, in memory, saved and loaded whole.
const h0 = heap()
const ix = new TextIndex()
t = performance.now()
for (const [id, text] of texts) ix.add(id, text)
const ownRate = DOCS / ((performance.now() - t) / 1000)
const ownHeap = heap() - h0
const json = join(dir, 'index.json')
writeFileSync(json, JSON.stringify(ix.toJSON()))
const ownBytes = statSync(json).size
t = performance.now()
const loaded = TextIndex.fromJSON(JSON.parse(readFileSync(json, 'utf8')))
const ownOpen = performance.now() - t
const ownLat = latencies((q) => loaded.search(q, {limit: 10, offset: 0}))

const f = (x) => x.toFixed(2)
console.log(`svc full-text index designs, ${DOCS} documents of ~200 bytes, ${QUERIES} queries (load ${(await import('node:os')).loadavg().map((x) => x.toFixed(2)).join(' ')})`)
line('build, docs/s: FTS5 / own postings (ratio)', `${Math.round(ftsRate)} / ${Math.round(ownRate)} (${f(ftsRate / ownRate)}x)`)
line('size on disk, MB: FTS5 / own (JSON)', `${f(ftsBytes / 1048576)} / ${f(ownBytes / 1048576)}`)
line('open a saved index, ms: FTS5 / own (load whole)', `${f(ftsOpen)} / ${f(ownOpen)}`)
line('memory held by the index (heap + array buffers), MB: FTS5 / own', `~0 (page cache <= 32) / ${f(ownHeap)}`)
line('search p50 ms: FTS5 / own (ratio)', `${f(pct(ftsLat, 50))} / ${f(pct(ownLat, 50))} (${f(pct(ftsLat, 50) / pct(ownLat, 50))}x)`)
line('search p95 ms: FTS5 / own (ratio)', `${f(pct(ftsLat, 95))} / ${f(pct(ownLat, 95))} (${f(pct(ftsLat, 95) / pct(ownLat, 95))}x)`)
line('search p99 ms: FTS5 / own', `${f(pct(ftsLat, 99))} / ${f(pct(ownLat, 99))}`)
store.close()
