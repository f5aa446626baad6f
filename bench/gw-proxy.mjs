#!/usr/bin/env node
// tools/call throughput through `toolkit gw serve --http` (bearer auth + role ACL) against direct
// calls to the same @modelcontextprotocol/server-everything upstream, in the same run, 16
// concurrent MCP SDK clients each; then the per-request cost of authentication + ACL decision.
//
//   npm run build -w plugins/gw && node bench/gw-proxy.mjs [--seconds 3] [--clients 16] [--rounds 6]
//
// Direct and proxied windows alternate; the ratio reported is the median of the per-pair
// ratios, which holds up when other jobs load the machine. The CPU each process spends per call
// (from /proc) is printed too: it does not depend on how busy the machine is.
//
// BENCH_CPU=1 also prints the CPU each process spent per phase (upstream, proxy, bench);
// BENCH_PROF=<dir> writes a V8 CPU profile of the proxy there.
import {spawn} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {tmpdir} from 'node:os'
import {dirname, join} from 'node:path'
import {parseArgs} from 'node:util'

const root = new URL('..', import.meta.url).pathname
const require = createRequire(join(root, 'plugins/gw/package.json'))
const {values: opts} = parseArgs({options: {clients: {default: '16', type: 'string'}, rounds: {default: '6', type: 'string'}, seconds: {default: '3', type: 'string'}}})
const CLIENTS = Number(opts.clients)
const SECONDS = Number(opts.seconds)
const ROUNDS = Number(opts.rounds)

const {Client} = await import(require.resolve('@modelcontextprotocol/sdk/client/index.js'))
const {StreamableHTTPClientTransport} = await import(require.resolve('@modelcontextprotocol/sdk/client/streamableHttp.js'))
const getPort = (await import(require.resolve('get-port'))).default
const everything = join(dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')), 'dist/index.js')

const children = []
function start(cmd, args, env, ready) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {env: {...process.env, ...env}, stdio: ['ignore', 'pipe', 'pipe']})
    children.push(child)
    let out = ''
    const onData = (d) => {
      out += d
      const m = ready(out)
      if (m) resolve({child, match: m})
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited ${code}: ${out}`)))
  })
}

const dir = mkdtempSync(join(tmpdir(), 'gw-proxy-bench-'))
try {
  const upPort = await getPort({host: '127.0.0.1'})
  await start(process.execPath, [everything, 'streamableHttp'], {PORT: String(upPort)}, (o) => /listening on port/i.test(o))
  const upstreamUrl = `http://127.0.0.1:${upPort}/mcp`
  const config = join(dir, 'servers.json')
  writeFileSync(config, JSON.stringify({
    gwServers: {everything: {url: upstreamUrl}},
    serverAuth: {
      acl: {default: 'deny', roles: {bench: [{access: 'read', server: 'everything'}, {access: '*', deny: true, server: '*', tools: ['toggle-*']}]}},
      bearer: {tokens: {'bench-token': {roles: ['bench'], subject: 'bench'}}},
      providers: ['bearer'],
    },
  }))
  const env = {GW_AUTH_FILE: join(dir, 'auth.json'), HOME: dir, TOOLKIT_CONFIG_DIR: join(dir, 'tk'), XDG_CONFIG_HOME: join(dir, 'xdg')}
  const proxy = await start(process.execPath, [...(process.env.BENCH_PROF ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_PROF] : []), join(root, 'bin/run.js'), 'gw', 'serve', '--http', '--port', '0', '--format', 'json', '--config', config,
    // The per-user and per-address limits stay switched on, set above the load this bench offers (one user, one address).
    '--rate-limit', '1000000', '--rate-limit-address', '1000000'], env, (o) => /"url":"([^"]+)"/.exec(o))
  const proxyUrl = proxy.match[1]

  async function clients(url, headers) {
    return Promise.all(Array.from({length: CLIENTS}, async () => {
      const c = new Client({name: 'bench', version: '1'})
      await c.connect(new StreamableHTTPClientTransport(new URL(url), {requestInit: {headers}}))
      return c
    }))
  }
  const {readFileSync} = await import('node:fs')
  const cpu = (pid) => {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return (Number(f[11]) + Number(f[12])) * 10 // ms (100 Hz ticks)
  }
  const cpuTotals = {direct: {calls: 0, proxy: 0, upstream: 0}, proxy: {calls: 0, proxy: 0, upstream: 0}}
  async function measure(list, tool) {
    const c0 = children.map((c) => cpu(c.pid))
    const s0 = process.cpuUsage()
    const rate = await measureInner(list, tool)
    const used = children.map((c, i) => cpu(c.pid) - c0[i])
    const t = cpuTotals[tool === 'get-sum' ? 'direct' : 'proxy']
    t.calls += rate * SECONDS
    t.upstream += used[0]
    t.proxy += used[1]
    if (process.env.BENCH_CPU) console.error(tool, 'cpu ms upstream/proxy/bench', used, Math.round((process.cpuUsage(s0).user + process.cpuUsage(s0).system) / 1000))
    return rate
  }
  async function measureInner(list, tool) {
    let calls = 0
    const deadline = performance.now() + SECONDS * 1000
    await Promise.all(list.map(async (c) => {
      while (performance.now() < deadline) {
        const r = await c.callTool({arguments: {a: 1, b: 2}, name: tool})
        if (r.isError) throw new Error(JSON.stringify(r.content))
        calls++
      }
    }))
    return calls / SECONDS
  }

  const direct = await clients(upstreamUrl, {})
  const proxied = await clients(proxyUrl, {authorization: 'Bearer bench-token'})
  // Warm-up (JIT, connection pools).
  await Promise.all([...direct.map((c) => c.callTool({arguments: {a: 1, b: 1}, name: 'get-sum'})), ...proxied.map((c) => c.callTool({arguments: {a: 1, b: 1}, name: 'everything__get-sum'}))])
  const results = {direct: [], proxy: []}
  for (let round = 0; round < ROUNDS; round++) {
    results.direct.push(await measure(direct, 'get-sum'))
    results.proxy.push(await measure(proxied, 'everything__get-sum'))
  }
  await Promise.all([...direct, ...proxied].map((c) => c.close()))
  const avg = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]
  const d = avg(results.direct)
  const p = avg(results.proxy)
  const pairRatios = results.proxy.map((x, i) => x / results.direct[i])

  // Per-request authentication + ACL decision, in process, with the built library.
  const {buildProxyAuth} = await import(join(root, 'plugins/gw/dist/proxy/server-auth.js'))
  const {evaluate} = await import(join(root, 'plugins/gw/dist/proxy/acl.js'))
  const {TokenBuckets} = await import(join(root, 'plugins/gw/dist/proxy/limits.js'))
  // The same limiter checks /mcp makes per request: per address before authentication, per user after.
  const byAddress = new TokenBuckets(1e9, 2e9)
  const byUser = new TokenBuckets(1e9, 2e9)
  const tokens = Object.fromEntries(Array.from({length: 50}, (_, i) => [`token-${i}-${'x'.repeat(20)}`, {roles: ['bench'], subject: `user${i}`}]))
  const auth = buildProxyAuth({
    serverAuth: {
      acl: {default: 'deny', roles: {bench: [{access: 'read', server: 'everything'}, {access: '*', deny: true, server: '*', tools: ['toggle-*']}]}, rules: [{policy: 'deny', roles: ['intern'], tools: ['*__delete*']}]},
      bearer: {tokens},
      forwarded: {},
      providers: ['bearer', 'forwarded'],
    },
  }, {env: {}})
  const req = {headers: {authorization: 'Bearer token-49-xxxxxxxxxxxxxxxxxxxx'}, remoteAddress: '127.0.0.1'}
  const fwd = {headers: {'x-forwarded-groups': 'a, bench', 'x-forwarded-user': 'fred'}, remoteAddress: '127.0.0.1'}
  const ref = {access: 'read', server: 'everything', tool: 'get-sum'}
  function perOp(request, n = 200_000) {
    for (let i = 0; i < 20_000; i++) evaluate(auth.acl, auth.chain.authenticate(request).user, ref)
    const t = process.hrtime.bigint()
    for (let i = 0; i < n; i++) {
      if (byAddress.take(request.remoteAddress) !== 0) throw new Error('bench request was rate-limited')
      const r = auth.chain.authenticate(request)
      if (!r.ok || byUser.take(r.user.subject) !== 0 || !evaluate(auth.acl, r.user, ref).allowed) throw new Error('bench request was rejected')
    }
    return Number(process.hrtime.bigint() - t) / 1000 / n
  }
  const bearerUs = perOp(req)
  const forwardedUs = perOp(fwd)

  const f = (x) => x.toFixed(0).padStart(7)
  console.log(`tools/call everything get-sum, ${CLIENTS} concurrent SDK clients, ${SECONDS}s x ${ROUNDS} rounds each`)
  console.log(`  direct to upstream        ${f(d)} calls/s   (${results.direct.map((x) => x.toFixed(0)).join(', ')})`)
  console.log(`  through gw proxy          ${f(p)} calls/s   (${results.proxy.map((x) => x.toFixed(0)).join(', ')})`)
  console.log(`  ratio proxy/direct        ${median(pairRatios).toFixed(2)}x median of ${ROUNDS} pairs (${pairRatios.map((x) => x.toFixed(2)).join(', ')}); of the means ${(p / d).toFixed(2)}x   (target >= 0.85x)`)
  const per = (t, k) => (t[k] / Math.max(1, t.calls)).toFixed(2)
  console.log(`  CPU per call, ms          upstream ${per(cpuTotals.direct, 'upstream')} direct / ${per(cpuTotals.proxy, 'upstream')} proxied; gw proxy process ${per(cpuTotals.proxy, 'proxy')}`)
  console.log(`rate limits + auth + ACL per request: bearer (50 tokens) ${bearerUs.toFixed(2)} us; bearer miss -> forwarded ${forwardedUs.toFixed(2)} us   (target <= 20 us)`)
} finally {
  for (const c of children) c.kill('SIGTERM')
  rmSync(dir, {force: true, recursive: true})
}
