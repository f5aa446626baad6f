// The full-text index rebuilt from nothing (issue 26: >= 20,000 documents/s): the index directory
// of a 100k-document data directory (bench/svc-fixture.mjs) is deleted, `openEngine` opens it, and
// the time from open to every branch's index `ready` gives the rate. Also prints the process's CPU
// seconds for the build (the worker thread's included; not git's), steadier than wall time on a
// shared machine. `--compare DIST` runs another build of the plugin (a copy of an older
// plugins/svc/dist kept under plugins/svc/, e.g. plugins/svc/dist-old, so it finds the same
// node_modules; never committed) on the same data, interleaved, for a same-run ratio.
// `--data-dir D` reuses a data directory made by an earlier run instead of building one.
// Usage: npm run build -w plugins/svc && node bench/svc-rebuild.mjs [--docs 100000] [--runs 2] [--compare plugins/svc/dist-old] [--data-dir D]
import {spawnSync} from 'node:child_process'
import {writeFileSync} from 'node:fs'
import {loadavg} from 'node:os'
import {join, resolve} from 'node:path'
import {fileURLToPath} from 'node:url'

import {arg, tempDir} from './svc-common.mjs'
import {buildDataDir} from './svc-fixture.mjs'

const docs = arg('docs', 100_000)
const runs = arg('runs', 2)
const ci = process.argv.indexOf('--compare')
const compare = ci === -1 ? undefined : resolve(process.argv[ci + 1])
const current = fileURLToPath(new URL('../plugins/svc/dist', import.meta.url))

const di = process.argv.indexOf('--data-dir')
const data = di === -1 ? join(tempDir('svc-rebuild-bench-'), 'data') : resolve(process.argv[di + 1])
if (di === -1) {
  console.log(`building a ${docs}-document data directory ...`)
  await buildDataDir(data, {commits: docs, docs})
}

// Each build in its own process: a fresh heap and module graph, as at a server's start.
const child = `
const [dist, dir] = process.argv.slice(2)
const {rmSync} = await import('node:fs')
const {join} = await import('node:path')
const {openEngine} = await import(join(dist, 'engine/index.js'))
rmSync(join(dir, 'index'), {force: true, recursive: true})
const t = performance.now()
const db = await openEngine(dir, {})
const open = performance.now() - t
const c0 = process.cpuUsage()
while (!db.details().branches.every((b) => b.index.state === 'ready')) await new Promise((r) => setTimeout(r, 10))
const build = performance.now() - t - open
const cpu = process.cpuUsage(c0)
const n = db.details().branches.reduce((s, b) => s + b.index.documents, 0)
await db.close()
console.log(JSON.stringify({build, cpu: (cpu.user + cpu.system) / 1000, n, open}))
process.exit(0)
`
const childFile = join(tempDir('svc-rebuild-child-'), 'build.mjs')
writeFileSync(childFile, child)
function once(dist) {
  const r = spawnSync(process.execPath, [childFile, dist, data], {encoding: 'utf8', maxBuffer: 1 << 26})
  if (r.status !== 0) throw new Error(`rebuild with ${dist} failed: ${r.stderr}`)
  return JSON.parse(r.stdout.trim().split('\n').at(-1))
}

const load = () => loadavg().map((x) => x.toFixed(2)).join(' ')
console.log(`load at start: ${load()}`)
const rows = []
for (let i = 0; i < runs; i++) {
  for (const [label, dist] of [['this build', current], ...(compare ? [['compared', compare]] : [])]) {
    const r = once(dist)
    rows.push({label, ...r})
    console.log(`${label}: open ${(r.open / 1000).toFixed(2)} s, build ${(r.build / 1000).toFixed(2)} s = ${Math.round(r.n / (r.build / 1000))} docs/s (${r.n} documents), ${(r.cpu / 1000).toFixed(2)} CPU s = ${Math.round(r.n / (r.cpu / 1000))} docs per CPU s; load ${load()}`)
  }
}
if (compare) {
  const sum = (label, k) => rows.filter((r) => r.label === label).reduce((s, r) => s + r[k], 0)
  console.log(`same-run ratio, this build / compared: wall ${(sum('compared', 'build') / sum('this build', 'build')).toFixed(2)}x, CPU ${(sum('compared', 'cpu') / sum('this build', 'cpu')).toFixed(2)}x`)
}
