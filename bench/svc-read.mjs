#!/usr/bin/env node
// Current-version reads through REST with keep-alive, against a bare node:http server answering
// a constant JSON body in the same run; and p50 latency with 100k commits vs 1k commits of history.
// Server CPU per request (user + system, /proc) is printed beside each rate: on a shared machine
// it moves far less than the rates do.
// Usage: node bench/svc-read.mjs [--rounds 5] [--clients 32] [--commits 100000] [--fixture DIR]
//   [--ab DIR]  also runs the svc build of another checkout (a worktree with node_modules and
//               `npm run build` done), alternating with this one, for a same-run A/B
//   [--no-history]  leaves out the 100k-commit latency part
import {spawn} from 'node:child_process'
import {cpSync, existsSync} from 'node:fs'
import {join, resolve} from 'node:path'

import {arg, cpuSeconds, drive, haveWrk, http, line, pct, startServer, tempDir, wrk} from './svc-common.mjs'
import {buildDataDir, makeDoc} from './svc-fixture.mjs'

const REQUESTS = arg('requests', 20_000)
const CLIENTS = arg('clients', 32)
const COMMITS = arg('commits', 100_000)
const ROUNDS = arg('rounds', 5)
const DOCS = 1000

const readLua = (prefix) => `
math.randomseed(7)
request = function()
  return wrk.format("GET", "${prefix}" .. math.random(0, ${DOCS - 1}))
end`

/** Requests per second and the server's CPU microseconds per request (`pid`: the server process). */
async function throughput(port, path, prefix, pid) {
  if (haveWrk()) {
    await wrk(port, readLua(prefix), {seconds: 1})
    const c0 = cpuSeconds(pid)
    const r = await wrk(port, readLua(prefix), {seconds: 3})
    return {rps: r.rps, us: ((cpuSeconds(pid) - c0) / r.requests) * 1e6}
  }
  await drive(2000, CLIENTS, (i) => http(port, 'GET', path(i))) // warm-up
  const c0 = cpuSeconds(pid)
  const t0 = performance.now()
  await drive(REQUESTS, CLIENTS, async (i) => {
    const r = await http(port, 'GET', path(i))
    if (r.status !== 200) throw new Error(`GET ${path(i)}: ${r.status}`)
  })
  return {rps: REQUESTS / ((performance.now() - t0) / 1000), us: ((cpuSeconds(pid) - c0) / REQUESTS) * 1e6}
}

async function latency(port) {
  await drive(2000, 1, (i) => http(port, 'GET', `/api/v1/documents/items:${(i * 7919) % DOCS}`))
  const lat = await drive(5000, 1, (i) => http(port, 'GET', `/api/v1/documents/items:${(i * 104_729) % DOCS}`))
  return pct(lat, 50)
}

// Peer: bare node:http in its own process (like the svc server), constant JSON body of a document's size.
const body = JSON.stringify(makeDoc(1), null, 2)
const bare = spawn(process.execPath, ['-e', `
  const body = ${JSON.stringify(body)}
  const s = require('node:http').createServer((req, res) => {
    res.writeHead(200, {'content-length': Buffer.byteLength(body), 'content-type': 'application/json'})
    res.end(body)
  })
  s.keepAliveTimeout = 65000
  s.listen(0, '127.0.0.1', () => console.log(s.address().port))
`], {stdio: ['ignore', 'pipe', 'inherit']})
const barePort = Number(await new Promise((r) => bare.stdout.once('data', (d) => r(String(d).trim()))))

const small = await buildDataDir(join(tempDir(), 'd'), {commits: DOCS, docs: DOCS})
let server = await startServer(small)
// --ab DIR: the same documents served by another checkout's build (its own fixture code writes
// its data directory, so a build with an older layout reads what it expects).
const abArg = process.argv.indexOf('--ab')
const abRoot = abArg === -1 ? undefined : resolve(process.argv[abArg + 1])
let other
if (abRoot) {
  const c = await import(join(abRoot, 'bench/svc-common.mjs'))
  const f = await import(join(abRoot, 'bench/svc-fixture.mjs'))
  other = await c.startServer(await f.buildDataDir(join(tempDir(), 'd'), {commits: DOCS, docs: DOCS}))
}
const docPath = (i) => `/api/v1/documents/items:${(i * 7919) % DOCS}`
// Rounds alternate peer and svc (and the A/B build, in turned order every other round) so a
// change in machine load hits all; medians are reported.
const targets = [
  {pid: bare.pid, port: barePort, runs: [], path: () => '/', prefix: '/'},
  {pid: server.child.pid, port: server.port, runs: [], path: docPath, prefix: '/api/v1/documents/items:'},
  ...(other ? [{pid: other.child.pid, port: other.port, runs: [], path: docPath, prefix: '/api/v1/documents/items:'}] : []),
]
const [peerT, ourT, otherT] = targets
for (let round = 0; round < ROUNDS; round++) {
  for (const t of round % 2 === 1 && other ? [...targets].reverse() : targets) t.runs.push(await throughput(t.port, t.path, t.prefix, t.pid))
}
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]
const peerRuns = peerT.runs.map((r) => r.rps)
const ourRuns = ourT.runs.map((r) => r.rps)
const peer = median(peerRuns)
const ours = median(ourRuns)
const cpuUs = (t) => median(t.runs.map((r) => r.us)).toFixed(1)
bare.kill()
await other?.stop()
const p50small = await latency(server.port)
await server.stop()

const history = !process.argv.includes('--no-history')
// --fixture DIR keeps the 100k-commit repository and reuses it on the next run.
const fixtureArg = process.argv.indexOf('--fixture')
const fixture = fixtureArg === -1 ? undefined : process.argv[fixtureArg + 1]
let p50big
if (history) {
  const big = join(tempDir(), 'd')
  if (fixture && existsSync(join(fixture, 'repo'))) cpSync(join(fixture, 'repo'), join(big, 'repo'), {recursive: true})
  else {
    await buildDataDir(big, {commits: COMMITS, docs: DOCS})
    if (fixture) cpSync(join(big, 'repo'), join(fixture, 'repo'), {recursive: true})
  }
  server = await startServer(big)
  p50big = await latency(server.port)
  await server.stop()
}

line('load generator, connections (keep-alive)', `${haveWrk() ? `wrk -t1, ${ROUNDS} alternating rounds of 3 s` : `node client, ${REQUESTS} requests`}, ${CLIENTS}`)
line('bare node:http constant JSON (peer), median', `${peer.toFixed(0)} req/s, ${cpuUs(peerT)} us CPU/req (runs ${peerRuns.map((x) => x.toFixed(0)).join(' ')})`)
line('svc REST GET current version, median', `${ours.toFixed(0)} req/s, ${cpuUs(ourT)} us CPU/req (runs ${ourRuns.map((x) => x.toFixed(0)).join(' ')})`)
line('ratio svc / bare node:http (goal >= 0.5)', (ours / peer).toFixed(2))
if (otherT) {
  const theirs = median(otherT.runs.map((r) => r.rps))
  line(`A/B: ${abRoot}, median`, `${theirs.toFixed(0)} req/s, ${cpuUs(otherT)} us CPU/req (runs ${otherT.runs.map((r) => r.rps.toFixed(0)).join(' ')})`)
  line('A/B: its ratio / bare node:http', (theirs / peer).toFixed(2))
}
line(`p50 latency, ${DOCS} commits of history`, `${p50small.toFixed(3)} ms`)
if (p50big !== undefined) {
  line(`p50 latency, ${COMMITS} commits of history`, `${p50big.toFixed(3)} ms`)
  line('ratio p50 big / small (goal <= 1.2)', (p50big / p50small).toFixed(2))
}
process.exit(0)
