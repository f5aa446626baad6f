#!/usr/bin/env node
// Runs the test suites of `npm test` several at a time. Most of the suites' time is spent waiting
// on the processes they start (the built CLI, git, servers, PostgreSQL, the agent CLIs) and on the
// timeouts their tests are about, so on a two-core machine four suites side by side finish in well
// under the time they take one after another. Each suite's output is kept and printed whole when
// it ends, so the log reads like a serial run. TEST_JOBS=1 runs everything one at a time.
//
//   node scripts/run-suites.mjs            every suite, as one pool: checks, then longest first;
//                                          then the benchmark guard alone
//   node scripts/run-suites.mjs unit e2e   only these stages, one stage after the other
import {spawn} from 'node:child_process'
import {createWriteStream, mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

const npm = (script, workspace) => ['npm', ['run', script, ...(workspace ? ['-w', workspace] : []), '--silent']]

// `seconds` is about what each suite takes alone on a quiet two-core machine: the pool starts the
// longest first, so the run ends about when its total work is done rather than waiting on one
// long suite started last. Set against these, a suite alone keeps a quarter to half of one core
// busy (CPU seconds of each, its processes included, 2026-11-25: gw e2e 131, campaign e2e 155,
// svc e2e 102, svc unit 58, root e2e 33, bindings 32, campaign unit 28, typecheck 23, gw unit 16,
// lint 16, kit 2; about 600 in all, so two cores need 5 minutes at the least): three at a time
// left part of a core idle, four keep both nearly busy.
const STAGES = {
  checks: [
    {cmd: npm('typecheck'), name: 'typecheck', seconds: 25},
    {cmd: npm('lint'), name: 'lint', seconds: 20},
  ],
  unit: [
    {cmd: npm('test:unit', 'plugins/campaign'), name: 'campaign unit', seconds: 90},
    {cmd: npm('test:unit', 'plugins/svc'), name: 'svc unit', seconds: 110},
    {cmd: npm('test:unit', 'plugins/gw'), name: 'gw unit', seconds: 70},
    {cmd: npm('test:unit', 'packages/kit'), name: 'kit unit', seconds: 8},
  ],
  e2e: [
    {cmd: npm('test:e2e', 'plugins/gw'), name: 'gw e2e', seconds: 300},
    {cmd: npm('test:e2e', 'plugins/campaign'), name: 'campaign e2e', seconds: 290},
    {cmd: npm('test:e2e', 'plugins/svc'), name: 'svc e2e', seconds: 270},
    {cmd: ['npx', ['mocha']], name: 'root e2e', seconds: 110},
    {cmd: npm('test:bindings'), name: 'bindings', seconds: 60},
  ],
  // Short benchmark runs against their peers (scripts/bench-guard.mjs). They run alone, after
  // everything else: a ratio measured beside three test suites says more about the suites.
  guard: [{cmd: ['node', ['scripts/bench-guard.mjs']], name: 'bench guard', seconds: 90}],
}

const jobs = Math.max(1, Number(process.env.TEST_JOBS) || 4)
const wanted = process.argv.slice(2)
for (const s of wanted) if (!(s in STAGES)) throw new Error(`unknown stage ${s}; stages: ${Object.keys(STAGES).join(', ')}`)
const stages = wanted.length > 0 ? wanted : Object.keys(STAGES)
const logs = mkdtempSync(join(tmpdir(), 'toolkit-suites-'))

function run(suite, index) {
  const file = join(logs, `${index}.log`)
  const out = createWriteStream(file)
  const started = Date.now()
  return new Promise((resolve) => {
    const [bin, args] = suite.cmd
    const child = spawn(bin, args, {env: process.env, stdio: ['ignore', 'pipe', 'pipe']})
    child.stdout.pipe(out, {end: false})
    child.stderr.pipe(out, {end: false})
    child.on('close', (code, signal) => {
      out.end(() => {
        const seconds = Math.round((Date.now() - started) / 1000)
        const ok = code === 0
        process.stdout.write(`\n===== ${suite.name}: ${ok ? 'passed' : `FAILED (${signal ?? `exit ${code}`})`} in ${seconds} s =====\n`)
        process.stdout.write(readFileSync(file, 'utf8'))
        process.stdout.write(`===== end of ${suite.name} =====\n`)
        resolve({name: suite.name, ok, seconds, failures: ok ? '' : failureSection(readFileSync(file, 'utf8'))})
      })
    })
  })
}

// CI logs are often read from the end, so a failed suite's mocha failure list (or, when it has
// none, its last lines) is repeated after the summary.
function failureSection(log) {
  const lines = log.split('\n')
  const start = lines.findIndex((l) => /^\s+\d+ failing/.test(l))
  // Other runners (minitest, unittest, cargo) print their first failure with its message here;
  // CI tools that show a few lines of the section then still show the message.
  const other = lines.findIndex((l) => /^\s*(\d+\) (Error|Failure):|(ERROR|FAIL): |---- .* stdout ----|thread '.*' panicked)/.test(l))
  const picked = start !== -1 ? lines.slice(start, start + 300) : other !== -1 ? lines.slice(other, other + 80) : lines.slice(-60)
  return picked.join('\n')
}

async function pool(name, suites) {
  const results = []
  let next = 0
  const worker = async () => {
    while (next < suites.length) {
      const i = next++
      results.push(await run(suites[i], `${name}-${i}`))
    }
  }
  process.stdout.write(`\n##### ${name === 'all' ? 'suites' : `stage ${name}`}: ${suites.map((s) => s.name).join(', ')} (${jobs} at a time)\n`)
  await Promise.all(Array.from({length: Math.min(jobs, suites.length)}, worker))
  return results
}

const startedAll = Date.now()
let failed = []
const summary = []
if (wanted.length === 0) {
  // One pool: a stage barrier would leave a core idle while a stage's last suite runs alone. The
  // type check and lint go first (a slip there shows in a minute), then the longest suites.
  const all = [...STAGES.checks, ...[...STAGES.unit, ...STAGES.e2e].sort((a, b) => b.seconds - a.seconds)]
  summary.push(...(await pool('all', all)))
  summary.push(...(await pool('guard', STAGES.guard)))
  failed = summary.filter((r) => !r.ok)
} else {
  for (const name of stages) {
    const results = await pool(name, STAGES[name])
    summary.push(...results)
    failed = results.filter((r) => !r.ok)
    // A later stage is not worth its minutes when an earlier one failed.
    if (failed.length > 0) break
  }
}
rmSync(logs, {force: true, recursive: true})
process.stdout.write(`\n##### summary\n${summary.map((r) => `${r.ok ? 'ok    ' : 'FAILED'} ${r.name} (${r.seconds} s)`).join('\n')}\n`)
process.stdout.write(`all suites: ${Math.round((Date.now() - startedAll) / 1000)} s, ${jobs} at a time\n`)
for (const r of failed) process.stdout.write(`\n##### why ${r.name} failed\n${r.failures}\n`)
process.exitCode = failed.length > 0 ? 1 : 0
