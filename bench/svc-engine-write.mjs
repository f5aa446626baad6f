#!/usr/bin/env node
// Durable writes through the engine's Node API (no HTTP, no load generator), 32 concurrent
// writers, one commit per write, sustained until everything is in Git; full-text index on and off.
// Peer: raw `git fast-import` on the same documents and layout, before and after (mean).
// Usage: node bench/svc-engine-write.mjs [--docs 8000]
import {spawn} from 'node:child_process'
import {join} from 'node:path'

import {arg, gitInitBare, IDS_JS, line, tempDir} from './svc-common.mjs'

const N = arg('docs', 8000)
const {docPath, parseId} = await import(IDS_JS)
const {openEngine} = await import(new URL('../plugins/svc/dist/index.js', import.meta.url))
const pad = 'x'.repeat(150)
const docFor = (n) => ({id: `bench:t0-${n}`, n, text: `bench:t0-${n} ${pad}`})

async function raw() {
  const repo = join(tempDir(), 'raw.git')
  gitInitBare(repo)
  const t0 = performance.now()
  const child = spawn('git', ['-C', repo, 'fast-import', '--quiet', '--done'], {stdio: ['pipe', 'ignore', 'inherit']})
  const done = new Promise((r) => child.on('exit', r))
  const now = Math.floor(Date.now() / 1000)
  for (let i = 1; i <= N; i++) {
    const d = docFor(i)
    const body = Buffer.from(`${JSON.stringify(d, null, 2)}\n`)
    const msg = `put ${d.id}\n`
    const chunk = `commit refs/heads/main\ncommitter svc <svc@localhost> ${now} +0000\ndata ${msg.length}\n${msg}M 100644 inline ${docPath(parseId(d.id))}\ndata ${body.length}\n`
    if (!child.stdin.write(Buffer.concat([Buffer.from(chunk), body, Buffer.from('\n\n')]))) await new Promise((r) => child.stdin.once('drain', r))
  }
  child.stdin.end('done\n')
  await done
  return N / ((performance.now() - t0) / 1000)
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
