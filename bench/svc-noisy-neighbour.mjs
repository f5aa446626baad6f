#!/usr/bin/env node
// Noisy neighbour (issue 24): while one client sends the heaviest SQL statements svc's limits let
// through and another floods large REST bodies, how long do other clients' Redis GET and
// PostgreSQL point selects take? Same server, same run: a quiet phase first, then the noisy one;
// the figures are the light clients' p50/p99/max in each phase and their ratio.
// Heavy kinds: in (long IN list), or (long OR chain), rest (large bodies), list (whole-table REST
// listings and SQL scans), slow (clients that ask for megabytes and never read the answer).
// Usage: node bench/svc-noisy-neighbour.mjs [--seconds 10] [--rows 2000] [--in-values 100000] [--or-terms 3000] [--body-kb 900] [--heavy in,or,rest,list,slow] [--no-probe]
// The server runs with bench/loop-probe.mjs (unless --no-probe): the stalls of its event loop and
// its garbage collections in each phase are printed beside the latencies, as they depend much less
// on the machine's load than the light clients' p99.
// Needs the built CLI (npm run build) and the dev dependencies ioredis and pg.
import {spawn} from 'node:child_process'
import {readFileSync, writeFileSync} from 'node:fs'
import {connect} from 'node:net'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {isMainThread, parentPort, Worker, workerData} from 'node:worker_threads'

import {Redis} from 'ioredis'
import pg from 'pg'

import {arg, http, line, pct, RUN_JS, tempDir} from './svc-common.mjs'

const SECONDS = arg('seconds', 10)
const ROWS = arg('rows', 2000)
const IN_VALUES = arg('in-values', 100_000)
const OR_TERMS = arg('or-terms', 3000)
const BODY_KB = arg('body-kb', 900)
// Extra node flags for the server only, e.g. SERVER_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof'.
const SERVER_NODE_ARGS = (process.env.SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean)
const PROBE = !process.argv.includes('--no-probe')
const HEAVY = (process.argv.includes('--heavy') ? process.argv[process.argv.indexOf('--heavy') + 1] : 'in,or,rest,list,slow').split(',')

function startAll(dataDir, probeFile) {
  return new Promise((resolve, reject) => {
    const probe = probeFile ? ['--import', fileURLToPath(new URL('loop-probe.mjs', import.meta.url))] : []
    const env = probeFile ? {...process.env, LOOP_PROBE: probeFile} : process.env
    const child = spawn(process.execPath, [...SERVER_NODE_ARGS, ...probe, RUN_JS, 'svc', 'server', '--format', 'json', '--data-dir', dataDir, '--http-port', '0', '--redis-port', '0', '--pg-port', '0', '--log-level', 'warn'], {env, stdio: ['ignore', 'pipe', 'inherit']})
    let out = ''
    child.stdout.on('data', (d) => {
      out += d
      const nl = out.indexOf('\n')
      if (nl !== -1) resolve({child, ready: JSON.parse(out.slice(0, nl))})
    })
    child.once('exit', (code) => reject(new Error(`server exited ${code}`)))
  })
}

/** Runs `op` back to back until `until()` is true; returns each call's latency in ms. */
async function loop(op, until) {
  const lat = []
  let i = 0
  while (!until()) {
    const t = performance.now()
    await op(i++)
    lat.push(performance.now() - t)
  }
  return lat
}

function summary(lat) {
  return {max: Math.max(...lat), n: lat.length, p50: pct(lat, 50), p99: pct(lat, 99)}
}

const fmt = (s) => `p50 ${s.p50.toFixed(2)} ms  p99 ${s.p99.toFixed(2)} ms  max ${s.max.toFixed(1)} ms  (${s.n} ops)`


async function noise({heavy: kinds, pg: pgConfig, redis: redisPort, rest, seconds}) {
  let stop = false
  setTimeout(() => (stop = true), seconds * 1000)
  const until = () => stop
  const stats = {bodies: 0, statements: 0, statementMs: [], statuses: {}}
  const count = (k) => (stats.statuses[k] = (stats.statuses[k] ?? 0) + 1)
  const jobs = []
  for (const kind of ['in', 'or'].filter((k) => kinds.includes(k))) {
    const client = new pg.Client(pgConfig)
    await client.connect()
    jobs.push(loop(async (i) => {
      // The heaviest statements the limits let through: a long literal IN list, and an OR chain
      // that needs the parse worker (its text is too long for the plan cache, so each is parsed).
      const sql = kind === 'in'
        ? `SELECT count(*) FROM accounts WHERE id IN (${Array.from({length: IN_VALUES}, (_, j) => j + i).join(',')})`
        : `SELECT count(*) FROM accounts WHERE ${Array.from({length: OR_TERMS + (i % 7)}, (_, j) => `id = ${j}`).join(' OR ')}`
      const t = performance.now()
      await client.query(sql).then(() => count(`sql ${kind} ok`), (error) => count(`sql ${kind} ${error.code}`))
      stats.statements++
      stats.statementMs.push(performance.now() - t)
    }, until).finally(() => client.end()))
  }
  if (kinds.includes('rest')) {
    // Large REST bodies from four connections: documents just under the 1 MiB limit, every fourth over it.
    const filler = 'x'.repeat(BODY_KB * 1024)
    for (let c = 0; c < 4; c++) {
      jobs.push(loop(async (i) => {
        const body = i % 4 === 3 ? `{"blob":"${filler}${filler}"}` : `{"blob":"${filler}","n":${i}}`
        const r = await http(rest, 'PUT', `/api/v1/documents/big:${c}`, body)
        stats.bodies++
        count(`rest ${r.status}`)
      }, until))
    }
  }
  if (kinds.includes('list')) {
    // Whole-table reads: a 1,000-document REST page and a full SQL scan, back to back.
    const client = new pg.Client(pgConfig)
    await client.connect()
    jobs.push(loop(async (i) => {
      if (i % 2 === 0) count(`list rest ${(await http(rest, 'GET', '/api/v1/documents?table=accounts&limit=1000')).status}`)
      else await client.query('SELECT * FROM accounts').then(() => count('list sql ok'), (error) => count(`list sql ${error.code}`))
    }, until).finally(() => client.end()))
  }
  if (kinds.includes('slow')) {
    // Slow readers: each asks for the large documents (REST listing and Redis MGET) and never reads.
    const held = []
    jobs.push(loop(async (i) => {
      const rp = i % 2 === 0 ? rest : redisPort
      const sock = connect(rp, '127.0.0.1')
      sock.on('error', () => {})
      sock.pause()
      const ask = rp === rest ? 'GET /api/v1/documents?table=big HTTP/1.1\r\nHost: x\r\n\r\n' : '*5\r\n$4\r\nMGET\r\n$5\r\nbig:0\r\n$5\r\nbig:1\r\n$5\r\nbig:2\r\n$5\r\nbig:3\r\n'
      sock.write(ask.repeat(8))
      held.push(sock)
      count('slow reader')
      await new Promise((r) => setTimeout(r, 250))
    }, until))
    jobs.push(new Promise((r) => setTimeout(r, seconds * 1000)).then(() => held.forEach((x) => x.destroy())))
  }
  await Promise.all(jobs)
  return stats
}

if (!isMainThread) {
  parentPort.postMessage(await noise(workerData))
  process.exit(0)
}

const work = tempDir()
const probeFile = PROBE ? join(work, 'loop-probe.json') : undefined
const {child, ready} = await startAll(join(work, 'data'), probeFile)
const pgConfig = {database: 'svc', host: '127.0.0.1', password: 'svc', port: ready.pg, user: 'svc'}
const setup = new pg.Client(pgConfig)
await setup.connect()
await setup.query('CREATE TABLE accounts (id int PRIMARY KEY, abalance int, filler text)')
for (let start = 1; start <= ROWS; start += 500) {
  const values = []
  for (let i = start; i < Math.min(start + 500, ROWS + 1); i++) values.push(`(${i}, ${i % 1000}, 'filler ${i}')`)
  await setup.query(`INSERT INTO accounts (id, abalance, filler) VALUES ${values.join(', ')}`)
}
await setup.end()
const redis = new Redis({host: '127.0.0.1', port: ready.redis})
for (let i = 0; i < 100; i++) await redis.set(`k:${i}`, `value ${i}`)

const light = new pg.Client(pgConfig)
await light.connect()
const heavy = new pg.Client(pgConfig)
await heavy.connect()

/**
 * The noisy clients run in a worker thread, so building a 100,000-value statement or a 1.8 MB body
 * never delays the light clients' own event loop: any delay they see comes from the server.
 */
function startNoise(seconds) {
  const worker = new Worker(new URL(import.meta.url), {argv: process.argv.slice(2), workerData: {heavy: HEAVY, pg: pgConfig, redis: ready.redis, rest: ready.rest, seconds}})
  return new Promise((resolve, reject) => {
    worker.once('message', resolve)
    worker.once('error', reject)
  })
}

async function phase(noisy) {
  const from = Date.now()
  let stop = false
  const end = new Promise((r) => setTimeout(() => {
    stop = true
    r()
  }, SECONDS * 1000))
  const until = () => stop
  const [get, select, , heavyStats] = await Promise.all([
    loop((i) => redis.get(`k:${i % 100}`), until),
    loop((i) => light.query('SELECT abalance FROM accounts WHERE id = $1', [1 + (i % ROWS)]), until),
    end,
    noisy ? startNoise(SECONDS) : undefined,
  ])
  // The light clients stop after SECONDS; what the heavy ones still finish after that waits for no one.
  return {from, get: summary(get), heavyStats, select: summary(select), to: from + SECONDS * 1000}
}

const quiet = await phase(false)
const noisy = await phase(true)
line('Redis GET, quiet', fmt(quiet.get))
line('Redis GET, noisy', fmt(noisy.get))
line('PostgreSQL point select, quiet', fmt(quiet.select))
line('PostgreSQL point select, noisy', fmt(noisy.select))
line('p99 noisy / quiet (GET, select)', `${(noisy.get.p99 / quiet.get.p99).toFixed(2)}x, ${(noisy.select.p99 / quiet.select.p99).toFixed(2)}x`)
const h = noisy.heavyStats
line(`heavy SQL (${HEAVY.filter((k) => k !== 'rest').join(', ')}: IN ${IN_VALUES} / OR ${OR_TERMS})`, h.statements === 0 ? 'none' : `${h.statements} statements, p50 ${pct(h.statementMs, 50).toFixed(0)} ms, max ${Math.max(...h.statementMs).toFixed(0)} ms`)
line(`REST bodies (${BODY_KB} KB and ${2 * BODY_KB} KB)`, `${h.bodies} requests`)
line('answers to the noisy clients', JSON.stringify(h.statuses))
line('server RSS after the noisy phase', `${Math.round(Number((await http(ready.rest, 'GET', '/metrics')).body.match(/^svc_process_process_resident_memory_bytes (\d+)/m)?.[1] ?? 0) / 1024 / 1024)} MB`)
await Promise.all([light.end(), heavy.end()])
redis.disconnect()
await new Promise((r) => {
  child.once('exit', r)
  child.kill('SIGTERM')
})
if (probeFile) {
  const probe = JSON.parse(readFileSync(probeFile, 'utf8'))
  // LOOP_PROBE_OUT keeps the stalls (with the noisy window) for bench/cpuprofile-stalls.mjs --probe.
  if (process.env.LOOP_PROBE_OUT) writeFileSync(process.env.LOOP_PROBE_OUT, JSON.stringify({...probe, window: [noisy.from, noisy.to]}))
  for (const [name, p] of [['quiet', quiet], ['noisy', noisy]]) {
    const inWindow = probe.stalls.filter((s) => s.at >= p.from && s.at < p.to)
    const stalls = inWindow.map((s) => s.ms)
    const cpu = inWindow.map((s) => s.cpu)
    const over = (ms, xs = stalls) => xs.filter((x) => x >= ms).length
    const gcs = probe.gcs.filter((g) => g.at >= p.from && g.at < p.to)
    const major = gcs.filter((g) => g.kind === 'major').map((g) => g.ms)
    line(`server loop stalls, ${name} (>= 20 / 50 / 100 ms)`, `${over(20)} / ${over(50)} / ${over(100)}, max ${Math.max(0, ...stalls).toFixed(0)} ms, sum of >= 20 ms ${stalls.filter((x) => x >= 20).reduce((a, b) => a + b, 0).toFixed(0)} ms`)
    line(`  of which on CPU (>= 20 / 50 / 100 ms)`, `${over(20, cpu)} / ${over(50, cpu)} / ${over(100, cpu)}, max ${Math.max(0, ...cpu).toFixed(0)} ms, sum of >= 20 ms ${cpu.filter((x) => x >= 20).reduce((a, b) => a + b, 0).toFixed(0)} ms`)
    line(`server GC >= 5 ms, ${name}`, `${gcs.length} (major ${major.length}, max ${Math.max(0, ...gcs.map((g) => g.ms)).toFixed(0)} ms, sum ${gcs.reduce((a, g) => a + g.ms, 0).toFixed(0)} ms)`)
  }
  if (process.env.LOOP_PROBE_LIST) {
    for (const s of probe.stalls.filter((s) => s.at >= noisy.from && s.at < noisy.to && s.ms >= 20)) line(`  stall at +${s.at - noisy.from} ms`, `${s.ms} ms (CPU ${s.cpu} ms, waiting ${s.wait} ms)`)
  }
}
process.exit(0)
