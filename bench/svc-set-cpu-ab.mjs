#!/usr/bin/env node
// Same-minute A/B of two builds' server CPU per durable Redis SET (issues 24, 26): each build's
// `svc server` in turn takes `redis-benchmark -t set -c 50 -r 100000` (2,000 warm-up SETs, 3 s
// for the index to settle, then N measured), and the server process's own CPU (utime + stime from
// /proc/<pid>/stat) is divided by N; the CPU of its git helper process and that helper's git
// children is printed apart (in the other build those git commands are the server's children).
// The rate depends on the machine's load; CPU per SET much less, but compare runs of similar rate
// (a slower run groups fewer writes per fsync). The load average is printed with each run.
// Usage: node bench/svc-set-cpu-ab.mjs [--n 10000] [--order a,b,a,b] [--a /work/main/bin/run.js]
//        [--b bin/run.js]   PROF=1 writes a --cpu-prof of each server to /tmp/svc-set-prof-<a|b>-<i>.
// Needs the built CLI (npm run build) and redis-benchmark.
import {spawn, spawnSync} from 'node:child_process'
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {arg} from './svc-common.mjs'

const N = arg('n', 10_000)
const flag = (name, fallback) => (process.argv.includes(`--${name}`) ? process.argv[process.argv.indexOf(`--${name}`) + 1] : fallback)
const builds = {a: flag('a', '/work/main/bin/run.js'), b: flag('b', fileURLToPath(new URL('../bin/run.js', import.meta.url)))}
const stat = (pid) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ').map(Number)
const ownMs = (pid) => (stat(pid)[11] + stat(pid)[12]) * 10
// A helper's own CPU and that of its finished children (git).
const treeMs = (pid) => {
  try {
    const f = stat(pid)
    return (f[11] + f[12] + f[13] + f[14]) * 10
  } catch {
    return 0
  }
}
const helpers = (pid) => {
  let kids = []
  try {
    kids = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    // the server is gone: no helper
  }
  return kids.filter((k) => {
    try {
      return readFileSync(`/proc/${k}/cmdline`, 'utf8').startsWith(process.execPath)
    } catch {
      return false
    }
  })
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const bench = (port, n) => spawnSync('redis-benchmark', ['-p', String(port), '-t', 'set', '-n', String(n), '-c', '50', '-r', '100000', '-q'], {encoding: 'utf8'})

async function one(name, i) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-set-ab-'))
  const prof = process.env.PROF ? ['--cpu-prof', `--cpu-prof-dir=/tmp/svc-set-prof-${name}-${i}`] : []
  const child = spawn(process.execPath, [...prof, builds[name], 'svc', 'server', '--format', 'json', '--data-dir', dir, '--http-port', '0', '--redis-port', '0', '--pg-port', '0', '--log-level', 'warn'], {stdio: ['ignore', 'pipe', 'inherit']})
  const ready = await new Promise((resolve, reject) => {
    let out = ''
    child.stdout.on('data', (d) => {
      out += d
      const nl = out.indexOf('\n')
      if (nl !== -1) resolve(JSON.parse(out.slice(0, nl)))
    })
    child.once('exit', (code) => reject(new Error(`server exited ${code}`)))
  })
  const port = ready.redis?.port ?? ready.redis
  bench(port, 2000)
  await sleep(3000)
  const h0 = helpers(child.pid).reduce((a, k) => a + treeMs(k), 0)
  const c0 = ownMs(child.pid)
  const r = bench(port, N)
  // Let the index and the history catch-up finish what the run queued.
  await sleep(2500)
  const c1 = ownMs(child.pid)
  const h1 = helpers(child.pid).reduce((a, k) => a + treeMs(k), 0)
  child.kill('SIGTERM')
  await new Promise((r) => child.once('exit', r))
  rmSync(dir, {force: true, recursive: true})
  return {build: name, helperUsPerSet: Math.round(((h1 - h0) * 1000) / N), load: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '), rate: Number(/SET: ([\d.]+)/.exec(r.stdout)?.[1] ?? 0), serverUsPerSet: Math.round(((c1 - c0) * 1000) / N)}
}

const order = flag('order', 'a,b,a,b').split(',')
for (const [i, name] of order.entries()) console.log(JSON.stringify(await one(name, i)))
