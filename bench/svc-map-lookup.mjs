#!/usr/bin/env node
// Micro-benchmark behind docs/benchmarks.md "Redis GET -P 16: the document map" (issue 26): CPU
// time of a lookup by a fresh string made from a Buffer (as the RESP parser makes it) in a Map of
// 18,000 ids drawn from a key space of 100,000 (so most lookups miss, as with redis-benchmark -r),
// for several key forms and stored-string kinds, and through the engine's DocMap filter.
// Usage: node bench/svc-map-lookup.mjs [--ids 20000] [--space 100000]  (needs the built plugin)
import {arg} from './svc-common.mjs'

const {DocMap} = await import('../plugins/svc/dist/engine/doc-map.js')
const IDS = arg('ids', 20_000)
const SPACE = arg('space', 100_000)
const pad = (i) => String(i).padStart(12, '0')
const forms = {
  'key:000000012345 (padded, flat)': (i) => Buffer.from(`key:${pad(i)}`).toString(),
  'key:000000012345 (padded, cons)': (i) => 'key' + ':' + pad(i),
  'key:12345 (short)': (i) => Buffer.from(`key:${i}`).toString(),
  'x000000012345 (no colon)': (i) => Buffer.from(`x${pad(i)}`).toString(),
}
const lookups = 50_000
const junk = []
function measure(label, make, probe, map) {
  for (let i = 0; i < IDS; i++) {
    const id = make(Math.floor(Math.random() * SPACE))
    map.set(id, {seq: i, sha: id})
    // Spread the stored strings over the heap as a server's other allocations would.
    for (let j = 0; j < 20; j++) junk.push({i, s: `j${i}`})
  }
  const bufs = Array.from({length: lookups}, () => Buffer.from(probe(Math.floor(Math.random() * SPACE))))
  const get = map instanceof DocMap ? (s) => map.lookup(s) : (s) => map.get(s)
  for (const b of bufs) get(b.toString('utf8', 0, b.length))
  let hits = 0
  const t0 = process.cpuUsage()
  for (let r = 0; r < 10; r++) for (const b of bufs) if (get(b.toString('utf8', 0, b.length))) hits++
  const t = process.cpuUsage(t0)
  console.log(`${label.padEnd(48)} ${(((t.user + t.system) * 1000) / (10 * lookups)).toFixed(0).padStart(5)} ns per toString + lookup (${((hits / 10 / lookups) * 100).toFixed(0)}% hits, ${map.size} ids)`)
  junk.length = 0
}
const probePadded = (i) => `key:${pad(i)}`
for (let round = 0; round < 2; round++) {
  for (const [label, make] of Object.entries(forms)) measure(`Map, ${label}`, make, label.startsWith('key:0') ? probePadded : (i) => make(i), new Map())
  measure('DocMap.lookup, key:000000012345 (padded, flat)', forms['key:000000012345 (padded, flat)'], probePadded, new DocMap())
}
