#!/usr/bin/env node
// Durable writes through the engine's Node API (no HTTP, no load generator), 32 concurrent
// writers, one commit per write, sustained until everything is in Git; full-text index on and off.
// Peer: raw `git fast-import` on the same documents and layout, before and after (mean).
// Usage: node bench/svc-engine-write.mjs [--docs 8000]
import {join} from 'node:path'

import {arg, line, rawFastImport, tempDir} from './svc-common.mjs'

const N = arg('docs', 8000)
const {openEngine} = await import(new URL('../plugins/svc/dist/index.js', import.meta.url))
const pad = 'x'.repeat(150)
const docFor = (n) => ({id: `bench:t0-${n}`, n, text: `bench:t0-${n} ${pad}`})

function raw() {
  return rawFastImport(N, docFor)
}

async function ours(fullText) {
  const db = await openEngine(join(tempDir(), 'd'), {fullText})
  let next = 1
  const t0 = performance.now()
  await Promise.all(Array.from({length: 32}, async () => {
    for (;;) {
      const i = next++
      if (i > N) return
      await db.put(docFor(i))
    }
  }))
  const ack = N / ((performance.now() - t0) / 1000)
  await db.flush()
  const sustained = N / ((performance.now() - t0) / 1000)
  await db.close()
  return {ack, sustained}
}

const before = await raw()
const withIndex = await ours(true)
const withoutIndex = await ours(false)
const after = await raw()
const peer = (before + after) / 2
line('documents, writers', `${N}, 32`)
line('git fast-import (peer), mean of before/after', `${peer.toFixed(0)} commits/s (${before.toFixed(0)} / ${after.toFixed(0)})`)
line('engine, index on: sustained (acknowledged)', `${withIndex.sustained.toFixed(0)} writes/s (${withIndex.ack.toFixed(0)})`)
line('engine, index off: sustained (acknowledged)', `${withoutIndex.sustained.toFixed(0)} writes/s (${withoutIndex.ack.toFixed(0)})`)
line('ratio engine (index on) / fast-import', (withIndex.sustained / peer).toFixed(2))
process.exit(0)
