#!/usr/bin/env node
// Durable writes through REST (32 clients, each write its own commit, distinct documents),
// counted as sustained throughput: writes / time until pending-entries is back to 0.
// Peer: raw `git fast-import`, one commit per document, same tree layout, same documents.
// Usage: node bench/svc-write.mjs [--docs 20000] [--clients 32]
import {spawn} from 'node:child_process'
import {join} from 'node:path'

import {arg, drive, gitInitBare, http, line, pendingEntries, startServer, tempDir, IDS_JS} from './svc-common.mjs'

const N = arg('docs', 20_000)
const CLIENTS = arg('clients', 32)
const {docPath, parseId} = await import(IDS_JS)

const docs = Array.from({length: N}, (_, i) => ({id: `bench:doc-${i}`, n: i, text: `document ${i} body ${Math.random().toString(36).slice(2)} ${'x'.repeat(120)}`}))

async function fastImport() {
  const repo = join(tempDir(), 'peer.git')
  gitInitBare(repo)
  const t0 = performance.now()
  const child = spawn('git', ['-C', repo, 'fast-import', '--quiet', '--done'], {stdio: ['pipe', 'ignore', 'inherit']})
  const done = new Promise((r) => child.on('exit', r))
  const now = Math.floor(Date.now() / 1000)
  for (const d of docs) {
    const body = Buffer.from(`${JSON.stringify(d, null, 2)}\n`)
    const msg = `put ${d.id}\n`
    const chunk = `commit refs/heads/main\ncommitter svc <svc@localhost> ${now} +0000\ndata ${msg.length}\n${msg}M 100644 inline ${docPath(parseId(d.id))}\ndata ${body.length}\n`
    if (!child.stdin.write(Buffer.concat([Buffer.from(chunk), body, Buffer.from('\n\n')]))) await new Promise((r) => child.stdin.once('drain', r))
  }
  child.stdin.end('done\n')
  await done
  return N / ((performance.now() - t0) / 1000)
}

async function svc() {
  const server = await startServer(tempDir())
  const t0 = performance.now()
  const lat = await drive(N, CLIENTS, async (i) => {
    const r = await http(server.port, 'PUT', `/api/v1/documents/${docs[i].id}`, JSON.stringify(docs[i]))
    if (r.status !== 200) throw new Error(`PUT failed: ${r.status} ${r.body}`)
  })
  const acked = performance.now() - t0
  let maxPending = 0
  for (;;) {
    const p = await pendingEntries(server.port)
    maxPending = Math.max(maxPending, p)
    if (p === 0) break
    await new Promise((r) => setTimeout(r, 20))
  }
  const sustained = performance.now() - t0
  await server.stop()
  return {ackRate: N / (acked / 1000), lat, rate: N / (sustained / 1000)}
}

const peer = await fastImport()
const ours = await svc()
line(`documents, clients`, `${N}, ${CLIENTS}`)
line('git fast-import, one commit per document (peer)', `${peer.toFixed(0)} commits/s`)
line('svc REST durable writes, sustained (until pending=0)', `${ours.rate.toFixed(0)} writes/s`)
line('svc REST acknowledged rate (WAL group commit)', `${ours.ackRate.toFixed(0)} writes/s`)
line('svc write latency p50 / p99', `${(await import('./svc-common.mjs')).pct(ours.lat, 50).toFixed(1)} ms / ${(await import('./svc-common.mjs')).pct(ours.lat, 99).toFixed(1)} ms`)
line('ratio svc sustained / fast-import (goal >= 0.8)', (ours.rate / peer).toFixed(2))
line('goal >= 2000 writes/s', ours.rate >= 2000 ? 'met' : 'NOT met')
process.exit(0)
