#!/usr/bin/env node
// svc at scale (issue 26): writes N of the fixture's ~200-byte documents through the engine API
// (32 writers, one commit per write), then measures what grows with the data: sustained write
// rate, current-read p50/p99, search p95, as-of and history reads, time to ready with the
// full-text index on disk and when it must be rebuilt, RSS, and the repository's size after
// compaction. Each size runs in its own child process (clean RSS), all sizes in the same run,
// and the growth ratios from the smallest size are printed.
// History and as-of reads are also measured walking Git (the engine opened with historyIndex off,
// as before the history index) on the same data in the same run, and both answers compared.
// Usage: node bench/svc-scale.mjs [--docs 100000,1000000] [--queries 300] [--reads 2000] [--walked 5] [--json]
// (--writes-only: only the write phase, with the rate and CPU per write by process per 100k block;
// --build CHECKOUT: with another checkout's build; --repack-every N: the engine's repackEveryCheckpoints;
// --size: compact after the writes and print the repository's size; SVC_BENCH_TIDS=1: each block's
// CPU per write of each of the engine's threads, worker threads named by their job)
//
// On a kept data directory (bench/svc-fixture.mjs builds one with fast-import in minutes), one
// part alone, with the CPU each process spent per operation (/proc: the engine's own process,
// fast-import, cat-file, the git helper and the git commands it ran):
//   node bench/svc-scale.mjs --fixture DIR --docs N --only writes [--count 50000] [--repack-every N] [--maint-wait S]  new documents, to a copy of DIR
//     (--maint-wait S: the CPU per write also takes in the background maintenance the writes started, waited for up to S s)
//   node bench/svc-scale.mjs --fixture DIR --docs N --only reads [--reads 20000] [--settle MS]  random current reads of DIR's documents
// The first use of DIR builds its full-text and history indexes in place (so later runs open
// ready). `--ab OTHER_CHECKOUT` runs the same part with another checkout's build, alternating,
// `--rounds` times each, for a same-minute A/B. `--only reads` is the engine's `get` in process:
// a pipe round trip with cat-file at ~30 us, where this VM's idle-vCPU wake-ups are most of the figure.
//
// Issue 26's read figure (REST GET by id p50, 1M within 1.2x of 100k) against real servers:
//   node bench/svc-scale.mjs --only rest --fixtures /tmp/bgy-fx100k:100000,/tmp/bgy-fx1m:1000000
//     [--reads 2000] [--rounds 1] [--ab OTHER_CHECKOUT] [--after-graph] [--settle MS] [--in-process]
//     [--restart] [--linger MS]
// For each size (alternating which goes first each round) a `toolkit svc server` child on a copy of
// the fixture (repository hard-linked: git only ever adds files; index and WAL copied), then
// `GET /api/v1/documents/<id>` over loopback, keep-alive, random ids never read before, with one
// client and then 16 concurrent ones: right after the server listens, again after a warm pass of
// other ids (JIT and page cache warm, still uncached), and the first ids again (blob cache hits).
// What the server ran beside each phase (a start-up commit-graph write, the history log) is named
// with its CPU per read; `--after-graph` first waits (at most 150 s) for the start-up commit-graph
// write to end, `--settle MS` waits MS after listening. `--in-process` adds the `--only reads`
// figure of each size (the engine's `get` in this process, no HTTP). `--restart` measures a
// restart: the server first opens the copy, waits for its full-text index and stops cleanly.
// Each server's start-up timeline is printed: every thread's and child's CPU from listening to
// the last phase, with the seconds it was busy in, and when search said ready (`--linger MS`
// keeps the server that long after the last phase, to see the start-up work end).
//
// Issue 26's search figure (search p95 at 1M <= 15 ms, one client, real server over loopback):
//   node bench/svc-scale.mjs --only search --fixtures /tmp/bgy-fx100k:100000,/tmp/bgy-fx1m:1000000
//     [--queries 300] [--warm-wait S] [--ab OTHER_CHECKOUT] [--restart] [--search-writes-per-s R] [--first-start]
// A server per size and build on a copy of the fixture (as --only rest); searches as svc-fts-ab.mjs
// makes them, once the index has caught up and again S seconds later (default 20: the background
// warm-ups of the index done), with the server's CPU per search and while idle, and its RSS; `--restart`
// as for --only rest (a fixture without a commit-graph has one written in the first pause: give
// it one first, `git -C DIR/repo commit-graph write --reachable --changed-paths --split`).
// `--search-writes-per-s R` (default 0: off) runs each pass again with a steady write load beside
// the searches: a second client PUTs R documents a second (up to 32 in flight; new text from the
// fixture's generator, 80% rewrites of a random document, 20% new ones), each pass printed with
// and without writes, with the write rate reached. `--first-start`: the copy is made without its
// index folder, so the server first builds the full-text index (the first pass starts once built).
import {spawnSync} from 'node:child_process'
import {cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync} from 'node:fs'
import {loadavg} from 'node:os'
import {PerformanceObserver} from 'node:perf_hooks'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {drive, http, line, pct, startServer, tempDir} from './svc-common.mjs'
import {makeDoc, rand, word} from './svc-fixture.mjs'

const opt = (name, def) => {
  const i = process.argv.indexOf(`--${name}`)
  return i === -1 ? def : process.argv[i + 1]
}
/** Documents given a second version after the as-of point; as-of and history reads each read them once. */
const VERSIONED = 50
/** The git subcommands the CPU figures name. */
const GIT_COMMANDS = ['fast-import', 'cat-file', 'log', 'repack', 'pack-objects', 'rev-list', 'ls-tree', 'for-each-ref', 'commit-graph']
/** `--only rest`: the client counts and the phases of each server's reads. */
const REST_CLIENTS = [1, 16]
const PHASES = ['after ready', 'warm', 'cached']
const load = () => loadavg().map((x) => x.toFixed(2)).join(' ')


/** Runs `--only` in a child per round (this checkout, then the --ab one, alternating). */
function keptParent() {
  const builds = [fileURLToPath(new URL('..', import.meta.url)), ...(opt('ab', undefined) ? [opt('ab')] : [])]
  const rounds = Number(opt('rounds', 1))
  const passOn = ['fixture', 'only', 'count', 'reads', 'docs', 'settle', 'repack-every', 'maint-wait'].flatMap((k) => (opt(k, undefined) === undefined ? [] : [`--${k}`, String(opt(k))]))
  const all = builds.map(() => [])
  for (let round = 0; round < rounds; round++) {
    for (const [b, build] of builds.entries()) {
      // SVC_BENCH_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"): node flags of the run that holds the engine.
      const nodeArgs = (process.env.SVC_BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean)
      const r = spawnSync(process.execPath, [...nodeArgs, fileURLToPath(import.meta.url), ...passOn, '--build', build], {encoding: 'utf8', maxBuffer: 1 << 24, stdio: ['ignore', 'pipe', 'inherit']})
      if (r.status !== 0) throw new Error(`run with ${build} failed (exit ${r.status})`)
      const res = JSON.parse(r.stdout.trim().split('\n').at(-1))
      all[b].push(res)
      console.log(`${build} round ${round + 1}: ${JSON.stringify(res)}`)
    }
  }
  if (builds.length > 1) {
    // A process that ran in one build's run only (a git command) counts as 0 in the other's.
    const med = (l, k) => pct(l.map((x) => x[k] ?? 0), 50)
    const keys = new Set(all.flat().flatMap((x) => Object.keys(x).filter((k) => typeof x[k] === 'number')))
    for (const k of keys) line(`  median ${k} (ab / this)`, `${med(all[1], k).toFixed(3)} / ${med(all[0], k).toFixed(3)} = ${(med(all[0], k) / med(all[1], k)).toFixed(2)}x`)
  }
}

/**
 * CPU seconds of `pid` and of every live descendant, by command name (reaped ones are in their
 * parent's cutime: `reaped` for the root's own). The root is this process (`engine`) unless given.
 */
function treeCpu(pid, into = {}, root = process.pid, rootName = 'engine') {
  let comm
  try {
    comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim()
  } catch {
    return into
  }
  let cmd = comm
  if (comm === 'git' || comm.startsWith('git-')) cmd = gitCommand(pid) ?? comm
  else if (pid !== root && comm.startsWith('node')) cmd = 'helper'
  if (pid === root) {
    // Children the root reaped (a fast-import replaced by a fresh one) are its cutime/cstime.
    const [own, reaped] = cpuSecondsOf(pid, true)
    into[rootName] = (into[rootName] ?? 0) + own
    into.reaped = (into.reaped ?? 0) + reaped
    // A server's own CPU split: its event-loop thread, and its other threads (worker threads, GC
    // helpers, libuv's pool), which a start-up job such as the full-text file check keeps busy.
    if (root !== process.pid) {
      const [loop] = cpuSecondsOf(`${pid}/task/${pid}`, true)
      into['part:event loop'] = (into['part:event loop'] ?? 0) + loop
      // The other threads by name (V8's GC helpers `V8 DefaultWorke`, libuv's pool, worker threads).
      for (const tid of tasksOf(pid)) {
        if (tid === pid) continue
        const name = `part:thread ${threadName(pid, tid)}`
        into[name] = (into[name] ?? 0) + cpuSecondsOf(`${pid}/task/${tid}`, true)[0]
      }
    }
  } else into[cmd] = (into[cmd] ?? 0) + cpuSecondsOf(pid)
  for (const c of childPidsOf(pid)) treeCpu(c, into, root, rootName)
  return into
}

/** The git subcommand a git process runs (`commit-graph`, `cat-file`...), from its argv. */
function gitCommand(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').find((a) => GIT_COMMANDS.includes(a))
  } catch {
    return undefined
  }
}

/** The background git commands (not the long-lived cat-file and fast-import) running under `pid` now. */
function backgroundGit(pid, into = new Set()) {
  for (const c of childPidsOf(pid)) {
    const g = gitCommand(c)
    if (g !== undefined && g !== 'cat-file' && g !== 'fast-import') into.add(g)
    backgroundGit(c, into)
  }
  return into
}

/** utime+stime+cutime+cstime of `pid`, or with `split` [utime+stime, cutime+cstime]. */
function cpuSecondsOf(pid, split = false) {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const v = f.slice(f.lastIndexOf(')') + 2).split(' ').map(Number)
    return split ? [(v[11] + v[12]) / 100, (v[13] + v[14]) / 100] : (v[11] + v[12] + v[13] + v[14]) / 100
  } catch {
    return split ? [0, 0] : 0
  }
}

/**
 * Milliseconds of GC pause on the event loop by kind (V8's `gc` performance entries: scavenges
 * `minor`, mark-compacts `major`, incremental marking steps `incremental`), summed since the start.
 */
const gcMs = {}
/** How many of each kind. */
const gcCount = {}
const GC_KINDS = {1: 'minor', 4: 'major', 8: 'incremental', 16: 'weakcb'}
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const k = GC_KINDS[e.detail?.kind] ?? 'other'
    gcMs[k] = (gcMs[k] ?? 0) + e.duration
    gcCount[k] = (gcCount[k] ?? 0) + 1
  }
}).observe({entryTypes: ['gc']})

/** us per operation of GC pause by kind between two copies of `gcMs`. */
function gcPer(before, after, ops) {
  return Object.fromEntries(Object.keys(after).map((k) => [`gcUs_${k}`, ((after[k] - (before[k] ?? 0)) * 1000) / ops]))
}

/**
 * SVC_BENCH_TIDS=1: this process's worker threads named by what they run (history worker, full-text
 * workers, pack writer). Every thread here is called "node", so each Worker the engine creates is
 * wrapped (the builtin's ESM export is swapped before the engine is imported) and the thread that
 * appears when it comes online is given the name of its job, read from its source. Threads there
 * before the engine are V8's platform workers (its GC helpers) and libuv's pool, which cannot be
 * told apart from here; any other is `other`.
 */
const tidNames = new Map()
if (process.env.SVC_BENCH_TIDS) {
  const {createRequire, syncBuiltinESMExports} = await import('node:module')
  const wt = createRequire(import.meta.url)('node:worker_threads')
  const Original = wt.Worker
  const jobOf = (source) => {
    const s = String(source)
    for (const [k, name] of [['commitScanner', 'history worker'], ['countPhraseRows', 'fts count worker'], ['pack-writer', 'pack writer'], ['gitEnv', 'fts extract'], ['documentText', 'fts text worker'], ['parser', 'sql parser'], ['fileMustExist', 'fts check']]) if (s.includes(k)) return name
    return `worker ${s.slice(0, 30).replaceAll('\n', ' ')}`
  }
  for (const tid of tasksOf(process.pid)) tidNames.set(tid, tid === process.pid ? 'event loop' : 'V8 or libuv pool')
  // libuv's pool starts at its first job (usually before this module runs): started here at the latest,
  // so no pool thread is taken for a worker's. V8's platform threads (its GC helpers) and the pool
  // cannot be told apart from here.
  await (await import('node:fs/promises')).stat('/')
  for (const tid of tasksOf(process.pid)) if (!tidNames.has(tid)) tidNames.set(tid, 'V8 or libuv pool')
  wt.Worker = class extends Original {
    constructor(source, options) {
      super(source, options)
      const name = jobOf(source)
      this.once('online', () => {
        // Two workers that came online in the same turn cannot be told apart: both are named so.
        const fresh = tasksOf(process.pid).filter((tid) => !tidNames.has(tid))
        for (const tid of fresh) tidNames.set(tid, fresh.length === 1 ? name : `${name} or another worker`)
      })
    }
  }
  syncBuiltinESMExports()
}

/** CPU seconds of each thread of `pid` by name (threads of one name summed; the main thread as `event loop`). */
function threadsCpu(pid, byTid = false) {
  const out = {}
  for (const tid of tasksOf(pid).sort((a, b) => a - b)) {
    if (byTid && !tidNames.has(tid) && pid === process.pid) tidNames.set(tid, 'other')
    const name = byTid ? `${tid - pid} ${tidNames.get(tid) ?? threadName(pid, tid)}` : tid === pid ? 'event loop' : threadName(pid, tid)
    out[name] = (out[name] ?? 0) + cpuSecondsOf(`${pid}/task/${tid}`, true)[0]
  }
  return out
}

function tasksOf(pid) {
  try {
    return readdirSync(`/proc/${pid}/task`).map(Number)
  } catch {
    return []
  }
}

function threadName(pid, tid) {
  try {
    return readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim()
  } catch {
    return '?'
  }
}

function childPidsOf(pid) {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((t) => readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number))
  } catch {
    return []
  }
}

/** Microseconds of CPU per operation by process, between two treeCpu samples (a process gone meanwhile counts in its parent). */
function cpuPer(before, after, ops) {
  const out = {}
  let total = 0
  for (const k of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const d = (after[k] ?? 0) - (before[k] ?? 0)
    // `part:` figures are shares of a process already counted (a server's threads).
    if (!k.startsWith('part:')) total += d
    out[`cpuUs_${k}`] = (d * 1e6) / ops
  }
  out.cpuUs_total = (total * 1e6) / ops
  return out
}

/** One `--only` part on the kept fixture, with the build of checkout `--build`. */
async function kept() {
  const {openEngine} = await import(new URL('plugins/svc/dist/index.js', `file://${opt('build')}/`))
  const fixture = opt('fixture')
  const ready = async (db) => {
    while (!db.details().branches.every((b) => b.index.state === 'ready')) await new Promise((res) => setTimeout(res, 50))
  }
  if (!existsSync(join(fixture, 'index'))) {
    console.error(`svc-scale: building the indexes of ${fixture} once`)
    const db = await openEngine(fixture, {})
    await ready(db)
    await db.historyCaughtUp()
    await db.close()
  }
  const n = Number(opt('docs'))
  const r = {docs: n}
  if (opt('only') === 'writes') {
    const count = Number(opt('count', 50_000))
    // The repository hard-linked (git only adds files and renames new ones in), index and WAL copied.
    const db = await openEngine(linkedCopy(fixture), opt('repack-every', undefined) ? {repackEveryCheckpoints: Number(opt('repack-every'))} : {})
    await ready(db)
    await db.historyCaughtUp()
    let next = 0
    const before = treeCpu(process.pid)
    const threadsBefore = threadsCpu(process.pid)
    threadsBefore.tids = threadsCpu(process.pid, true)
    const gcBefore = {...gcMs}
    const gcCountBefore = {...gcCount}
    // The write phase on the monotonic clock in us, the clock of a --cpu-prof profile's timestamps.
    r.monoUs = [Number(process.hrtime.bigint() / 1000n)]
    const t0 = performance.now()
    await Promise.all(Array.from({length: 32}, async () => {
      for (;;) {
        const i = next++
        if (i >= count) return
        await db.put(makeDoc(n + i, 0))
      }
    }))
    await db.flush()
    r.writesPerSec = count / ((performance.now() - t0) / 1000)
    r.monoUs.push(Number(process.hrtime.bigint() / 1000n))
    // --maint-wait S: the CPU figures also take in the background maintenance the writes started
    // (roll-up, commit-graph write: reaped into the helper's column), waiting at most S seconds for it to end.
    if (opt('maint-wait', undefined)) {
      const until = performance.now() + Number(opt('maint-wait')) * 1000
      const busy = () => ['commit-graph', 'pack-objects', 'repack', 'prune-packed'].some((g) => backgroundGit(process.pid).has(g))
      while (performance.now() < until) {
        await new Promise((res) => setTimeout(res, 3000))
        if (!busy()) break
      }
      r.maintWaitS = (performance.now() - t0) / 1000 - count / r.writesPerSec
    }
    Object.assign(r, cpuPer(before, treeCpu(process.pid), count))
    // This process's threads (the event loop, worker threads, V8's GC helpers, libuv's pool), us per write.
    for (const [k, v] of Object.entries(threadsCpu(process.pid))) r[`part:${k}`] = ((v - (threadsBefore[k] ?? 0)) * 1e6) / count
    // SVC_BENCH_TIDS=1: each thread apart, in the order created (node's first threads are V8's platform workers, then libuv's pool and the worker threads as they start).
    if (process.env.SVC_BENCH_TIDS) for (const [k, v] of Object.entries(threadsCpu(process.pid, true))) if (v - (threadsBefore.tids?.[k] ?? 0) > 0) r[`tid:${k}`] = ((v - (threadsBefore.tids?.[k] ?? 0)) * 1e6) / count
    Object.assign(r, gcPer(gcBefore, gcMs, count))
    for (const k of Object.keys(gcCount)) r[`gcCount_${k}`] = gcCount[k] - (gcCountBefore[k] ?? 0)
    const gc = process.memoryUsage()
    r.heapUsedMB = gc.heapUsed / 1048576
    r.rssMB = gc.rss / 1048576
    await db.close()
  } else {
    const reads = Number(opt('reads', 20_000))
    const db = await openEngine(linkedCopy(fixture), {})
    await ready(db)
    // --settle MS: reads start that long after the index is ready (what the open left running has finished).
    await new Promise((res) => setTimeout(res, Number(opt('settle', 0))))
    const ids = freshIds(Math.min(reads, n), n, new Set())
    const before = treeCpu(process.pid)
    const t0 = performance.now()
    const l = []
    for (const id of ids) {
      const t = performance.now()
      await db.get(id)
      l.push(performance.now() - t)
    }
    r.readsPerSec = reads / ((performance.now() - t0) / 1000)
    r.getP50 = pct(l, 50)
    r.getP99 = pct(l, 99)
    Object.assign(r, cpuPer(before, treeCpu(process.pid), reads))
    await db.close()
  }
  r.load = load()
  console.log(JSON.stringify(r))
  process.exit(0)
}

/**
 * A data directory with the fixture's documents that a run may write to: the repository
 * hard-linked (git never changes an existing file: new packs, the commit-graph and refs are new
 * files renamed into place), the index (SQLite, written in place) and the WAL copied.
 */
function linkedCopy(fixture, withIndex = true) {
  const dir = join(tempDir('svc-scale-'), 'data')
  mkdirSync(dir)
  const r = spawnSync('cp', ['-al', join(fixture, 'repo'), join(dir, 'repo')])
  if (r.status !== 0) throw new Error(`cp -al ${fixture}/repo failed: ${r.stderr}`)
  for (const d of withIndex ? ['index', 'wal'] : ['wal']) if (existsSync(join(fixture, d))) cpSync(join(fixture, d), join(dir, d), {recursive: true})
  return dir
}

/**
 * Random ids to read: mulberry32, seeded. Not svc-fixture's `rand`: its products pass 2^53 and
 * lose their low bits, so it cycles through only ~16k distinct values (fine for making documents,
 * but ids drawn from it repeat, and a repeated id is a cached read).
 */
let idSeed = 26
function idRand() {
  idSeed = (idSeed + 0x6d_2b_79_f5) | 0
  let t = Math.imul(idSeed ^ (idSeed >>> 15), 1 | idSeed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
}

/** `count` distinct random integers in [0, n), none of them in `used` (which gets them). */
function freshIds(count, n, used) {
  const out = []
  while (out.length < count) {
    const i = Math.floor(idRand() * n)
    if (used.has(i)) continue
    used.add(i)
    out.push(`items:${i}`)
  }
  return out
}

/**
 * --restart: the measured start is a restart: the same build first opens the copy, catches its
 * full-text index up and stops (SIGTERM: a clean close), as a server restarted in production.
 */
async function cleanStop(build, dir, n, t0) {
  const first = await startServer(dir, [], 'rest', join(build, 'bin', 'run.js'))
  const until = performance.now() + 120_000
  while (performance.now() < until) {
    const r = await http(first.port, 'GET', '/health').catch(() => undefined)
    if (r && JSON.parse(r.body).checks.find((c) => c.component === 'index')?.branches.every((b) => b.state === 'ready')) break
    await new Promise((r) => setTimeout(r, 250))
  }
  await first.stop()
  console.error(`  ${n} documents: first start and clean stop in ${((performance.now() - t0) / 1000).toFixed(1)} s`)
}

/** One server (build `build`, fixture of `n` documents): every phase, with latencies and CPU per read. */
async function restOne(build, fixture, n) {
  const reads = Number(opt('reads', 2000))
  let t0 = performance.now()
  const dir = linkedCopy(fixture)
  console.error(`  ${n} documents: copy ready in ${((performance.now() - t0) / 1000).toFixed(1)} s`)
  if (process.argv.includes('--restart')) await cleanStop(build, dir, n, t0)
  t0 = performance.now()
  const server = await startServer(dir, [], 'rest', join(build, 'bin', 'run.js'))
  const out = {build, docs: n, listenMs: performance.now() - t0, loadStart: load(), phases: []}
  const pid = server.child.pid
  // What ran beside the reads: sampled every 20 ms while a phase runs.
  const seen = new Set()
  const sampler = setInterval(() => backgroundGit(pid, seen), 20)
  const timeline = startTimeline(server, pid, t0 + out.listenMs)
  if (process.argv.includes('--after-graph')) {
    const until = performance.now() + 150_000
    while (backgroundGit(pid).has('commit-graph') && performance.now() < until) await new Promise((r) => setTimeout(r, 200))
    out.graphWaitMs = performance.now() - t0 - out.listenMs
    // Reaped by the server before the first figure is taken, so its CPU is not counted in a phase.
    await new Promise((r) => setTimeout(r, 1000))
    seen.clear()
  }
  // --settle MS: the reads start that long after the server listens (the full-text file check and
  // walk of the open are over by then at 1M, ~11 s; a commit-graph write may still run, and is named).
  await new Promise((r) => setTimeout(r, Number(opt('settle', 0))))
  const used = new Set()
  const path = (id) => `/api/v1/documents/${id}`
  const phase = async (name, clients, ids) => {
    console.error(`  ${n} documents: ${name}, ${clients} client(s), ${((performance.now() - t0) / 1000).toFixed(1)} s after start (load ${load()})`)
    seen.clear()
    backgroundGit(pid, seen)
    const before = treeCpu(pid, {}, pid, 'server')
    const t = performance.now()
    const lat = await drive(ids.length, clients, async (i) => {
      const r = await http(server.port, 'GET', path(ids[i]))
      // Each answer is the document asked for: a read never answers another id's bytes.
      if (r.status !== 200 || !r.body.includes(`"id": "${ids[i]}"`)) throw new Error(`GET ${ids[i]}: ${r.status} ${r.body.slice(0, 100)}`)
    })
    const wall = performance.now() - t
    backgroundGit(pid, seen)
    const cpu = cpuPer(before, treeCpu(pid, {}, pid, 'server'), ids.length)
    out.phases.push({clients, name, p50: pct(lat, 50), p99: pct(lat, 99), perSec: ids.length / (wall / 1000), beside: [...seen].sort().join('+') || '-', ...cpu})
  }
  const first = REST_CLIENTS.map(() => freshIds(reads, n, used))
  for (const [k, c] of REST_CLIENTS.entries()) await phase('after ready', c, first[k])
  // The warm pass: other ids, so the JIT, the pack's pages and the index are warm but no answer is cached.
  const warm = freshIds(Math.min(reads * 2, Math.floor(n / 10)), n, used)
  await drive(warm.length, 16, (i) => http(server.port, 'GET', path(warm[i])))
  for (const c of REST_CLIENTS) await phase('warm', c, freshIds(reads, n, used))
  for (const [k, c] of REST_CLIENTS.entries()) await phase('cached', c, first[k])
  clearInterval(sampler)
  // --linger MS: the server runs that long after the last phase, so the timeline shows how long its start-up work lasts.
  await new Promise((r) => setTimeout(r, Number(opt('linger', 0))))
  Object.assign(out, await timeline.stop())
  out.loadEnd = load()
  await server.stop()
  rmSync(dir, {force: true, recursive: true})
  return out
}

/**
 * What the server ran from the moment it listens until its last phase: every thread's and child
 * process's CPU (/proc, every 250 ms, by thread id: the event loop, worker threads such as the
 * full-text file check, V8's and libuv's helpers, git children), with the span it was busy in,
 * and when the full-text index first says `ready` (/health, polled).
 */
function startTimeline(server, pid, listenAt) {
  const threads = new Map()
  let searchReadyMs
  let polling = false
  const sample = () => {
    const at = (performance.now() - listenAt) / 1000
    const seen = [...tasksOf(pid).map((tid) => [`${tid === pid ? 'event loop' : threadName(pid, tid)}#${tid}`, cpuSecondsOf(`${pid}/task/${tid}`, true)[0]]), ...descendants(pid).map((c) => [`${gitCommand(c) ?? threadName(c, c)}#${c}`, cpuSecondsOf(c, true)[0]])]
    for (const [key, cpu] of seen) {
      const t = threads.get(key) ?? {cpu0: cpu, cpu, from: undefined, to: undefined}
      if (cpu > t.cpu + 0.02) {
        t.from ??= at
        t.to = at
      }
      t.cpu = cpu
      threads.set(key, t)
    }
    if (searchReadyMs === undefined && !polling) {
      polling = true
      http(server.port, 'GET', '/health').then((r) => {
        const idx = JSON.parse(r.body).checks.find((c) => c.component === 'index')
        if (idx?.branches.every((b) => b.state === 'ready')) searchReadyMs = performance.now() - listenAt
      }, () => {}).finally(() => (polling = false))
    }
  }
  sample()
  const timer = setInterval(sample, 250)
  return {
    async stop() {
      sample()
      clearInterval(timer)
      const busy = [...threads].filter(([, t]) => t.cpu - t.cpu0 >= 0.05).sort((a, b) => b[1].cpu - b[1].cpu0 - (a[1].cpu - a[1].cpu0))
      return {searchReadyMs, threads: busy.map(([k, t]) => `${k.replace(/#\d+$/, '')} ${(t.cpu - t.cpu0).toFixed(2)} (${t.from?.toFixed(1)}-${t.to?.toFixed(1)})`).join(', ')}
    },
  }
}

function descendants(pid) {
  return childPidsOf(pid).flatMap((c) => [c, ...descendants(c)])
}

/** `--only rest`: issue 26's REST read figure at each fixture's size, alternating sizes (and builds) per round. */
async function restParent() {
  const fixtures = String(opt('fixtures', '/tmp/bgy-fx100k:100000,/tmp/bgy-fx1m:1000000')).split(',').map((f) => {
    const [dir, n] = f.split(':')
    return {dir, n: Number(n)}
  })
  const builds = [fileURLToPath(new URL('..', import.meta.url)), ...(opt('ab', undefined) ? [opt('ab')] : [])]
  const rounds = Number(opt('rounds', 1))
  const runs = []
  const when = [process.argv.includes('--restart') ? 'a restart after a clean stop' : '', process.argv.includes('--after-graph') ? 'after the start-up commit-graph write' : '', opt('settle', undefined) ? `${opt('settle')} ms after listening` : ''].filter(Boolean).join(', ') || 'start-up work left running'
  console.log(`svc-scale --only rest: ${new Date().toISOString()}, load ${load()}, ${opt('reads', 2000)} reads per phase, ${when}`)
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? fixtures : [...fixtures].reverse()
    for (const f of order) {
      for (const build of round % 2 === 0 ? builds : [...builds].reverse()) {
        const r = await restOne(build, f.dir, f.n)
        runs.push(r)
        console.log(`round ${round + 1}, ${f.n} documents, ${build}: listening after ${r.listenMs.toFixed(0)} ms${r.graphWaitMs === undefined ? '' : `, commit-graph write ended ${r.graphWaitMs.toFixed(0)} ms later`}, load ${r.loadStart} -> ${r.loadEnd}`)
        console.log(`  search ready ${r.searchReadyMs === undefined ? 'not within the run' : `${r.searchReadyMs.toFixed(0)} ms after listening`}; start-up threads (CPU s, active from-to s after listening): ${r.threads}`)
        for (const p of r.phases) {
          const others = Object.keys(p).filter((k) => k.startsWith('cpuUs_') && !['cpuUs_total', 'cpuUs_server', 'cpuUs_part:event loop', 'cpuUs_cat-file'].includes(k) && p[k] >= 5).map((k) => `${k.slice(6).replace(/^part:/, '')} ${p[k].toFixed(0)}`)
          const loop = p['cpuUs_part:event loop'] ?? 0
          line(`  ${p.name}, ${String(p.clients).padStart(2)} client(s): p50 / p99 ms`, `${p.p50.toFixed(3)} / ${p.p99.toFixed(3)}  (${p.perSec.toFixed(0)}/s; server CPU us/read: event loop ${loop.toFixed(0)}, other threads ${((p.cpuUs_server ?? 0) - loop).toFixed(0)}, cat-file ${(p['cpuUs_cat-file'] ?? 0).toFixed(0)}${others.length ? `, ${others.join(', ')}` : ''}; beside: ${p.beside})`)
        }
      }
    }
  }
  if (process.argv.includes('--in-process')) {
    for (const f of fixtures) {
      for (const build of builds) {
        const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--fixture', f.dir, '--docs', String(f.n), '--only', 'reads', '--reads', String(opt('reads', 2000)), '--build', build], {encoding: 'utf8', maxBuffer: 1 << 24, stdio: ['ignore', 'pipe', 'inherit']})
        if (r.status !== 0) throw new Error(`in-process reads with ${build} failed (exit ${r.status})`)
        const res = JSON.parse(r.stdout.trim().split('\n').at(-1))
        line(`in-process engine db.get (no HTTP), ${f.n} documents, ${build}: p50 / p99 ms`, `${res.getP50.toFixed(3)} / ${res.getP99.toFixed(3)} (CPU us/read engine ${res.cpuUs_engine.toFixed(0)}, cat-file ${(res['cpuUs_cat-file'] ?? 0).toFixed(0)}, commit-graph ${(res['cpuUs_commit-graph'] ?? 0).toFixed(0)}; load ${res.load})`)
      }
    }
  }
  // Medians over the rounds, then the largest size against the smallest, per build and phase.
  const [small, big] = [fixtures[0].n, fixtures.at(-1).n]
  console.log(`REST GET by id, ${big} against ${small} documents (medians of ${rounds} round(s); issue 26's goal: p50 <= 1.2x):`)
  for (const build of builds) {
    for (const name of PHASES) {
      for (const clients of REST_CLIENTS) {
        const of = (n, k) => pct(runs.filter((r) => r.build === build && r.docs === n).map((r) => r.phases.find((p) => p.name === name && p.clients === clients)[k]), 50)
        const ratio = of(big, 'p50') / of(small, 'p50')
        line(`  ${builds.length > 1 ? `${build}: ` : ''}${name}, ${clients} client(s): p50`, `${of(small, 'p50').toFixed(3)} -> ${of(big, 'p50').toFixed(3)} ms = ${ratio.toFixed(2)}x ${ratio <= 1.2 ? '(goal met)' : '(goal NOT met)'}; p99 ${of(small, 'p99').toFixed(3)} -> ${of(big, 'p99').toFixed(3)} ms = ${(of(big, 'p99') / of(small, 'p99')).toFixed(2)}x; CPU us/read event loop ${of(small, 'cpuUs_part:event loop').toFixed(0)} -> ${of(big, 'cpuUs_part:event loop').toFixed(0)}, all ${of(small, 'cpuUs_total').toFixed(0)} -> ${of(big, 'cpuUs_total').toFixed(0)}`)
      }
    }
  }
  // Start-up work beside the reads is part of what is measured: said next to the ratios.
  for (const build of builds) {
    for (const f of fixtures) {
      const beside = runs.filter((r) => r.build === build && r.docs === f.n).flatMap((r) => r.phases).filter((p) => p.beside !== '-')
      const total = runs.filter((r) => r.build === build && r.docs === f.n).length * PHASES.length * REST_CLIENTS.length
      line(`  ${builds.length > 1 ? `${build}: ` : ''}${f.n} documents: phases with start-up git beside`, `${beside.length} of ${total}${beside.length ? ` (${[...new Set(beside.map((p) => p.beside))].join(', ')})` : ''}`)
    }
  }
  if (process.argv.includes('--json')) console.log(JSON.stringify(runs))
  process.exit(0)
}

/**
 * `--only search`: one server (build `build`, fixture of `n` documents), searches of
 * svc-fts-ab.mjs's kind (half one word, half two, limit 10; the engine matches the last word as
 * a prefix) by one client over loopback once a search no longer says the index is catching up,
 * then again `--warm-wait` seconds later (the index's background warm-ups done), with the
 * server's CPU per search from /proc.
 */
async function searchOne(build, fixture, n) {
  // --first-start: the copy has no index folder, so the server builds the full-text index first.
  const dir = linkedCopy(fixture, !process.argv.includes('--first-start'))
  if (process.argv.includes('--restart')) await cleanStop(build, dir, n, performance.now())
  const t0 = performance.now()
  const server = await startServer(dir, [], 'rest', join(build, 'bin', 'run.js'))
  const out = {build, docs: n, listenMs: performance.now() - t0, loadStart: load(), passes: []}
  const pid = server.child.pid
  const get = async (q) => {
    const r = await http(server.port, 'GET', `/api/v1/search?q=${encodeURIComponent(q)}&limit=10`)
    if (r.status !== 200) throw new Error(`search ${q}: ${r.status} ${r.body.slice(0, 100)}`)
    return JSON.parse(r.body)
  }
  // Caught up: a search answers without the index's progress (engine.ts search: `index`).
  const until = performance.now() + 300_000
  while ((await get('kalo')).index !== undefined && performance.now() < until) await new Promise((r) => setTimeout(r, 200))
  out.readyMs = performance.now() - t0
  // The same queries, in the same order, for every server of the run (each build, each size).
  let taken = 0
  const queries = (count) => {
    while (QUERY_BANK.length < taken + count) QUERY_BANK.push(rand() < 0.5 ? word() : `${word()} ${word()}`)
    taken += count
    return QUERY_BANK.slice(taken - count, taken)
  }
  // The JIT warmed by other queries, as svc-fts-ab.mjs does.
  for (const q of queries(50)) await get(q)
  const writesPerS = Number(opt('search-writes-per-s', 0))
  // The writes' own generator: the queries stay those of a run without writes.
  let wseed = 7
  const wrand = () => (wseed = (wseed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648
  let nextNew = n
  let written = 0
  /**
   * PUTs `writesPerS` documents a second, paced to the clock, until `stop` resolves: a durable
   * write is answered after its fsync (~20 ms here), so up to 32 are in flight at once.
   */
  const writeLoad = async (stop) => {
    let stopped = false
    void stop.then(() => (stopped = true))
    const inFlight = new Set()
    const t0 = performance.now()
    for (let k = 0; !stopped; k++) {
      const due = t0 + (k * 1000) / writesPerS
      const wait = due - performance.now()
      if (wait > 0) await new Promise((r) => setTimeout(r, wait))
      while (inFlight.size >= 32 && !stopped) await Promise.race(inFlight)
      if (stopped) break
      const j = wrand() < 0.8 ? Math.floor(wrand() * nextNew) : nextNew++
      const doc = makeDoc(j, n + k)
      const put = http(server.port, 'PUT', `/api/v1/documents/${doc.id}`, JSON.stringify(doc)).then((r) => {
        if (r.status !== 200 && r.status !== 201) throw new Error(`PUT ${doc.id}: ${r.status} ${r.body.slice(0, 100)}`)
        written++
        inFlight.delete(put)
      })
      inFlight.add(put)
    }
    await Promise.all(inFlight)
  }
  const pass = async (name, writes = false) => {
    const qs = queries(Number(opt('queries', 300)))
    let stop
    const stopped = new Promise((r) => (stop = r))
    const w0 = written
    const loader = writes ? writeLoad(stopped) : undefined
    const t0 = performance.now()
    const before = treeCpu(pid, {}, pid, 'server')
    const lat = []
    for (const q of qs) {
      const t = performance.now()
      await get(q)
      lat.push(performance.now() - t)
    }
    // The server's CPU per search includes the writes' when writes run beside (their rate is printed).
    const cpu = cpuPer(before, treeCpu(pid, {}, pid, 'server'), qs.length)
    const seconds = (performance.now() - t0) / 1000
    stop()
    await loader
    out.passes.push({name: writes ? `${name}, ${writesPerS} writes/s beside` : name, p50: pct(lat, 50), p95: pct(lat, 95), p99: pct(lat, 99), ...cpu, load: load(), ...(writes ? {writesPerS: (written - w0) / seconds} : {})})
  }
  await pass('caught up')
  if (writesPerS > 0) await pass('caught up', true)
  const wait = Number(opt('warm-wait', 20))
  const idleCpu = treeCpu(pid, {}, pid, 'server')
  await new Promise((r) => setTimeout(r, wait * 1000))
  // The server's CPU while nobody asked (its background warm-ups), in ms.
  out.idleCpuMs = cpuPer(idleCpu, treeCpu(pid, {}, pid, 'server'), 1000).cpuUs_server ?? 0
  out.rssMb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024
  await pass(`after ${wait} s`)
  if (writesPerS > 0) await pass(`after ${wait} s`, true)
  out.rssMbEnd = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024
  out.loadEnd = load()
  await server.stop()
  rmSync(dir, {force: true, recursive: true})
  return out
}

/** `--only search`: the queries of every server, made once (searchOne). */
const QUERY_BANK = []

/** `--only search`: issue 26's search figure (p95 at 1M <= 15 ms, one client), per size and build, alternating. */
async function searchParent() {
  const fixtures = String(opt('fixtures', '/tmp/bgy-fx100k:100000,/tmp/bgy-fx1m:1000000')).split(',').map((f) => {
    const [dir, n] = f.split(':')
    return {dir, n: Number(n)}
  })
  const builds = [fileURLToPath(new URL('..', import.meta.url)), ...(opt('ab', undefined) ? [opt('ab')] : [])]
  console.log(`svc-scale --only search: ${new Date().toISOString()}, load ${load()}, ${opt('queries', 300)} searches per pass, one client, limit 10`)
  const runs = []
  for (const f of fixtures) {
    for (const build of builds) {
      const r = await searchOne(build, f.dir, f.n)
      runs.push(r)
      console.log(`${f.n} documents, ${build}: listening after ${r.listenMs.toFixed(0)} ms, caught up after ${(r.readyMs / 1000).toFixed(1)} s; idle server CPU ${(r.idleCpuMs / 1000).toFixed(1)} s over the wait; RSS ${r.rssMb.toFixed(0)} -> ${r.rssMbEnd.toFixed(0)} MB; load ${r.loadStart} -> ${r.loadEnd}`)
      for (const p of r.passes) {
        const goal = f.n >= 1_000_000 ? (p.p95 <= 15 ? ' (goal p95 <= 15 ms met)' : ' (goal p95 <= 15 ms NOT met)') : ''
        // What ran beside the event loop (worker threads, git children), where it is 100 us a search or more.
        const beside = Object.keys(p).filter((k) => k.startsWith('cpuUs_') && !['cpuUs_total', 'cpuUs_server', 'cpuUs_part:event loop'].includes(k) && p[k] >= 100).map((k) => `${k.slice(6).replace(/^part:/, '')} ${p[k].toFixed(0)}`)
        line(`  ${p.name}: p50 / p95 / p99 ms`, `${p.p50.toFixed(2)} / ${p.p95.toFixed(2)} / ${p.p99.toFixed(2)}${goal}${p.writesPerS === undefined ? '' : `; writes beside ${p.writesPerS.toFixed(0)}/s`}; server CPU us/search: event loop ${(p['cpuUs_part:event loop'] ?? 0).toFixed(0)}, all ${(p.cpuUs_total ?? 0).toFixed(0)}${beside.length > 0 ? ` (${beside.join(', ')})` : ''}; load ${p.load}`)
      }
    }
  }
  if (process.argv.includes('--json')) console.log(JSON.stringify(runs))
  process.exit(0)
}

function parent() {
  const sizes = String(opt('docs', '100000,1000000')).split(',').map(Number)
  const results = []
  const writesOnly = process.argv.includes('--writes-only')
  for (const n of sizes) {
    console.error(`svc-scale: ${n} documents (load ${load()}, ${new Date().toISOString()})`)
    const nodeArgs = (process.env.SVC_BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean)
    const r = spawnSync(process.execPath, [...nodeArgs, fileURLToPath(import.meta.url), '--one', String(n), '--queries', String(opt('queries', 300)), '--reads', String(opt('reads', 2000)), '--walked', String(opt('walked', 5)), ...(writesOnly ? ['--writes-only'] : []), ...(process.argv.includes('--size') ? ['--size'] : []), ...(opt('build', undefined) ? ['--build', opt('build')] : []), ...(opt('repack-every', undefined) ? ['--repack-every', opt('repack-every')] : [])], {
      encoding: 'utf8',
      maxBuffer: 1 << 24,
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    if (r.status !== 0) {
      console.error(`svc-scale: the ${n}-document run failed (exit ${r.status})`)
      break
    }
    results.push(JSON.parse(r.stdout.trim().split('\n').at(-1)))
    if (writesOnly) line(`${n} documents: sustained writes/s`, results.at(-1).writesPerSec.toFixed(0))
    if (writesOnly && results.at(-1).repoMB !== undefined) line(`${n} documents: repository MB after compaction`, results.at(-1).repoMB.toFixed(1))
    if (!writesOnly) print(results.at(-1))
  }
  if (results.length > 1) {
    const a = results[0]
    for (const b of results.slice(1)) {
      console.log(`growth ${a.docs} -> ${b.docs} documents (ratio ${b.docs / a.docs}x the data; 1.00 = flat):`)
      for (const k of Object.keys(a)) if (k !== 'docs' && typeof a[k] === 'number' && a[k] > 0) line(`  ${k}`, `${(b[k] / a[k]).toFixed(2)}x`)
    }
  }
  if (process.argv.includes('--json')) console.log(JSON.stringify(results))
}

function print(r) {
  console.log(`${r.docs} documents (load at the end ${r.load}):`)
  line('  sustained writes/s (32 writers, until all in Git)', r.writesPerSec.toFixed(0))
  line('  repository MB after compaction', r.repoMB.toFixed(1))
  line('  open ms / index ready ms, index on disk', `${r.openMs.toFixed(0)} / ${r.readyMs.toFixed(0)}`)
  line('  current read p50 / p99 ms', `${r.getP50.toFixed(3)} / ${r.getP99.toFixed(3)}`)
  line('  search p95 ms (limit 10, documents read)', `${r.searchP95.toFixed(2)} (p50 ${r.searchP50.toFixed(2)}, totals estimated ${r.estimatedShare.toFixed(2)})`)
  line('  as-of read p50 / p99 ms', `${r.asOfP50.toFixed(2)} / ${r.asOfP99.toFixed(2)}`)
  line('  history (10 versions) p50 / p99 ms', `${r.historyP50.toFixed(2)} / ${r.historyP99.toFixed(2)}`)
  line('  walking Git instead: as-of / history p50 ms', `${r.walkedAsOfP50.toFixed(0)} / ${r.walkedHistoryP50.toFixed(0)} (indexed ${(r.walkedAsOfP50 / r.asOfP50).toFixed(0)}x / ${(r.walkedHistoryP50 / r.historyP50).toFixed(0)}x faster; ${r.walkedMismatches} answers differ)`)
  line('  history index: rebuild ms / commits/s, MB on disk', `${r.historyRebuildMs.toFixed(0)} / ${r.historyRebuildPerSec.toFixed(0)}, ${r.historyMB.toFixed(1)}`)
  line('  RSS MB after reads and searches', r.rssMB.toFixed(0))
  line('  rebuild: open ms / ready ms / docs/s', `${r.rebuildOpenMs.toFixed(0)} / ${r.rebuildReadyMs.toFixed(0)} / ${r.rebuildPerSec.toFixed(0)}`)
}

async function one(n) {
  // --build CHECKOUT: another checkout's build (the --writes-only growth A/B against main).
  const {openEngine} = await import(opt('build', undefined) ? new URL('plugins/svc/dist/index.js', `file://${opt('build')}/`) : new URL('../plugins/svc/dist/index.js', import.meta.url))
  const dir = join(tempDir('svc-scale-'), 'data')
  const queries = Number(opt('queries', 300))
  const reads = Number(opt('reads', 2000))
  const r = {docs: n}
  const timed = async (count, fn) => {
    const l = []
    for (let i = 0; i < count; i++) {
      const t = performance.now()
      await fn(i)
      l.push(performance.now() - t)
    }
    return l
  }
  const ready = async (db) => {
    for (;;) {
      const states = db.details().branches.map((b) => b.index.state)
      if (states.every((s) => s === 'ready')) return
      await new Promise((res) => setTimeout(res, 50))
    }
  }

  // 1. Writes: one commit each, sustained until everything is in Git.
  // --repack-every N: the engine's repackEveryCheckpoints (the maintenance cadence A/B, same build).
  let db = await openEngine(dir, opt('repack-every', undefined) ? {repackEveryCheckpoints: Number(opt('repack-every'))} : {})
  let next = 0
  const t0 = performance.now()
  const midTime = {at: 0}
  // Per block of 100k writes: the cumulative rate, the block's own rate and its CPU per write by
  // process (what grows along the run, and where).
  const block = {at: t0, cpu: treeCpu(process.pid), gc: {...gcMs}, threads: threadsCpu(process.pid), tids: process.env.SVC_BENCH_TIDS ? threadsCpu(process.pid, true) : undefined}
  await Promise.all(Array.from({length: 32}, async () => {
    for (;;) {
      const i = next++
      if (i >= n) return
      if (i === n >> 1) midTime.at = Date.now()
      await db.put(makeDoc(i, 0))
      if (i % 100_000 === 99_999) {
        const now = performance.now()
        const cpu = treeCpu(process.pid)
        const threads = threadsCpu(process.pid)
        // The engine's process split: its event loop and its other threads (workers, GC helpers, libuv's pool), and the loop's GC pauses.
        const split = {loop: threads['event loop'] - block.threads['event loop'], threads: Object.keys(threads).filter((k) => k !== 'event loop').reduce((a, k) => a + threads[k] - (block.threads[k] ?? 0), 0)}
        const gc = Object.entries(gcPer(block.gc, gcMs, 100_000)).map(([k, v]) => `${k.slice(5)} ${v.toFixed(0)}`).join(', ')
        const per = `${Object.entries(cpuPer(block.cpu, cpu, 100_000)).map(([k, v]) => `${k.slice(6)} ${v.toFixed(0)}`).join(', ')} (engine: loop ${((split.loop * 1e6) / 100_000).toFixed(0)}, other threads ${((split.threads * 1e6) / 100_000).toFixed(0)}; GC pauses ${gc}; heap ${(process.memoryUsage().heapUsed / 1048576).toFixed(0)} MB; monotonic us ${process.hrtime.bigint() / 1000n})`
        // Packs in the repository (kept: fast-import's own, still open): fast-import looks every new
        // object up in each one, so this count is part of its CPU per write.
        const packDir = join(dir, 'repo', 'objects', 'pack')
        const files = existsSync(packDir) ? readdirSync(packDir) : []
        const packs = `${files.filter((f) => f.endsWith('.pack')).length} (${files.filter((f) => f.endsWith('.keep')).length} kept)`
        console.error(`  ${i + 1} written (${((i + 1) / ((now - t0) / 1000)).toFixed(0)}/s; this block ${(100_000 / ((now - block.at) / 1000)).toFixed(0)}/s, CPU us per write: ${per}; packs ${packs}; load ${load()})`)
        // SVC_BENCH_TIDS=1: the engine's threads one by one (named as at tidNames), us per write in this block.
        const tids = process.env.SVC_BENCH_TIDS ? threadsCpu(process.pid, true) : undefined
        if (tids) console.error(`    threads: ${Object.entries(tids).map(([k, v]) => [k, ((v - (block.tids?.[k] ?? 0)) * 1e6) / 100_000]).filter(([, v]) => v >= 0.5).map(([k, v]) => `${k} ${v.toFixed(0)}`).join(', ')}`)
        Object.assign(block, {at: now, cpu, gc: {...gcMs}, threads, tids})
      }
    }
  }))
  await db.flush()
  r.writesPerSec = n / ((performance.now() - t0) / 1000)
  if (process.argv.includes('--writes-only')) {
    // --size: the repository after `compact`, to compare what the roll-up and checkpoint policies leave.
    if (process.argv.includes('--size')) {
      await db.compact()
      r.repoMB = Number(spawnSync('du', ['-sk', join(dir, 'repo')], {encoding: 'utf8'}).stdout.split('\t')[0]) / 1024
    }
    await db.close()
    r.load = load()
    console.log(JSON.stringify(r))
    process.exit(0)
  }
  // A second version of a few documents, after the as-of point, so as-of reads find older versions.
  await Promise.all(Array.from({length: VERSIONED}, (_, i) => db.put(makeDoc(i * Math.floor(n / VERSIONED), 1))))
  await ready(db)
  await db.compact()
  await db.close()
  r.repoMB = Number(spawnSync('du', ['-sk', join(dir, 'repo')], {encoding: 'utf8'}).stdout.split('\t')[0]) / 1024

  // 2. Restart with the index on disk: time to open (the server listens then) and to index ready.
  let t = performance.now()
  db = await openEngine(dir, {})
  r.openMs = performance.now() - t
  await ready(db)
  r.readyMs = performance.now() - t
  const ids = freshIds(Math.min(reads, n), n, new Set())
  const gets = await timed(reads, (i) => db.get(ids[i]))
  r.getP50 = pct(gets, 50)
  r.getP99 = pct(gets, 99)
  const qs = Array.from({length: queries}, () => (rand() < 0.5 ? word() : `${word()} ${word()}`))
  for (const q of qs.slice(0, 20)) await db.search(q, {limit: 10})
  let estimated = 0
  const searches = await timed(queries, async (i) => {
    if ((await db.search(qs[i], {limit: 10})).totalEstimated) estimated++
  })
  r.searchP50 = pct(searches, 50)
  r.searchP95 = pct(searches, 95)
  r.estimatedShare = estimated / queries
  const versioned = Array.from({length: VERSIONED}, (_, i) => `items:${i * Math.floor(n / VERSIONED)}`)
  const asOf = await timed(VERSIONED, (i) => db.asOf(versioned[i], {time: midTime.at}))
  r.asOfP50 = pct(asOf, 50)
  r.asOfP99 = pct(asOf, 99)
  const history = await timed(VERSIONED, (i) => db.history(versioned[i], {limit: 10}))
  r.historyP50 = pct(history, 50)
  r.historyP99 = pct(history, 99)
  r.rssMB = process.memoryUsage().rss / 1048576
  const walkedCount = Number(opt('walked', 5))
  const sample = versioned.slice(0, walkedCount)
  const indexedAnswers = []
  for (const id of sample) indexedAnswers.push([await db.asOf(id, {time: midTime.at}), await db.history(id, {limit: 10})])
  await db.close()
  r.historyMB = Number(spawnSync('du', ['-sk', join(dir, 'index', '.history')], {encoding: 'utf8'}).stdout.split('\t')[0]) / 1024

  // 2b. The same reads walking Git (history index off), on the same data: the figures before the index.
  db = await openEngine(dir, {fullText: false, historyIndex: false})
  const walkedAnswers = []
  const walkedAsOf = await timed(sample.length, async (i) => walkedAnswers.push([await db.asOf(sample[i], {time: midTime.at})]))
  const walkedHistory = await timed(sample.length, async (i) => walkedAnswers[i].push(await db.history(sample[i], {limit: 10})))
  r.walkedAsOfP50 = pct(walkedAsOf, 50)
  r.walkedHistoryP50 = pct(walkedHistory, 50)
  r.walkedMismatches = sample.filter((_, i) => JSON.stringify(walkedAnswers[i]) !== JSON.stringify(indexedAnswers[i])).length
  await db.close()

  // 2c. The history index deleted: rebuilt from Git in one pass.
  rmSync(join(dir, 'index', '.history'), {force: true, recursive: true})
  db = await openEngine(dir, {fullText: false})
  t = performance.now()
  await db.historyCaughtUp()
  r.historyRebuildMs = performance.now() - t
  r.historyRebuildPerSec = (n + VERSIONED) / (r.historyRebuildMs / 1000)
  await db.close()

  // 3. The index deleted: open, and the rebuild from the repository.
  rmSync(join(dir, 'index'), {force: true, recursive: true})
  t = performance.now()
  db = await openEngine(dir, {})
  r.rebuildOpenMs = performance.now() - t
  await ready(db)
  r.rebuildReadyMs = performance.now() - t
  r.rebuildPerSec = n / ((r.rebuildReadyMs - r.rebuildOpenMs) / 1000)
  await db.close()
  r.load = load()
  console.log(JSON.stringify(r))
  process.exit(0)
}

// Last, so that every module-level binding above exists when the part it runs uses it.
// A run stopped by `timeout` still stops its server and removes its copies (svc-common's exit handler).
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130))

if (opt('one', undefined) !== undefined) await one(Number(opt('one')))
else if (opt('only', undefined) === 'rest') await restParent()
else if (opt('only', undefined) === 'search') await searchParent()
else if (opt('only', undefined) !== undefined && opt('build', undefined) !== undefined) await kept()
else if (opt('only', undefined) !== undefined) keptParent()
else parent()
