#!/usr/bin/env node
// The Python binding through the embedded protocol (`toolkit svc embed` as a child, pipelined
// requests) against the Node API in-process, same documents, same run.
//   gets: 10,000 reads by id, timed on a second pass so both sides read what the first pass cached; Python's rate over the Node API's (goal >= 0.5x)
//   puts: 10,000 durable writes, each its own commit; Python's rate over the engine's durable
//         write rate with 32 concurrent writers (goal >= 0.8x)
// Usage: node bench/svc-bindings.mjs [--docs 10000]
import {spawnSync} from 'node:child_process'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {arg, line, RUN_JS, tempDir} from './svc-common.mjs'

const N = arg('docs', 10_000)
const {openEngine} = await import(new URL('../plugins/svc/dist/index.js', import.meta.url))
const pad = 'x'.repeat(150)
const docFor = (n) => ({id: `bench:${n}`, n, text: `doc ${n} ${pad}`})

async function nodeApi() {
  const db = await openEngine(join(tempDir(), 'd'), {fullText: true})
  let next = 0
  const t0 = performance.now()
  await Promise.all(Array.from({length: 32}, async () => {
    for (let i = next++; i < N; i = next++) await db.put(docFor(i))
  }))
  const puts = N / ((performance.now() - t0) / 1000)
  for (let i = 0; i < N; i++) await db.get(`bench:${i}`)
  const t1 = performance.now()
  for (let i = 0; i < N; i++) await db.get(`bench:${i}`)
  const gets = N / ((performance.now() - t1) / 1000)
  await db.close()
  return {gets, puts}
}

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
    t1 = time.perf_counter()
    with db.pipeline() as p:
        futures = [p.get(f"bench:{i}") for i in range(n)]
    # Every document is read back, as the Node side's gets return theirs: decoding is part of a get.
    docs = [f.result() for f in futures]
    gets = n / (time.perf_counter() - t1)
    assert docs[-1]["n"] == n - 1
print(json.dumps({"gets": gets, "puts": puts}))
`

function python() {
  const r = spawnSync('python3', ['-c', PY, fileURLToPath(new URL('../bindings/python', import.meta.url)), String(N), join(tempDir(), 'py')], {
    encoding: 'utf8',
    env: {...process.env, TOOLKIT_BIN: RUN_JS},
  })
  if (r.status !== 0) throw new Error(`python binding failed: ${r.stderr}`)
  return JSON.parse(r.stdout)
}

const node = await nodeApi()
const py = python()
line('Node API gets/s (in-process)', Math.round(node.gets))
line('Python embedded gets/s (pipelined)', Math.round(py.gets))
line('  ratio (goal >= 0.5x)', (py.gets / node.gets).toFixed(2) + 'x')
line('engine durable puts/s (32 writers)', Math.round(node.puts))
line('Python embedded puts/s (pipelined)', Math.round(py.puts))
line('  ratio (goal >= 0.8x)', (py.puts / node.puts).toFixed(2) + 'x')
