#!/usr/bin/env node
// pgbench -S style point selects by id (8 clients) against `toolkit svc server`'s PostgreSQL
// protocol and against a real PostgreSQL started here in a temporary directory, same run, same
// rows, simple and extended query protocols.
// Usage: node bench/svc-pg.mjs [--rows 10000] [--seconds 10] [--clients 8]
// Needs the built plugin (npm run build -w plugins/svc) and PostgreSQL 15 server binaries.
import {execFileSync, spawnSync} from 'node:child_process'
import {chmodSync, chownSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {arg, freePort, line, startServer, tempDir} from './svc-common.mjs'

const ROWS = arg('rows', 10_000)
const SECONDS = arg('seconds', 10)
const CLIENTS = arg('clients', 8)
const PGBIN = process.env.PGBIN ?? '/usr/lib/postgresql/15/bin'
const PASSWORD = 'svc'

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
  return {port, stop: () => sh(`${PGBIN}/pg_ctl -D ${dir}/data -m fast -w stop >/dev/null`)}
}

function startSvc() {
  return startServer(join(tempDir(), 'data'), [], 'pg')
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

function pgbench(port, user, mode, seconds = SECONDS) {
  const r = spawnSync('pgbench', ['-h', '127.0.0.1', '-p', String(port), '-U', user, '-n', '-f', script, '-c', String(CLIENTS), '-j', '2', '-T', String(seconds), '-M', mode, user === 'svc' ? 'svc' : 'postgres'], {
    encoding: 'utf8',
    env: {...process.env, PGPASSWORD: PASSWORD},
  })
  const m = /tps = ([\d.]+) \(without initial connection time\)/.exec(r.stdout)
  const failed = /number of failed transactions: (\d+)/.exec(r.stdout)
  if (!m) throw new Error(`pgbench printed no figure:\n${r.stdout}\n${r.stderr}`)
  if (failed && Number(failed[1]) > 0) throw new Error(`pgbench saw ${failed[1]} failed transactions:\n${r.stdout}`)
  return Number(m[1])
}

const peer = await startPostgres()
const svc = await startSvc()
const results = []
try {
  load(peer.port, 'postgres')
  load(svc.port, 'svc')
  // One untimed second each first: right after the load svc is still putting the rows into Git
  // and its indexes, and the first mode measured would pay for it alone.
  pgbench(svc.port, 'svc', 'simple', 1)
  pgbench(peer.port, 'postgres', 'simple', 1)
  for (const mode of ['simple', 'extended', 'prepared']) {
    const ours = pgbench(svc.port, 'svc', mode)
    const theirs = pgbench(peer.port, 'postgres', mode)
    results.push({mode, ours, theirs})
  }
} finally {
  await svc.stop()
  peer.stop()
}
console.log(`pgbench -n -c ${CLIENTS} -j 2 -T ${SECONDS}, SELECT abalance FROM accounts WHERE id = :aid over ${ROWS} rows; peer: PostgreSQL ${/\d+\.\d+/.exec(execFileSync(join(PGBIN, 'postgres'), ['--version']).toString())?.[0]}`)
for (const r of results) line(`-M ${r.mode}: svc / PostgreSQL (tps)`, `${Math.round(r.ours)} / ${Math.round(r.theirs)} = ${(r.ours / r.theirs).toFixed(2)}x`)
