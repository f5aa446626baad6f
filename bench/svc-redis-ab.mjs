#!/usr/bin/env node
// Same-minute A/B of two builds' Redis protocol against redis-server (issue 26): both builds'
// `svc server` and a redis-server run together, each gets 20,000 SETs, then every round runs
// `redis-benchmark -c 50 -r 100000 -t <test> -P <p> -n <n>` on the three in turn (the two builds
// alternate which goes first) and prints each one's server CPU per request (/proc/<pid>/stat) and
// rate; medians at the end. For SET the redis-server uses `appendfsync always`.
// Usage: node bench/svc-redis-ab.mjs <get|set> <pipeline> <n> <rounds> [--a /work/main/bin/run.js] [--b bin/run.js]
// Needs the built CLIs, redis-server and redis-benchmark.
import {spawn, spawnSync} from 'node:child_process'
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {freePort} from './svc-common.mjs'
const [test = 'get', P = '16', nArg = '500000', roundsArg = '6'] = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && !all[i - 1]?.startsWith('--'))
const flag = (name, fallback) => (process.argv.includes(`--${name}`) ? process.argv[process.argv.indexOf(`--${name}`) + 1] : fallback)
const builds = {a: flag('a', '/work/main/bin/run.js'), b: flag('b', fileURLToPath(new URL('../bin/run.js', import.meta.url)))}
const N = Number(nArg), ROUNDS = Number(roundsArg)
const stat = (pid) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ').map(Number)
const ownMs = (pid) => (stat(pid)[11] + stat(pid)[12]) * 10
const dirs = []
async function svc(runJs) {
  const dir = mkdtempSync(join(tmpdir(), 'rp16ab-')); dirs.push(dir)
  const child = spawn(process.execPath, [runJs, 'svc', 'server', '--format', 'json', '--data-dir', dir, '--redis-port', '0', '--disable-rest', '--disable-sql', '--log-level', 'warn'], {stdio: ['ignore', 'pipe', 'inherit']})
  const ready = await new Promise((resolve) => { let out = ''; child.stdout.on('data', (d) => { out += d; const nl = out.indexOf('\n'); if (nl !== -1) resolve(JSON.parse(out.slice(0, nl))) }) })
  return {child, pid: child.pid, port: ready.redis?.port ?? ready.redis}
}
async function redis(durable) {
  const dir = mkdtempSync(join(tmpdir(), 'rp16r-')); dirs.push(dir)
  const port = await freePort()
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...(durable ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']), '--dir', dir], {stdio: 'ignore'})
  for (let i = 0; i < 50; i++) { if (spawnSync('redis-cli', ['-p', String(port), 'PING'], {encoding: 'utf8'}).stdout.trim() === 'PONG') break; spawnSync('sleep', ['0.1']) }
  return {child, pid: child.pid, port}
}
const bench = (s, t, n, p) => {
  const c0 = ownMs(s.pid)
  const r = spawnSync('redis-benchmark', ['-p', String(s.port), '-t', t, '-n', String(n), '-c', '50', '-r', '100000', '-P', String(p), '--csv'], {encoding: 'utf8'})
  return {rate: Number(/"([A-Z]+)","([\d.]+)"/.exec(r.stdout)?.[2]), us: ((ownMs(s.pid) - c0) * 1000) / n}
}
const servers = {a: await svc(builds.a), b: await svc(builds.b), redis: await redis(test === 'set')}
for (const s of Object.values(servers)) bench(s, 'set', 20000, 1)
await new Promise((r) => setTimeout(r, 5000))
const res = {a: [], b: [], redis: []}
for (let i = 0; i < ROUNDS; i++) {
  const order = i % 2 ? ['b', 'a', 'redis'] : ['a', 'b', 'redis']
  const row = {}
  for (const k of order) { row[k] = bench(servers[k], test, N, P); res[k].push(row[k]) }
  console.log(JSON.stringify({i, load: readFileSync('/proc/loadavg', 'utf8').split(' ')[0], a: row.a, b: row.b, redis: row.redis, ratioA: +(row.a.rate / row.redis.rate).toFixed(2), ratioB: +(row.b.rate / row.redis.rate).toFixed(2)}))
}
const med = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)] }
for (const k of ['a', 'b', 'redis']) console.log(k, 'median us/op', med(res[k].map((r) => r.us)).toFixed(2), 'median rate', Math.round(med(res[k].map((r) => r.rate))), 'median ratio to redis', k === 'redis' ? '' : med(res[k].map((r, i) => r.rate / res.redis[i].rate)).toFixed(2))
for (const s of Object.values(servers)) s.child.kill('SIGTERM')
await new Promise((r) => setTimeout(r, 1000))
for (const d of dirs) rmSync(d, {force: true, recursive: true})
