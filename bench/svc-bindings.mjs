#!/usr/bin/env node
// The Python binding through the embedded protocol (`toolkit svc embed` as a child, pipelined
// requests) against the Node API in-process, same documents, same run.
//   gets: 10,000 reads by id, both sides reading what a first pass cached; three untimed passes
//         of each side (--warm), then five timed passes of each side, taken in turn (Node, Python,
//         Node, ...) so a busy machine weighs on both alike; the medians' ratio, Python over the
//         Node API (goal >= 0.5x), and the CPU time each side spent per timed get
//   puts: 10,000 durable writes, each its own commit; Python's rate over the engine's durable
//         write rate with 32 concurrent writers (goal >= 0.8x)
// Usage: node bench/svc-bindings.mjs [--docs 10000] [--warm 3]
import {spawn} from 'node:child_process'
import {readFileSync} from 'node:fs'
import {createInterface} from 'node:readline'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {arg, line, RUN_JS, tempDir} from './svc-common.mjs'

const N = arg('docs', 10_000)
const ROUNDS = 5
const WARM = arg('warm', 3)
const {openEngine} = await import(new URL('../plugins/svc/dist/index.js', import.meta.url))
const pad = 'x'.repeat(150)
const docFor = (n) => ({id: `bench:${n}`, n, text: `doc ${n} ${pad}`})

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1]
/** CPU seconds spent in the timed get passes: the Node API's process, the Python process, the embed child (10 ms ticks). */
const cpu = {child: 0, node: 0, python: 0}

async function nodeApi() {
  const db = await openEngine(join(tempDir(), 'd'), {fullText: true})
  let next = 0
  const t0 = performance.now()
  await Promise.all(Array.from({length: 32}, async () => {
    for (let i = next++; i < N; i = next++) await db.put(docFor(i))
  }))
  const puts = N / ((performance.now() - t0) / 1000)
  for (let i = 0; i < N; i++) await db.get(`bench:${i}`)
  const getPass = async () => {
    const c1 = process.cpuUsage()
    const t1 = performance.now()
    for (let i = 0; i < N; i++) await db.get(`bench:${i}`)
    const rate = N / ((performance.now() - t1) / 1000)
    const c = process.cpuUsage(c1)
    cpu.node += (c.user + c.system) / 1e6
    return rate
  }
  return {close: () => db.close(), getPass, puts}
}

// The Python side writes, reads once, then times one pass of gets each time it reads a line.
const PY = `
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
import toolkit_svc
n = int(sys.argv[2]); pad = "x" * 150
with toolkit_svc.open(sys.argv[3]) as db:
    t0 = time.perf_counter()
    with db.pipeline() as p:
        for i in range(n):
            p.put(f"bench:{i}", {"n": i, "text": f"doc {i} {pad}"})
    puts = n / (time.perf_counter() - t0)
    with db.pipeline() as p:
        for i in range(n):
            p.get(f"bench:{i}")
    print(json.dumps({"puts": puts}), flush=True)
    child = f"/proc/{db._transport.pid}/stat"
    def child_cpu():
        try:
            with open(child) as f:
                fields = f.read().rsplit(") ", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            return 0.0
    for _ in sys.stdin:
        k1 = child_cpu()
        c1 = time.process_time()
        t1 = time.perf_counter()
        with db.pipeline() as p:
            futures = [p.get(f"bench:{i}") for i in range(n)]
        # Every document is read back, as the Node side's gets return theirs: decoding is part of a get.
        docs = [f.result() for f in futures]
        gets = n / (time.perf_counter() - t1)
        cpu = time.process_time() - c1
        assert docs[-1]["n"] == n - 1
        print(json.dumps({"gets": gets, "cpu": cpu, "child": child_cpu() - k1}), flush=True)
`

/** CPU ticks (user + system) of a process and its live descendants; 0 where /proc is missing. */
function treeTicks(pid) {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    let ticks = Number(f[11]) + Number(f[12])
    for (const c of readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean)) ticks += treeTicks(c)
    return ticks
  } catch {
    return 0
  }
}

/** Waits until the process trees use at most 2% of a core over two half-second windows in a row (at most 30 s). */
async function quiet(pids) {
  const ticks = () => pids.reduce((sum, pid) => sum + treeTicks(pid), 0)
  const end = Date.now() + 30_000
  for (let still = 0; still < 2 && Date.now() < end; ) {
    const before = ticks()
    await new Promise((resolve) => setTimeout(resolve, 500))
    still = ticks() - before <= 1 ? still + 1 : 0
  }
}

function python() {
  const child = spawn('python3', ['-c', PY, fileURLToPath(new URL('../bindings/python', import.meta.url)), String(N), join(tempDir(), 'py')], {
    env: {...process.env, TOOLKIT_BIN: RUN_JS},
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  const lines = createInterface({input: child.stdout})[Symbol.asyncIterator]()
  const read = async () => {
    const {done, value} = await lines.next()
    if (done) throw new Error('python binding failed (see its error above)')
    return JSON.parse(value)
  }
  return {
    close: () => new Promise((resolve) => {
      child.once('close', resolve)
      child.stdin.end()
    }),
    async getPass() {
      child.stdin.write('\n')
      const r = await read()
      cpu.python += r.cpu
      cpu.child += r.child
      return r.gets
    },
    pid: child.pid,
    read,
  }
}

const node = await nodeApi()
const py = python()
const {puts: pyPuts} = await py.read()
// Right after 10,000 puts both engines are still writing them into Git for several seconds (about a
// core's worth for 5 s here: the checkpoint's git processes, in the child for Python, beside this
// process for the Node API), which made the first timed passes measure that background work rather
// than reads. So the gets start once both process trees are quiet, after untimed passes of each
// side (taken in turn like the timed ones) have warmed both JITs.
await quiet([process.pid, py.pid])
for (let r = 0; r < WARM; r++) {
  await node.getPass()
  await py.getPass()
}
const nodeGets = []
const pyGets = []
Object.assign(cpu, {child: 0, node: 0, python: 0})
for (let r = 0; r < ROUNDS; r++) {
  nodeGets.push(await node.getPass())
  pyGets.push(await py.getPass())
}
await py.close()
await node.close()
const [ng, pg] = [median(nodeGets), median(pyGets)]
line('Node API gets/s (in-process, median of 5)', Math.round(ng))
line('Python embedded gets/s (pipelined, median of 5)', Math.round(pg))
line('  ratio (goal >= 0.5x)', (pg / ng).toFixed(2) + 'x')
line('  ratio per round', nodeGets.map((x, i) => (pyGets[i] / x).toFixed(2)).join(' '))
if (process.env.BENCH_VERBOSE) console.log(nodeGets.map(Math.round), pyGets.map(Math.round))
// A shared machine moves the rates a lot; the CPU each side spends per get moves much less.
const us = (seconds) => ((seconds / (ROUNDS * N)) * 1e6).toFixed(2)
line('  CPU per get, us: Node API / Python + embed child', `${us(cpu.node)} / ${us(cpu.python)} + ${us(cpu.child)}`)
line('engine durable puts/s (32 writers)', Math.round(node.puts))
line('Python embedded puts/s (pipelined)', Math.round(pyPuts))
line('  ratio (goal >= 0.8x)', (pyPuts / node.puts).toFixed(2) + 'x')
