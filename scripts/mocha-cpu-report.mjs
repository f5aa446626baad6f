// CPU time per test file, the processes each one started included, to find what makes a suite
// long on CI's two cores (wall time under load says little). Linux only: it reads
// /proc/self/stat, whose cutime/cstime count every child (and their children) once reaped, so a
// server a file leaves running is counted when it exits, and CPU spent in a file's after() hooks
// goes to the next test; a daemon that detaches (pg_ctl's server) is not counted at all.
//
//   cd plugins/gw && npx mocha --config .mocharc.e2e.json --require ../../scripts/mocha-cpu-report.mjs
import {readFileSync} from 'node:fs'
import {relative} from 'node:path'

const TICK_MS = 10 // USER_HZ is 100 on Linux

function cpuMs() {
  const stat = readFileSync('/proc/self/stat', 'utf8')
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // utime, stime, cutime, cstime: fields 14-17 of proc(5), counted here from the state field.
  return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * TICK_MS
}

const byFile = new Map()
let last = cpuMs()
const started = last

export const mochaHooks = {
  afterEach() {
    const now = cpuMs()
    const file = this.currentTest?.file ? relative(process.cwd(), this.currentTest.file) : '(hooks)'
    byFile.set(file, (byFile.get(file) ?? 0) + now - last)
    last = now
  },
  afterAll() {
    const total = cpuMs() - started
    const rows = [...byFile].sort((a, b) => b[1] - a[1])
    process.stdout.write(`\nCPU by test file (this process and its children), ${(total / 1000).toFixed(1)} s in all:\n`)
    for (const [file, ms] of rows) process.stdout.write(`${(ms / 1000).toFixed(1).padStart(8)} s  ${((100 * ms) / Math.max(1, total)).toFixed(0).padStart(3)}%  ${file}\n`)
  },
}
