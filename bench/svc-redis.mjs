#!/usr/bin/env node
// redis-benchmark against `toolkit svc server`'s Redis protocol and against a real redis-server
// started here on a free loopback port, in the same run. Also measures the engine's own durable
// write rate (50 concurrent puts, in process) so SET can be compared with what the engine can do.
// Usage: node bench/svc-redis.mjs [--requests 100000] [--set-requests 20000] [--keys 100000] [--writes 20000]
// Needs the built plugin (npm run build -w plugins/svc), redis-server and redis-benchmark.
// Goals (issue 26): GET >= 0.9x redis-server at -P 1 and >= 0.7x at -P 16; SET >= 0.3x a
// redis-server with appendfsync always at -P 1.
import {spawn, spawnSync} from 'node:child_process'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'

import {arg, cpuSeconds, freePort, line, startServer, tempDir} from './svc-common.mjs'

// Print the load average beside the figures: on a shared machine they mean little without it.
const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
const loadAtStart = loadAverage()
const REQUESTS = arg('requests', 100_000)
// Each SET is a durable commit: fewer requests keep the run short.
const SET_REQUESTS = arg('set-requests', 20_000)
const KEYS = arg('keys', 100_000)
const WRITES = arg('writes', 20_000)

function waitReady(port, timeoutMs = 10_000) {
  const until = Date.now() + timeoutMs
  for (;;) {
    const r = spawnSync('redis-cli', ['-p', String(port), 'PING'], {encoding: 'utf8'})
    if (r.stdout.trim() === 'PONG') return
    if (Date.now() > until) throw new Error(`no PONG on port ${port}`)
    spawnSync('sleep', ['0.1'])
  }
}

/**
 * In-memory redis (no RDB snapshots, no AOF) is the fastest configuration of the peer, for reads;
 * `durable` gives every write an fsync before its reply (`appendfsync always`), as svc's SET
 * is acknowledged only once on disk.
 */
async function startRedis({durable = false} = {}) {
  const port = await freePort()
  const aof = durable ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...aof, '--dir', tempDir('redis-peer-')], {stdio: 'ignore'})
  waitReady(port)
  return {pid: child.pid, port, stop: () => new Promise((r) => (child.once('exit', r), child.kill('SIGTERM')))}
}

/** A bare Node.js server answering every command with a constant bulk string: the ceiling of any Node RESP server here. */
function startBareNode() {
  const code = `const s = require('node:net').createServer({noDelay: true}, (c) => c.on('data', (d) => { let n = 0; for (const b of d) if (b === 42) n++; c.write('$3\\r\\nxxx\\r\\n'.repeat(n)) })); s.listen(0, '127.0.0.1', () => console.log(s.address().port))`
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['-e', code], {stdio: ['ignore', 'pipe', 'inherit']})
    child.stdout.once('data', (d) => resolve({pid: child.pid, port: Number(String(d).trim()), stop: () => child.kill()}))
  })
}

async function startSvc() {
  const s = await startServer(join(tempDir(), 'data'), [], 'redis')
  return {...s, pid: s.child.pid}
}

/** Server CPU microseconds per request of each run, by server pid and test (printed at the end). */
const cpuPerOp = new Map()

/**
 * One redis-benchmark run against `server` ({port, pid}); returns requests per second and records
 * the server's CPU per request (/proc), which a shared machine's load moves far less than rates.
 */
function bench(server, test, pipeline, requests) {
  const {port} = server
  // A pipelined GET run of REQUESTS lasts a tenth of a second on redis-server: too short to measure.
  const n = requests ?? (test === 'set' ? SET_REQUESTS : pipeline > 1 ? REQUESTS * 10 : REQUESTS)
  const args = ['-h', '127.0.0.1', '-p', String(port), '-t', test, '-c', '50', '-n', String(n), '-r', String(KEYS), '-P', String(pipeline), '--csv']
  const c0 = cpuSeconds(server.pid)
  const r = spawnSync('redis-benchmark', args, {encoding: 'utf8'})
  cpuPerOp.set(`${server.pid} ${test} ${pipeline}`, ((cpuSeconds(server.pid) - c0) / n) * 1e6)
  const m = /"([A-Z]+)","([\d.]+)"/.exec(r.stdout)
  if (!m) throw new Error(`redis-benchmark ${args.join(' ')} printed no figure:\n${r.stdout}\n${r.stderr}`)
  return Number(m[2])
}

async function engineWriteRate() {
  const {openEngine} = await import('../plugins/svc/dist/engine/index.js')
  const engine = await openEngine(join(tempDir(), 'engine'), {indexCheckIntervalMs: 0})
  let next = 0
  const t0 = performance.now()
  await Promise.all(
    Array.from({length: 50}, async () => {
      for (;;) {
        const i = next++
        if (i >= WRITES) return
        await engine.put({id: `key:${i}`, value: `v${i}`})
      }
    }),
  )
  const rate = WRITES / ((performance.now() - t0) / 1000)
  await engine.close()
  return rate
}

/** The server's write-ahead log fdatasyncs so far (INFO persistence), or NaN from a build that does not report them. */
function walFsyncs(port) {
  const info = spawnSync('redis-cli', ['-p', String(port), 'INFO', 'persistence'], {encoding: 'utf8'}).stdout
  return Number(/svc_wal_fsyncs:(\d+)/.exec(info)?.[1] ?? Number.NaN)
}

/** Waits until every acknowledged write is in Git, so reads are not measured against the catch-up. */
function drained(port) {
  const until = Date.now() + 300_000
  for (;;) {
    const info = spawnSync('redis-cli', ['-p', String(port), 'INFO', 'persistence'], {encoding: 'utf8'}).stdout
    if (/svc_wal_pending_entries:0\b/.test(info)) return
    if (Date.now() > until) throw new Error('the write-ahead log did not drain')
    spawnSync('sleep', ['0.2'])
  }
}

/**
 * Waits until the server's own CPU use falls below 3% for a second (at most `maxMs`): after the
 * SET runs it is still indexing what they wrote and checkpointing, which would be counted against
 * the GET runs that follow, and the peer has no such work. Returns the milliseconds waited.
 */
async function settled(pid, maxMs = 60_000) {
  const t0 = Date.now()
  let last = cpuSeconds(pid)
  while (Date.now() - t0 < maxMs) {
    await new Promise((r) => setTimeout(r, 1000))
    const now = cpuSeconds(pid)
    if (now - last < 0.03) break
    last = now
  }
  return Date.now() - t0
}
const waits = []

// The engine's rate is measured before and after the servers; the mean damps drifts in machine load.
const engineBefore = await engineWriteRate()
const peer = await startRedis()
const durablePeer = await startRedis({durable: true})
const svc = await startSvc()
const results = []
try {
  for (const [test, p] of [
    ['set', 1],
    ['get', 1],
    ['get', 16],
    ['set', 16],
  ]) {
    // The first GETs a fresh Node process answers run before V8 has compiled the read path (about
    // a third more CPU per GET in a short run): both servers answer a few thousand untimed first,
    // as a server in service long has.
    if (test === 'get' && p === 1) for (const s of [svc, peer]) bench(s, 'get', 1, 10_000)
    const fsyncsBefore = walFsyncs(svc.port)
    const ours = bench(svc, test, p)
    const oursUs = cpuPerOp.get(`${svc.pid} ${test} ${p}`)
    // Group commit: how many SETs one fdatasync acknowledged (redis-server fsyncs once per event-loop turn).
    const perFsync = test === 'set' ? SET_REQUESTS / (walFsyncs(svc.port) - fsyncsBefore) : undefined
    drained(svc.port)
    if (test === 'set') waits.push(await settled(svc.pid))
    const theirs = bench(peer, test, p)
    // SET is compared with the redis that also answers only once the write is on disk.
    const durable = test === 'set' ? bench(durablePeer, test, p) : undefined
    results.push({durable, ours, oursUs, p, perFsync, test, theirs, theirsUs: cpuPerOp.get(`${peer.pid} ${test} ${p}`)})
  }
  const bare = await startBareNode()
  results.push({bare: bench(bare, 'get', 1), bareUs: cpuPerOp.get(`${bare.pid} get 1`), ours: bench(svc, 'get', 1), oursUs: cpuPerOp.get(`${svc.pid} get 1`), p: 1, test: 'get (again, next to a bare Node server)', theirs: bench(peer, 'get', 1), theirsUs: cpuPerOp.get(`${peer.pid} get 1`)})
  bare.stop()
} finally {
  await svc.stop()
  await peer.stop()
  await durablePeer.stop()
}
const engineAfter = await engineWriteRate()
const engineRate = (engineBefore + engineAfter) / 2

console.log(`redis-benchmark -c 50 -n ${REQUESTS} (GET -P 16: ${REQUESTS * 10}, SET: ${SET_REQUESTS}) -r ${KEYS}; peer: redis-server ${spawnSync('redis-server', ['--version'], {encoding: 'utf8'}).stdout.split(' ')[2]}`)
for (const r of results) {
  line(`${r.test.toUpperCase()} -P ${r.p}: svc / redis-server (req/s)`, `${Math.round(r.ours)} / ${Math.round(r.theirs)} = ${(r.ours / r.theirs).toFixed(2)}x; server CPU ${r.oursUs.toFixed(2)} / ${r.theirsUs.toFixed(2)} us per request`)
  if (r.durable !== undefined) line(`${r.test.toUpperCase()} -P ${r.p}: svc / redis-server appendfsync always`, `${Math.round(r.ours)} / ${Math.round(r.durable)} = ${(r.ours / r.durable).toFixed(2)}x; ${r.perFsync.toFixed(1)} SETs per fsync`)
}
line('after each SET run, the server settled in (ms)', waits.join(', '))
const again = results.at(-1)
line('bare Node RESP server GET -P 1 / redis-server', `${Math.round(again.bare)} / ${Math.round(again.theirs)} = ${(again.bare / again.theirs).toFixed(2)}x (the ceiling for Node); its CPU ${again.bareUs.toFixed(2)} us per request`)
line('svc GET -P 1 / bare Node RESP server', `${(again.ours / again.bare).toFixed(2)}x`)
const set1 = results.find((r) => r.test === 'set' && r.p === 1)
line('engine durable puts, 50 concurrent, in process (/s)', `${Math.round(engineRate)} (before ${Math.round(engineBefore)}, after ${Math.round(engineAfter)})`)
line('SET -P 1 / engine durable put rate', `${(set1.ours / engineRate).toFixed(2)}x`)
line('load average at start / end', `${loadAtStart} / ${loadAverage()}`)
