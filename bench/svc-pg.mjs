#!/usr/bin/env node
// pgbench -S style point selects by id (8 clients) against `toolkit svc server`'s PostgreSQL
// protocol and against a real PostgreSQL started here in a temporary directory, same run, same
// rows, simple, extended and prepared query protocols. Beside the rates (which depend on what else
// runs on the machine) it prints the server CPU per query of each: svc's server process, and
// PostgreSQL's postmaster with the backends it has reaped (/proc/<pid>/stat, Linux).
// Usage: node bench/svc-pg.mjs [--rows 10000] [--seconds 10] [--clients 8] [--modes simple,extended,prepared]
//        [--ab DIR [--rounds 4]]: a same-minute A/B of another build (DIR, e.g. /work/main) and this one,
//        both servers loaded alike, each round running the two builds (alternating which goes first)
//        and PostgreSQL in turn; CPU per query to 0.1 us, medians at the end.
// Needs the built plugin (npm run build -w plugins/svc) and PostgreSQL 15 server binaries.
import {execFileSync, spawnSync} from 'node:child_process'
import {chmodSync, chownSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {arg, cpuSeconds, freePort, line, startServer, tempDir} from './svc-common.mjs'

const ROWS = arg('rows', 10_000)
const SECONDS = arg('seconds', 10)
const CLIENTS = arg('clients', 8)
const PGBIN = process.env.PGBIN ?? '/usr/lib/postgresql/15/bin'
const PASSWORD = 'svc'
const ai = process.argv.indexOf('--ab')
const AB = ai === -1 ? undefined : process.argv[ai + 1]
const ROUNDS = arg('rounds', 4)
const mi = process.argv.indexOf('--modes')
const MODES = mi === -1 ? ['simple', 'extended', 'prepared'] : process.argv[mi + 1].split(',')

function psql(port, user, sql) {
  execFileSync('psql', ['-h', '127.0.0.1', '-p', String(port), '-U', user, '-d', user === 'svc' ? 'svc' : 'postgres', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-c', sql], {
    env: {...process.env, PGPASSWORD: PASSWORD},
    stdio: ['ignore', 'ignore', 'inherit'],
  })
}

/** PostgreSQL refuses to run as root: run it as the `postgres` system user when we are root. */
async function startPostgres() {
  const dir = tempDir('pg-peer-')
  const port = await freePort()
  const asRoot = process.getuid?.() === 0
  chmodSync(dir, 0o777)
  if (asRoot) chownSync(dir, Number(execFileSync('id', ['-u', 'postgres']).toString().trim()), -1)
  const sh = (cmd) => (asRoot ? spawnSync('su', ['postgres', '-c', cmd], {stdio: 'inherit'}) : spawnSync('sh', ['-c', cmd], {stdio: 'inherit'}))
  sh(`${PGBIN}/initdb -D ${dir}/data -A trust -U postgres >/dev/null`)
  sh(`${PGBIN}/pg_ctl -D ${dir}/data -o "-p ${port} -k ${dir} -c listen_addresses=127.0.0.1" -l ${dir}/log -w start >/dev/null`)
  const pid = Number(readFileSync(join(dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0])
  return {pid, port, stop: () => sh(`${PGBIN}/pg_ctl -D ${dir}/data -m fast -w stop >/dev/null`)}
}

function startSvc(runJs) {
  return startServer(join(tempDir(), 'data'), [], 'pg', runJs)
}

function load(port, user) {
  psql(port, user, 'CREATE TABLE accounts (id int PRIMARY KEY, abalance int, filler text)')
  for (let start = 1; start <= ROWS; start += 1000) {
    const values = []
    for (let i = start; i < Math.min(start + 1000, ROWS + 1); i++) values.push(`(${i}, ${i % 1000}, 'filler ${i}')`)
    psql(port, user, `INSERT INTO accounts (id, abalance, filler) VALUES ${values.join(', ')}`)
  }
}

const script = join(tempDir(), 'select.sql')
writeFileSync(script, `\\set aid random(1, ${ROWS})\nSELECT abalance FROM accounts WHERE id = :aid;\n`)

/** {tps, cpuUs}: the rate, and CPU microseconds of `pid` (with its reaped children) per transaction. */
async function pgbench(port, user, mode, pid, seconds = SECONDS) {
  const cpu0 = cpuSeconds(pid)
  const r = spawnSync('pgbench', ['-h', '127.0.0.1', '-p', String(port), '-U', user, '-n', '-f', script, '-c', String(CLIENTS), '-j', '2', '-T', String(seconds), '-M', mode, user === 'svc' ? 'svc' : 'postgres'], {
    encoding: 'utf8',
    env: {...process.env, PGPASSWORD: PASSWORD},
  })
  const m = /tps = ([\d.]+) \(without initial connection time\)/.exec(r.stdout)
  const failed = /number of failed transactions: (\d+)/.exec(r.stdout)
  if (!m) throw new Error(`pgbench printed no figure:\n${r.stdout}\n${r.stderr}`)
  if (failed && Number(failed[1]) > 0) throw new Error(`pgbench saw ${failed[1]} failed transactions:\n${r.stdout}`)
  const n = Number(/number of transactions actually processed: (\d+)/.exec(r.stdout)[1])
  // PostgreSQL's backends exit as pgbench disconnects; their CPU counts once the postmaster reaps them.
  await new Promise((res) => setTimeout(res, 300))
  return {cpuUs: ((cpuSeconds(pid) - cpu0) * 1e6) / n, tps: Number(m[1])}
}

if (AB !== undefined) {
  await abRounds()
  process.exit(0)
}

/** `--ab`: the other build (a) and this one (b) against the same PostgreSQL, rounds alternating. */
async function abRounds() {
  const peer = await startPostgres()
  const a = await startSvc(join(AB, 'bin', 'run.js'))
  const b = await startSvc()
  const med = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]
  const out = {}
  try {
    load(peer.port, 'postgres')
    load(a.port, 'svc')
    load(b.port, 'svc')
    for (const s of [a, b]) await pgbench(s.port, 'svc', 'simple', s.child.pid, 1)
    await pgbench(peer.port, 'postgres', 'simple', peer.pid, 1)
    for (let round = 0; round < ROUNDS; round++) {
      for (const mode of MODES) {
        const r = {}
        for (const k of round % 2 === 0 ? ['a', 'b'] : ['b', 'a']) r[k] = await pgbench((k === 'a' ? a : b).port, 'svc', mode, (k === 'a' ? a : b).child.pid)
        r.peer = await pgbench(peer.port, 'postgres', mode, peer.pid)
        const lo = readFileSync('/proc/loadavg', 'utf8').split(' ')[0]
        console.log(`round ${round + 1} ${mode} (load ${lo}): a ${r.a.cpuUs.toFixed(1)} us ${(r.a.tps / r.peer.tps).toFixed(2)}x, b ${r.b.cpuUs.toFixed(1)} us ${(r.b.tps / r.peer.tps).toFixed(2)}x, PostgreSQL ${r.peer.cpuUs.toFixed(1)} us ${Math.round(r.peer.tps)} tps`)
        ;(out[mode] ??= []).push(r)
      }
    }
  } finally {
    await a.stop()
    await b.stop()
    peer.stop()
  }
  console.log(`a = ${AB}, b = this build; pgbench -c ${CLIENTS} -j 2 -T ${SECONDS} over ${ROWS} rows, medians of ${ROUNDS} rounds`)
  for (const [mode, rs] of Object.entries(out)) {
    const cheaper = rs.filter((r) => r.b.cpuUs < r.a.cpuUs).length
    line(`-M ${mode}: CPU per query a / b / PostgreSQL (us)`, `${med(rs.map((r) => r.a.cpuUs)).toFixed(1)} / ${med(rs.map((r) => r.b.cpuUs)).toFixed(1)} / ${med(rs.map((r) => r.peer.cpuUs)).toFixed(1)}; b cheaper in ${cheaper} of ${rs.length}`)
    line(`-M ${mode}: tps / PostgreSQL's, a / b`, `${med(rs.map((r) => r.a.tps / r.peer.tps)).toFixed(2)}x / ${med(rs.map((r) => r.b.tps / r.peer.tps)).toFixed(2)}x`)
  }
}

const peer = await startPostgres()
const svc = await startSvc()
const results = []
try {
  load(peer.port, 'postgres')
  load(svc.port, 'svc')
  // One untimed second each first: right after the load svc is still putting the rows into Git
  // and its indexes, and the first mode measured would pay for it alone.
  await pgbench(svc.port, 'svc', 'simple', svc.child.pid, 1)
  await pgbench(peer.port, 'postgres', 'simple', peer.pid, 1)
  for (const mode of MODES) {
    const ours = await pgbench(svc.port, 'svc', mode, svc.child.pid)
    const theirs = await pgbench(peer.port, 'postgres', mode, peer.pid)
    results.push({mode, ours, theirs})
  }
} finally {
  await svc.stop()
  peer.stop()
}
console.log(`pgbench -n -c ${CLIENTS} -j 2 -T ${SECONDS}, SELECT abalance FROM accounts WHERE id = :aid over ${ROWS} rows; peer: PostgreSQL ${/\d+\.\d+/.exec(execFileSync(join(PGBIN, 'postgres'), ['--version']).toString())?.[0]}`)
for (const r of results) {
  line(`-M ${r.mode}: svc / PostgreSQL (tps)`, `${Math.round(r.ours.tps)} / ${Math.round(r.theirs.tps)} = ${(r.ours.tps / r.theirs.tps).toFixed(2)}x`)
  line(`-M ${r.mode}: server CPU per query, svc / PostgreSQL (us)`, `${Math.round(r.ours.cpuUs)} / ${Math.round(r.theirs.cpuUs)} = ${(r.theirs.cpuUs / r.ours.cpuUs).toFixed(2)}x`)
}
