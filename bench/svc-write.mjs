#!/usr/bin/env node
// Durable writes through REST (32 concurrent clients, each write its own commit, distinct
// documents), counted as sustained throughput: writes / time until pending-entries is back to 0.
// Peer: raw `git fast-import` given the same malloc setting svc's own fast-import runs with
// (a plain one is ~1.4x slower), one commit per document, same tree layout, same kind of
// documents, same count, in the same run.
// Usage: node bench/svc-write.mjs [--seconds 8] [--clients 32]   (uses wrk when installed)

import {readFileSync} from 'node:fs'

import {arg, childPids, cpuSeconds, drive, haveWrk, http, line, pendingEntries, rawFastImport, startServer, tempDir, wrk} from './svc-common.mjs'

const SECONDS = arg('seconds', 8)
const CLIENTS = arg('clients', 32)

const pad = 'x'.repeat(150)
const docFor = (t, n) => ({id: `bench:t${t}-${n}`, n, text: `bench:t${t}-${n} ${pad}`})

const LUA = `
local counter = 0
request = function()
  counter = counter + 1
  local id = "bench:t0-" .. counter
  return wrk.format("PUT", "/api/v1/documents/" .. id, {["Content-Type"] = "application/json"},
    '{"n":' .. counter .. ',"text":"' .. id .. ' ${pad}"}')
end`

let peerCpu = 0
function fastImport(n) {
  return rawFastImport(n, (i) => docFor(0, i), {onCpu: (s) => (peerCpu = Math.max(peerCpu, s)), tuned: true})
}

/**
 * CPU seconds of the server process and of each of its child processes: fast-import, cat-file and
 * the git helper (git-spawner.ts), whose figure includes the git commands it ran (the history
 * index's catch-up, repacks). Kept apart so fast-import's own CPU compares with the peer's.
 */
function serverCpu(pid) {
  const kids = new Map(childPids(pid).map((c) => [c, {cpu: cpuSeconds(c), fastImport: isFastImport(c)}]))
  return {kids, node: cpuSeconds(pid)}
}

function isFastImport(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('fast-import')
  } catch {
    return false
  }
}

async function svc() {
  const server = await startServer(tempDir())
  const cpu0 = serverCpu(server.child.pid)
  const t0 = performance.now()
  let writes
  let lat = {}
  if (haveWrk()) {
    const r = await wrk(server.port, LUA, {connections: CLIENTS, seconds: SECONDS})
    if (r.errors > 0) throw new Error(`${r.errors} writes failed (${r.statusErrors} with an error status)`)
    writes = r.requests
    lat = {p50: r.p50, p99: r.p99}
  } else {
    writes = 20_000
    await drive(writes, CLIENTS, async (i) => {
      const d = docFor(0, i + 1)
      const r = await http(server.port, 'PUT', `/api/v1/documents/${d.id}`, JSON.stringify(d))
      if (r.status !== 200) throw new Error(`PUT failed: ${r.status} ${r.body}`)
    })
  }
  const acked = performance.now() - t0
  let maxPending = 0
  for (;;) {
    const p = await pendingEntries(server.port)
    maxPending = Math.max(maxPending, p)
    if (p === 0) break
    await new Promise((r) => setTimeout(r, 20))
  }
  const sustained = performance.now() - t0
  const cpu1 = serverCpu(server.child.pid)
  // A fast-import that ended meanwhile (restarted for a repack) is in the server's own figure:
  // the waited-for children's time is part of a process's /proc stat.
  let fastImportCpu = 0
  let otherCpu = 0
  for (const [pid, c] of cpu1.kids) {
    const used = c.cpu - (cpu0.kids.get(pid)?.cpu ?? 0)
    if (c.fastImport) fastImportCpu += used
    else otherCpu += used
  }
  const cpu = {fastImport: fastImportCpu / writes, node: (cpu1.node - cpu0.node) / writes, other: otherCpu / writes}
  const metrics = (await http(server.port, 'GET', '/metrics')).body
  const fsyncs = Number(/^svc_wal_fsyncs (\d+)/m.exec(metrics)[1])
  await server.stop()
  return {ackRate: writes / (acked / 1000), cpu, fsyncs, lat, maxPending, rate: writes / (sustained / 1000), writes}
}

// The peer runs before and after svc on the same number of documents; the mean damps drifts in machine load.
const before = await fastImport(8000)
const ours = await svc()
const after = await fastImport(ours.writes)
const peer = (before + after) / 2
line('writes, concurrent clients', `${ours.writes}, ${CLIENTS} (${haveWrk() ? `wrk, ${SECONDS} s` : 'node client'})`)
line('tuned git fast-import, one commit per document (peer)', `${peer.toFixed(0)} commits/s (before ${before.toFixed(0)}, after ${after.toFixed(0)})`)
line('svc REST durable writes, sustained (until pending=0)', `${ours.rate.toFixed(0)} writes/s`)
line('svc REST acknowledged rate (WAL group commit)', `${ours.ackRate.toFixed(0)} writes/s, ${(ours.writes / ours.fsyncs).toFixed(1)} writes per fsync`)
if (ours.lat.p50 !== undefined) line('svc write latency p50 / p99', `${ours.lat.p50.toFixed(1)} ms / ${ours.lat.p99.toFixed(1)} ms`)
line('highest pending-entries seen while draining', String(ours.maxPending))
// CPU per write does not depend on how busy the machine is, unlike the rates above.
line('CPU per write: svc node / its fast-import / peer', `${(ours.cpu.node * 1e6).toFixed(0)} us / ${(ours.cpu.fastImport * 1e6).toFixed(0)} us / ${(peerCpu * 1e6).toFixed(0)} us`)
line('CPU per write: svc git helper and cat-file', `${(ours.cpu.other * 1e6).toFixed(0)} us (history catch-up, repacks)`)
line('ratio svc sustained / tuned fast-import (goal >= 1.0)', (ours.rate / peer).toFixed(2))
line('goal >= 4000 writes/s', ours.rate >= 4000 ? 'met' : 'NOT met')
process.exit(0)
