#!/usr/bin/env node
// What the history index costs the write path: N writes (32 writers, one commit each, full-text
// off) with the history index off, then on, twice, in the same run; prints writes/s and the load.
// Usage: npm run build -w plugins/svc && node bench/svc-history-ab.mjs [documents, default 8000]
import {mkdtempSync, rmSync} from 'node:fs'
import {loadavg, tmpdir} from 'node:os'
import {join} from 'node:path'

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
