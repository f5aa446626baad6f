#!/usr/bin/env node
// CI's guard on issue 26's figures: short runs of the svc benchmarks that measure a peer in the
// same run (tuned `git fast-import`, PostgreSQL 15 under pgbench, redis-server under
// redis-benchmark, the Git walk that the history index replaced), each ratio compared with the one
// recorded for the same short run in bench/guard-baseline.json. These machines are shared and
// noisy, so the guard fails only when a ratio falls below half of its recorded figure: it catches
// a change that undoes the work, not the weather.
//
//   node scripts/bench-guard.mjs            run, print the table, exit 1 if a ratio is below its floor
//   node scripts/bench-guard.mjs --record [--rounds 3]   run each 3 times, write the medians as the baseline
//   node scripts/bench-guard.mjs --only pg  one benchmark (pg, redis, write, scale)
import {spawn} from 'node:child_process'
import {readFileSync, writeFileSync} from 'node:fs'
import {loadavg} from 'node:os'
import {fileURLToPath} from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const baselineFile = fileURLToPath(new URL('../bench/guard-baseline.json', import.meta.url))

const ratio = (re) => (out) => {
  const m = re.exec(out)
  return m ? Number(m[1]) : undefined
}

/**
 * Each benchmark at the size CI can afford, and the ratios read from its report. The labels are
 * the benchmarks' own report lines, so a bench that changes its wording fails here loudly (a
 * missing figure is a failure) rather than passing silently.
 */
const BENCHES = [
  {
    args: ['bench/svc-write.mjs', '--seconds', '2'],
    name: 'write',
    ratios: {'REST durable writes / tuned git fast-import': ratio(/^ratio svc sustained \/ tuned fast-import[^\n]*?\s([\d.]+)\s*$/m)},
  },
  {
    args: ['bench/svc-pg.mjs', '--rows', '1000', '--seconds', '2'],
    name: 'pg',
    ratios: Object.fromEntries(
      ['simple', 'extended', 'prepared'].map((mode) => [`pgbench -M ${mode} / PostgreSQL`, ratio(new RegExp(`^-M ${mode}: svc / PostgreSQL \\(tps\\)\\s+\\d+ / \\d+ = ([\\d.]+)x`, 'm'))]),
    ),
  },
  {
    args: ['bench/svc-redis.mjs', '--requests', '30000', '--set-requests', '10000', '--keys', '10000', '--writes', '3000'],
    name: 'redis',
    ratios: {
      'GET -P 1 / redis-server': ratio(/^GET -P 1: svc \/ redis-server \(req\/s\)\s+\d+ \/ \d+ = ([\d.]+)x/m),
      'GET -P 16 / redis-server': ratio(/^GET -P 16: svc \/ redis-server \(req\/s\)\s+\d+ \/ \d+ = ([\d.]+)x/m),
      'SET -P 1 / redis-server appendfsync always': ratio(/^SET -P 1: svc \/ redis-server appendfsync always\s+\d+ \/ \d+ = ([\d.]+)x/m),
    },
  },
  {
    args: ['bench/svc-scale.mjs', '--docs', '5000', '--queries', '100', '--reads', '500', '--walked', '3'],
    name: 'scale',
    ratios: {
      'as-of read, indexed / walking Git': ratio(/indexed (\d+)x \/ \d+x faster/),
      'history read, indexed / walking Git': ratio(/indexed \d+x \/ (\d+)x faster/),
    },
  },
]

function run(args) {
  return new Promise((resolve) => {
    const started = Date.now()
    const child = spawn(process.execPath, args, {cwd: root, stdio: ['ignore', 'pipe', 'pipe']})
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (err += d))
    child.on('close', (code) => resolve({code, err, out, seconds: (Date.now() - started) / 1000}))
  })
}

const record = process.argv.includes('--record')
const onlyAt = process.argv.indexOf('--only')
const only = onlyAt === -1 ? undefined : process.argv[onlyAt + 1]
const benches = BENCHES.filter((b) => only === undefined || b.name === only)
if (benches.length === 0) throw new Error(`--only takes one of: ${BENCHES.map((b) => b.name).join(', ')}`)

const baseline = JSON.parse(readFileSync(baselineFile, 'utf8'))
const roundsAt = process.argv.indexOf('--rounds')
const rounds = record ? Number(roundsAt === -1 ? 3 : process.argv[roundsAt + 1]) : 1
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

/** Runs a benchmark; resolves with its ratios by name (undefined where its report has none), or undefined when it failed. */
async function measure(bench) {
  const load = loadavg()[0].toFixed(1)
  const r = await run(bench.args)
  process.stdout.write(`\n## node ${bench.args.join(' ')} (load ${load}, ${r.seconds.toFixed(0)} s, exit ${r.code})\n${r.out}`)
  if (r.code !== 0) {
    process.stdout.write(r.err.split('\n').slice(-20).join('\n'))
    return undefined
  }
  return Object.fromEntries(Object.entries(bench.ratios).map(([name, read]) => [name, read(r.out)]))
}

const measured = {}
const rows = []
let failed = 0
for (const bench of benches) {
  const runs = []
  for (let i = 0; i < rounds; i++) runs.push(await measure(bench))
  if (runs.includes(undefined)) {
    rows.push(`FAILED ${bench.name}: the benchmark exited with an error`)
    failed++
    continue
  }
  let got = Object.fromEntries(Object.keys(bench.ratios).map((name) => [name, median(runs.map((x) => x[name]))]))
  const below = (name) => baseline.ratios[name] !== undefined && got[name] < baseline.ratios[name] / 2
  if (!record && Object.keys(got).some(below)) {
    // One more run before failing: a real regression stays below, a noisy minute rarely repeats.
    process.stdout.write(`\n(a ratio of ${bench.name} is below its floor: running it once more)\n`)
    const again = await measure(bench)
    if (again) got = Object.fromEntries(Object.entries(got).map(([name, v]) => [name, Math.max(v ?? 0, again[name] ?? 0) || v]))
  }
  for (const [name, value] of Object.entries(got)) {
    const was = baseline.ratios[name]
    if (value === undefined || Number.isNaN(value)) {
      rows.push(`FAILED ${name}: no figure in the report`)
      failed++
      continue
    }
    measured[name] = value
    if (record) continue
    if (was === undefined) {
      rows.push(`FAILED ${name}: ${value} has no recorded figure (node scripts/bench-guard.mjs --record)`)
      failed++
      continue
    }
    const ok = value >= was / 2
    if (!ok) failed++
    rows.push(`${ok ? 'ok    ' : 'FAILED'} ${name}: ${value} (recorded ${was}, floor ${(was / 2).toFixed(2)})`)
  }
}

if (record) {
  baseline.ratios = {...baseline.ratios, ...measured}
  baseline.recorded = `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, load ${loadavg()[0].toFixed(1)}`
  writeFileSync(baselineFile, `${JSON.stringify(baseline, null, 2)}\n`)
  process.stdout.write(`\nrecorded in bench/guard-baseline.json:\n${Object.entries(measured).map(([k, v]) => `  ${k}: ${v}`).join('\n')}\n`)
} else {
  process.stdout.write(`\n##### bench guard (fails below half of the recorded ratio; baseline ${baseline.recorded})\n${rows.join('\n')}\n`)
}
process.exitCode = failed > 0 ? 1 : 0
