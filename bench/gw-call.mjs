#!/usr/bin/env node
// Wall time of `toolkit gw call` against a minimal Node script that uses the MCP SDK client to
// call the same tool on the same server (bench/gw-call-peer.mjs), interleaved in one run so
// machine load hits both alike. The server is @modelcontextprotocol/server-everything in
// Streamable HTTP mode on loopback; the tool is get-sum.
// Usage: node bench/gw-call.mjs [runs=21]    Target (issue 4): median ratio <= 1.5x.
// Build first: npm run build -w plugins/gw
import getPort from 'get-port'
import {spawn, spawnSync} from 'node:child_process'
import {mkdirSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {tmpdir} from 'node:os'
import {dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'

const runs = Number(process.argv[2] ?? 21)
const bin = fileURLToPath(new URL('../bin/run.js', import.meta.url))
const peer = fileURLToPath(new URL('gw-call-peer.mjs', import.meta.url))
const require = createRequire(import.meta.url)
const everything = join(dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')), 'dist', 'index.js')

const port = await getPort({host: '127.0.0.1'})
const server = spawn(process.execPath, [everything, 'streamableHttp'], {env: {...process.env, PORT: String(port)}, stdio: ['ignore', 'pipe', 'pipe']})
await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error('server-everything did not start')), 15_000)
  const check = (d) => d.toString().includes('listening') && (clearTimeout(timer), resolve())
  server.stdout.on('data', check)
  server.stderr.on('data', check)
})
const url = `http://127.0.0.1:${port}/mcp`

const dir = mkdtempSync(join(tmpdir(), 'gw-bench-'))
mkdirSync(join(dir, 'home'))
writeFileSync(join(dir, 'servers.json'), JSON.stringify({gwServers: {everything: {url}}}))
const env = {...process.env, HOME: join(dir, 'home'), TOOLKIT_CONFIG_DIR: join(dir, 'home', '.toolkit'), XDG_CONFIG_HOME: join(dir, 'home', '.config')}

const cases = {
  'SDK script (peer)': [process.execPath, [peer, url, 'get-sum', '{"a":2,"b":3}']],
  'toolkit gw call': [process.execPath, [bin, 'gw', 'call', 'everything', 'get-sum', 'a=2', 'b=3']],
}
const times = Object.fromEntries(Object.keys(cases).map((k) => [k, []]))
try {
  for (let i = 0; i < runs + 2; i++) {
    for (const [name, [cmd, args]] of Object.entries(cases)) {
      const t0 = process.hrtime.bigint()
      const r = spawnSync(cmd, args, {cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe']})
      const ms = Number(process.hrtime.bigint() - t0) / 1e6
      if (r.status !== 0 || !r.stdout.toString().includes('is 5')) throw new Error(`${name} failed (${r.status}): ${r.stderr}${r.stdout}`)
      if (i >= 2) times[name].push(ms) // two warm-up rounds
    }
  }
} finally {
  server.kill()
  rmSync(dir, {force: true, recursive: true})
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const base = median(times['SDK script (peer)'])
console.log(`runs: ${runs} each, interleaved; server-everything streamableHttp on loopback, tool get-sum`)
for (const [name, xs] of Object.entries(times)) console.log(`${name.padEnd(18)} median ${median(xs).toFixed(1).padStart(7)} ms`)
const ratio = median(times['toolkit gw call']) / base
console.log(`ratio toolkit / peer: ${ratio.toFixed(2)}x (target <= 1.5x)${ratio <= 1.5 ? '' : '  OVER TARGET'}`)
process.exitCode = ratio <= 1.5 ? 0 : 1
