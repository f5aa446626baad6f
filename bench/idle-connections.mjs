#!/usr/bin/env node
// Memory held by idle connections (issue 20): opens --connections (default 1,000) client
// connections to each server, each used once and then left idle, and prints the server's memory
// growth per connection, next to the peer measured in the same run:
//   svc Redis protocol    vs redis-server        (one PING per connection)
//   svc PostgreSQL        vs PostgreSQL 15       (node-postgres login + SELECT 1; PostgreSQL forks one
//                                                  backend per connection: its figure is the summed
//                                                  PSS of all its processes, so shared pages count once)
//   svc REST              vs a bare Node http server (GET /healthz kept alive; the floor for Node)
//   gw serve --http proxy vs the same bare Node http server (GET /health kept alive)
// Memory is VmRSS of the server process (PSS summed for PostgreSQL), read after the connections
// settle for --settle seconds, minus the same figure before they were opened.
// Needs the build (npm run build), redis-server and PostgreSQL (scripts/install-peers.sh).
//   node bench/idle-connections.mjs [--connections 1000] [--settle 3] [--only redis,pg,rest,gw]
import {execFileSync, spawn, spawnSync} from 'node:child_process'
import {chmodSync, chownSync, readdirSync, readFileSync, writeFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {connect} from 'node:net'
import {dirname, join} from 'node:path'

import {arg, freePort, line, startServer, tempDir} from './svc-common.mjs'

const N = arg('connections', 1000)
const SETTLE_MS = arg('settle', 3) * 1000
const onlyAt = process.argv.indexOf('--only')
const ONLY = onlyAt === -1 ? ['redis', 'pg', 'rest', 'gw'] : process.argv[onlyAt + 1].split(',')
const PGBIN = process.env.PGBIN ?? '/usr/lib/postgresql/15/bin'
const root = new URL('..', import.meta.url).pathname
const require = createRequire(join(root, 'plugins/svc/package.json'))
const pg = (await import(require.resolve('pg'))).default
const children = []
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL')
})

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const kb = (pid, field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/${field === 'Pss' ? 'smaps_rollup' : 'status'}`, 'utf8'))?.[1] ?? 0)
const rss = (pid) => kb(pid, 'VmRSS')
/** A process and all its descendants (PostgreSQL's postmaster and its backends). */
function tree(pid) {
  const out = [pid]
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    try {
      const ppid = Number(readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1].split(' ')[1])
      if (ppid === pid) out.push(...tree(Number(d)))
    } catch {
      // the process ended while we read
    }
  }
  return out
}
const pssTree = (pid) => tree(pid).reduce((sum, p) => {
  try {
    return sum + kb(p, 'Pss')
  } catch {
    return sum
  }
}, 0)

/** Opens `n` raw sockets, sends `hello` on each, waits for `answered(text)`; resolves with the sockets. */
async function rawIdle(port, n, hello, answered) {
  const socks = []
  for (let i = 0; i < n; i += 50) {
    socks.push(...(await Promise.all(Array.from({length: Math.min(50, n - i)}, () => new Promise((resolve, reject) => {
      const s = connect(port, '127.0.0.1')
      let got = ''
      s.on('error', reject)
      s.on('data', (d) => {
        got += d
        if (answered(got)) resolve(s)
      })
      s.on('close', () => reject(new Error(`closed after ${JSON.stringify(got.slice(0, 80))}`)))
      s.write(hello)
    })))))
  }
  return socks
}

async function pgIdle(port, user, password, database, n) {
  const clients = []
  for (let i = 0; i < n; i += 20) {
    clients.push(...(await Promise.all(Array.from({length: Math.min(20, n - i)}, async () => {
      const c = new pg.Client({database, host: '127.0.0.1', password, port, user})
      c.on('error', () => {})
      await c.connect()
      await c.query('SELECT 1')
      return c
    }))))
  }
  return clients
}

/** Memory before and after `open()` holds `N` connections; returns KB per connection. */
async function measure(label, memory, open, close) {
  await sleep(SETTLE_MS)
  const before = memory()
  const held = await open()
  await sleep(SETTLE_MS)
  const after = memory()
  await close(held)
  const per = (after - before) / N
  line(`${label}: ${N} idle connections`, `${(before / 1024).toFixed(1)} MB -> ${(after / 1024).toFixed(1)} MB, ${per.toFixed(1)} KB per connection`)
  return per
}

const endRaw = async (socks) => {
  for (const s of socks) s.destroy()
  await sleep(200)
}
const endPg = (clients) => Promise.all(clients.map((c) => c.end().catch(() => {})))
const redisHello = ['PING\r\n', (t) => t === '+PONG\r\n']
const httpHello = (path) => [`GET ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`, (t) => t.includes('\r\n\r\n')]
const ratio = (ours, theirs) => `${ours.toFixed(1)} / ${theirs.toFixed(1)} KB = ${(ours / theirs).toFixed(2)}x`

/** A bare Node http server in its own process: what a keep-alive connection costs Node itself. */
async function bareNode() {
  const code = "require('node:http').createServer((q, s) => s.end('{}')).listen(0, '127.0.0.1', function () { console.log(this.address().port) })"
  const child = spawn(process.execPath, ['-e', code], {stdio: ['ignore', 'pipe', 'inherit']})
  children.push(child)
  const port = await new Promise((r) => child.stdout.once('data', (d) => r(Number(String(d).trim()))))
  return {child, port}
}

console.log(`uptime: ${execFileSync('uptime').toString().trim()}`)
const results = {}
const svcLimit = ['--config', writeConfig()]
function writeConfig() {
  // One connection more than the bench opens: the default limit is exactly 1,000.
  const f = join(tempDir(), 'config.edn')
  const net = `:max-connections ${N + 10}`
  writeFileSync(f, `{:servers {:rest {${net}} :redis {${net}} :postgresql {${net}}}}\n`)
  return f
}

if (ONLY.includes('redis')) {
  const svc = await startServer(join(tempDir(), 'data'), svcLimit, 'redis')
  const ours = await measure('svc Redis protocol', () => rss(svc.child.pid), () => rawIdle(svc.port, N, ...redisHello), endRaw)
  await svc.stop()
  const port = await freePort()
  const peer = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--maxclients', String(N + 100), '--dir', tempDir('redis-peer-')], {stdio: 'ignore'})
  children.push(peer)
  for (let i = 0; i < 100 && spawnSync('redis-cli', ['-p', String(port), 'PING']).stdout?.toString().trim() !== 'PONG'; i++) await sleep(100)
  const theirs = await measure('redis-server', () => rss(peer.pid), () => rawIdle(port, N, ...redisHello), endRaw)
  peer.kill('SIGKILL')
  results.redis = [ours, theirs]
}

if (ONLY.includes('pg')) {
  const svc = await startServer(join(tempDir(), 'data'), svcLimit, 'pg')
  const ours = await measure('svc PostgreSQL protocol', () => rss(svc.child.pid), () => pgIdle(svc.port, 'svc', 'svc', 'svc', N), endPg)
  await svc.stop()
  const dir = tempDir('pg-peer-')
  chmodSync(dir, 0o755)
  const asRoot = process.getuid?.() === 0
  if (asRoot) chownSync(dir, Number(execFileSync('id', ['-u', 'postgres']).toString().trim()), -1)
  const sh = (cmd) => (asRoot ? spawnSync('su', ['postgres', '-c', cmd], {stdio: 'inherit'}) : spawnSync('sh', ['-c', cmd], {stdio: 'inherit'}))
  const port = await freePort()
  sh(`${PGBIN}/initdb -D ${dir}/data -A trust -U postgres >/dev/null`)
  sh(`${PGBIN}/pg_ctl -D ${dir}/data -o "-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=${N + 20}" -l ${dir}/log -w start >/dev/null`)
  try {
    const postmaster = Number(readFileSync(join(dir, 'data/postmaster.pid'), 'utf8').split('\n')[0])
    const theirs = await measure('PostgreSQL (PSS of all its processes)', () => pssTree(postmaster), () => pgIdle(port, 'postgres', '', 'postgres', N), endPg)
    results.pg = [ours, theirs]
  } finally {
    sh(`${PGBIN}/pg_ctl -D ${dir}/data -m fast -w stop >/dev/null`)
  }
}

let bare
const bareFigure = async () => {
  if (bare !== undefined) return bare
  const b = await bareNode()
  bare = await measure('bare Node http server', () => rss(b.child.pid), () => rawIdle(b.port, N, ...httpHello('/')), endRaw)
  b.child.kill('SIGKILL')
  return bare
}

if (ONLY.includes('rest')) {
  const svc = await startServer(join(tempDir(), 'data'), svcLimit, 'rest')
  const ours = await measure('svc REST', () => rss(svc.child.pid), () => rawIdle(svc.port, N, ...httpHello('/healthz')), endRaw)
  await svc.stop()
  results.rest = [ours, await bareFigure()]
}

if (ONLY.includes('gw')) {
  const gwRequire = createRequire(join(root, 'plugins/gw/package.json'))
  const everything = join(dirname(gwRequire.resolve('@modelcontextprotocol/server-everything/package.json')), 'dist/index.js')
  const dir = tempDir('gw-idle-')
  writeFileSync(join(dir, 'servers.json'), JSON.stringify({gwServers: {everything: {args: [everything], command: process.execPath}}, serve: {maxConnections: N + 10}}))
  const env = {...process.env, HOME: dir, TOOLKIT_CONFIG_DIR: join(dir, 'tk'), XDG_CONFIG_HOME: join(dir, 'xdg')}
  const gw = spawn(process.execPath, [join(root, 'bin/run.js'), 'gw', 'serve', '--http', '--port', '0', '--format', 'json', '--config', join(dir, 'servers.json')], {env, stdio: ['ignore', 'pipe', 'inherit']})
  children.push(gw)
  const port = await new Promise((resolve, reject) => {
    let out = ''
    gw.stdout.on('data', (d) => {
      out += d
      const m = /"url":"http:\/\/[^:]+:(\d+)\//.exec(out)
      if (m) resolve(Number(m[1]))
    })
    gw.once('exit', (code) => reject(new Error(`gw serve exited ${code}: ${out}`)))
  })
  const ours = await measure('gw serve --http proxy', () => rss(gw.pid), () => rawIdle(port, N, ...httpHello('/health')), endRaw)
  gw.kill('SIGTERM')
  results.gw = [ours, await bareFigure()]
}

console.log('\nKB per idle connection, ours / peer (same run):')
if (results.redis) line('svc Redis / redis-server', ratio(...results.redis))
if (results.pg) line('svc PostgreSQL / PostgreSQL', ratio(...results.pg))
if (results.rest) line('svc REST / bare Node http', ratio(...results.rest))
if (results.gw) line('gw proxy / bare Node http', ratio(...results.gw))
