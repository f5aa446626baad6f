#!/usr/bin/env node
// bench/campaign-providers: the two speed targets of the API providers, on the built CLI, against
// the loopback Anthropic fake (plugins/campaign/test/fakes) in this process, same run:
//   1. zero model latency: `generate --provider anthropic` of examples/acme-coffee takes at most
//      1.5x the offline `local` planner's run of the same example (the engine's overhead per
//      model request and tool call stays small);
//   2. 200 ms per model response: on a 40-campaign account, `--parallel 8` finishes at least 5x
//      faster than `--parallel 1`.
// Wall time of each whole CLI process (start to exit), median of --runs, runs interleaved.
//
// Usage: npm run build -w plugins/campaign && node bench/campaign-providers.mjs [--runs 3] [--latency 200] [--only 2]
import {spawn} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {loadavg, tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {tsImport} from 'tsx/esm/api'

const root = fileURLToPath(new URL('..', import.meta.url))
const runJs = join(root, 'bin', 'run.js')
const arg = (name, def) => {
  const i = process.argv.indexOf(`--${name}`)
  return i === -1 ? def : Number(process.argv[i + 1])
}
const RUNS = arg('runs', 3)
const LATENCY = arg('latency', 200)
const {startAnthropic} = await tsImport('../plugins/campaign/test/fakes/anthropic.ts', import.meta.url)
const work = mkdtempSync(join(tmpdir(), 'toolkit-cprov-'))

// Exit 3 (invalid) still ran every mission: the synthetic account's copy is not what is measured.
function run(args, env, ok = [0]) {
  return new Promise((resolve, reject) => {
    const t = performance.now()
    const child = spawn(process.execPath, [runJs, ...args], {env: {...process.env, NO_COLOR: '1', ...env}, stdio: ['ignore', 'ignore', 'pipe']})
    let stderr = ''
    child.stderr.on('data', (d) => (stderr += d))
    child.on('close', (code) => (ok.includes(code) ? resolve(performance.now() - t) : reject(new Error(`toolkit ${args.join(' ')} exited ${code}: ${stderr}`))))
  })
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const s = (ms) => `${(ms / 1000).toFixed(2)} s`

// 1. Zero latency, the example (--only 2 skips it).
const only = arg('only', 0)
const example = join(root, 'examples', 'acme-coffee', 'business.toml')
const fast = await startAnthropic({})
const env = {ANTHROPIC_API_KEY: 'bench-key', ANTHROPIC_BASE_URL: fast.url}
const times = {anthropic: [], local: []}
try {
  if (only !== 2) await run(['campaign', 'generate', example, '--out', join(work, 'warm'), '--skip-url-check'], {}) // warm the file cache
  for (let i = 0; i < (only === 2 ? 0 : RUNS); i++) {
    times.local.push(await run(['campaign', 'generate', example, '--out', join(work, 'local'), '--skip-url-check'], {}))
    times.anthropic.push(await run(['campaign', 'generate', example, '--out', join(work, 'anthropic'), '--skip-url-check', '--provider', 'anthropic'], env))
  }
} finally {
  await fast.close()
}
const requests = fast.requests.length / RUNS
const ratio1 = median(times.anthropic) / median(times.local)
if (only !== 2) console.log(`1. example, zero latency (${Math.round(requests)} model requests a run): local ${s(median(times.local))}, anthropic ${s(median(times.anthropic))} -> ${ratio1.toFixed(2)}x the offline planner (target <= 1.5x) ${ratio1 <= 1.5 ? 'OK' : 'MISSED'}`)

// 2. 200 ms per response, a 40-campaign account: 39 categories (one Search campaign each) and Brand.
const categories = Array.from({length: 39}, (_, i) => `Range ${String.fromCharCode(65 + (i % 26))}${i >= 26 ? 'x' : ''}`)
const rows = ['id,title,url,price,category,description']
categories.forEach((c, i) => {
  for (let k = 0; k < 2; k++) rows.push(`P${i}-${k},${c} Item ${k + 1},https://bench-shop.example/p/${i}-${k},${(9 + k).toFixed(2)},${c},A good ${c.toLowerCase()} item number ${k + 1}.`)
})
writeFileSync(join(work, 'catalog.csv'), `${rows.join('\n')}\n`)
writeFileSync(
  join(work, 'business.toml'),
  `[business]
name = "Bench Shop"
url = "https://bench-shop.example"
language = "en"
locations = ["United States"]
goal = "Sell many ranges online"
description = "Bench Shop sells thirty-nine ranges of things to measure the campaign generator."
brand_terms = ["bench shop"]

[budget]
daily = 400
currency = "USD"
max_cpc = 1

[catalog]
file = "catalog.csv"

[campaigns]
formats = ["search"]
`,
)
const slow = await startAnthropic({latencyMs: LATENCY})
const par = {1: [], 8: []}
try {
  for (let i = 0; i < Math.max(1, RUNS - 1); i++) {
    for (const p of [1, 8]) {
      par[p].push(await run(['campaign', 'generate', join(work, 'business.toml'), '--out', join(work, `p${p}`), '--skip-url-check', '--provider', 'anthropic', '--parallel', String(p)], {ANTHROPIC_API_KEY: 'bench-key', ANTHROPIC_BASE_URL: slow.url}, [0, 3]))
    }
  }
} finally {
  await slow.close()
}
const ratio2 = median(par[1]) / median(par[8])
rmSync(work, {force: true, recursive: true})

console.log(`load average at the end: ${loadavg().map((x) => x.toFixed(1)).join(' ')}`)
console.log(`2. 40 campaigns, ${LATENCY} ms a response: --parallel 1 ${s(median(par[1]))}, --parallel 8 ${s(median(par[8]))} -> ${ratio2.toFixed(2)}x faster (target >= 5x) ${ratio2 >= 5 ? 'OK' : 'MISSED'}`)
