#!/usr/bin/env node
// Start-up time of `toolkit --version`, `toolkit --help` and a plugin command that loads its
// command file (`toolkit campaign providers`) against `node -e 0`, measured interleaved in the
// same run so machine load affects all of them alike.
// Usage: node bench/startup.mjs [runs=31]
// Targets (issue 2): each median <= 0.35 s and <= 4x the `node -e 0` median (the plugin command:
// reported, not a target).
import {spawnSync} from 'node:child_process'
import {fileURLToPath} from 'node:url'

const runs = Number(process.argv[2] ?? 31)
const bin = fileURLToPath(new URL('../bin/run.js', import.meta.url))
const cases = {
  'node -e 0': [process.execPath, ['-e', '0']],
  'toolkit --version': [process.execPath, [bin, '--version']],
  'toolkit --help': [process.execPath, [bin, '--help']],
  'campaign providers': [process.execPath, [bin, 'campaign', 'providers']],
}
const targeted = (name) => name === 'toolkit --version' || name === 'toolkit --help'
const times = Object.fromEntries(Object.keys(cases).map((k) => [k, []]))

for (let i = 0; i < runs + 2; i++) {
  for (const [name, [cmd, args]] of Object.entries(cases)) {
    const t0 = process.hrtime.bigint()
    const r = spawnSync(cmd, args, {stdio: ['ignore', 'ignore', 'pipe']})
    const ms = Number(process.hrtime.bigint() - t0) / 1e6
    if (r.status !== 0) throw new Error(`${name} exited ${r.status}: ${r.stderr}`)
    if (i >= 2) times[name].push(ms) // two warm-up rounds fill the page cache
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]
}
const base = median(times['node -e 0'])
let ok = true
console.log(`runs: ${runs} each, interleaved`)
for (const [name, xs] of Object.entries(times)) {
  const m = median(xs)
  const ratio = m / base
  const pass = !targeted(name) || (m <= 350 && ratio <= 4)
  ok &&= pass
  console.log(`${name.padEnd(18)} median ${m.toFixed(1).padStart(6)} ms  ratio to node -e 0: ${ratio.toFixed(2)}x${!targeted(name) ? '' : pass ? '  (ok: <= 350 ms and <= 4x)' : '  (OVER TARGET)'}`)
}
process.exitCode = ok ? 0 : 1
