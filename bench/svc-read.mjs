#!/usr/bin/env node
// Current-version reads through REST with keep-alive, against a bare node:http server answering
// a constant JSON body in the same run; and p50 latency with 100k commits vs 1k commits of history.
// Usage: node bench/svc-read.mjs [--rounds 5] [--clients 32] [--commits 100000] [--fixture DIR]
import {spawn} from 'node:child_process'
import {cpSync, existsSync} from 'node:fs'
import {join} from 'node:path'

import {arg, drive, haveWrk, http, line, pct, startServer, tempDir, wrk} from './svc-common.mjs'
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

async function throughput(port, path, prefix) {
  if (haveWrk()) {
    await wrk(port, readLua(prefix), {seconds: 1})
    return (await wrk(port, readLua(prefix), {seconds: 3})).rps
  }
  await drive(2000, CLIENTS, (i) => http(port, 'GET', path(i))) // warm-up
  const t0 = performance.now()
  await drive(REQUESTS, CLIENTS, async (i) => {
    const r = await http(port, 'GET', path(i))
    if (r.status !== 200) throw new Error(`GET ${path(i)}: ${r.status}`)
  })
  return REQUESTS / ((performance.now() - t0) / 1000)
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
// Rounds alternate peer and svc so a change in machine load hits both; medians are reported.
const peerRuns = []
const ourRuns = []
for (let round = 0; round < ROUNDS; round++) {
  peerRuns.push(await throughput(barePort, () => '/', '/'))
  ourRuns.push(await throughput(server.port, (i) => `/api/v1/documents/items:${(i * 7919) % DOCS}`, '/api/v1/documents/items:'))
}
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]
const peer = median(peerRuns)
const ours = median(ourRuns)
bare.kill()
const p50small = await latency(server.port)
await server.stop()

// --fixture DIR keeps the 100k-commit repository and reuses it on the next run.
const fixtureArg = process.argv.indexOf('--fixture')
const fixture = fixtureArg === -1 ? undefined : process.argv[fixtureArg + 1]
const big = join(tempDir(), 'd')
if (fixture && existsSync(join(fixture, 'repo'))) cpSync(join(fixture, 'repo'), join(big, 'repo'), {recursive: true})
else {
  await buildDataDir(big, {commits: COMMITS, docs: DOCS})
  if (fixture) cpSync(join(big, 'repo'), join(fixture, 'repo'), {recursive: true})
}
server = await startServer(big)
const p50big = await latency(server.port)
await server.stop()

line('load generator, connections (keep-alive)', `${haveWrk() ? `wrk -t1, ${ROUNDS} alternating rounds of 3 s` : `node client, ${REQUESTS} requests`}, ${CLIENTS}`)
line('bare node:http constant JSON (peer), median', `${peer.toFixed(0)} req/s (runs ${peerRuns.map((x) => x.toFixed(0)).join(' ')})`)
line('svc REST GET current version, median', `${ours.toFixed(0)} req/s (runs ${ourRuns.map((x) => x.toFixed(0)).join(' ')})`)
line('ratio svc / bare node:http (goal >= 0.5)', (ours / peer).toFixed(2))
line(`p50 latency, ${DOCS} commits of history`, `${p50small.toFixed(3)} ms`)
line(`p50 latency, ${COMMITS} commits of history`, `${p50big.toFixed(3)} ms`)
line('ratio p50 big / small (goal <= 1.2)', (p50big / p50small).toFixed(2))
process.exit(0)
