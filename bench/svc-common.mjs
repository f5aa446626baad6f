// Shared helpers of the bench/svc-* scripts: start the built `toolkit svc server`, drive it with
// keep-alive HTTP clients, and report figures next to the peer measured in the same run.
import {spawn, spawnSync} from 'node:child_process'
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {Agent, request} from 'node:http'
import {createServer} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

export const RUN_JS = fileURLToPath(new URL('../bin/run.js', import.meta.url))
export const IDS_JS = new URL('../plugins/svc/dist/engine/ids.js', import.meta.url)

const dirs = []
const children = []
export function tempDir(prefix = 'svc-bench-') {
  const d = mkdtempSync(join(tmpdir(), prefix))
  dirs.push(d)
  return d
}
process.on('exit', () => {
  // A bench that fails midway must not leave a server running on a deleted directory.
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL')
  for (const d of dirs) rmSync(d, {force: true, recursive: true})
})

export function arg(name, def) {
  const i = process.argv.indexOf(`--${name}`)
  return i === -1 ? def : Number(process.argv[i + 1])
}

const others = {pg: ['--disable-rest', '--disable-redis'], redis: ['--disable-rest', '--disable-sql'], rest: ['--disable-redis', '--disable-sql']}
const portFlag = {pg: '--pg-port', redis: '--redis-port', rest: '--http-port'}

/** Extra node flags for the server, e.g. SVC_BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" (node refuses --cpu-prof in NODE_OPTIONS). */
const serverNodeArgs = (process.env.SVC_BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean)

/**
 * Starts the built server with one protocol on a free port (REST unless `protocol` says `redis`
 * or `pg`); resolves {child, port, stop()} once it listens.
 */
export function startServer(dataDir, extra = [], protocol = 'rest', runJs = RUN_JS) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...serverNodeArgs, runJs, 'svc', 'server', '--format', 'json', '--data-dir', dataDir, portFlag[protocol], '0', ...others[protocol], '--log-level', 'warn', ...extra], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    children.push(child)
    let out = ''
    child.stdout.on('data', (d) => {
      out += d
      const nl = out.indexOf('\n')
      if (nl === -1) return
      const ready = JSON.parse(out.slice(0, nl))
      resolve({
        child,
        port: ready[protocol],
        stop: () => new Promise((r) => {
          child.once('exit', r)
          child.kill('SIGTERM')
        }),
      })
    })
    child.once('exit', (code) => reject(new Error(`server exited ${code}`)))
  })
}

export const agent = new Agent({keepAlive: true, maxSockets: 256})

/** One HTTP request over the shared keep-alive agent; resolves {status, body}. */
export function http(port, method, path, body) {
  return new Promise((resolve, reject) => {
    const req = request({agent, headers: body ? {'content-length': Buffer.byteLength(body), 'content-type': 'application/json'} : {}, host: '127.0.0.1', method, path, port}, (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => resolve({body: Buffer.concat(chunks).toString(), status: res.statusCode}))
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** Runs `fn(i)` for i in [0, total) with `concurrency` workers; returns latencies in ms. */
export async function drive(total, concurrency, fn) {
  let next = 0
  const lat = new Array(total)
  const worker = async () => {
    for (;;) {
      const i = next++
      if (i >= total) return
      const t = performance.now()
      await fn(i)
      lat[i] = performance.now() - t
    }
  }
  await Promise.all(Array.from({length: concurrency}, worker))
  return lat
}

export function pct(values, p) {
  const s = [...values].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}

export async function pendingEntries(port) {
  const r = await http(port, 'GET', '/metrics')
  return Number(/^svc_wal_pending_entries (\d+)/m.exec(r.body)[1])
}

/** A TCP port free on loopback right now, for a peer server that cannot bind port 0. */
export function freePort() {
  return new Promise((resolve) => {
    const s = createServer()
    s.listen(0, '127.0.0.1', () => {
      const {port} = s.address()
      s.close(() => resolve(port))
    })
  })
}

export function gitInitBare(dir) {
  spawnSync('git', ['init', '--bare', '-q', dir])
}

/** The malloc setting svc starts its own fast-import with (plugins/svc/src/engine/writer.ts). */
export const TUNED_MALLOC = 'glibc.malloc.trim_threshold=33554432'

/**
 * The write peer: raw `git fast-import`, one commit per document, in svc's tree layout, into a
 * fresh bare repository. `docFor(i)` gives document i (1-based). Resolves commits per second.
 * `tuned: true` gives it the same malloc setting svc's own fast-import runs with; `onCpu(seconds)`
 * receives fast-import's CPU time (user + system) per commit.
 */
export async function rawFastImport(n, docFor, {onCpu, tuned = false} = {}) {
  const {docPath, parseId} = await import(IDS_JS)
  const repo = join(tempDir(), 'peer.git')
  gitInitBare(repo)
  const t0 = performance.now()
  const env = tuned ? {...process.env, GLIBC_TUNABLES: TUNED_MALLOC} : process.env
  // bash's `times` reports the CPU fast-import used (its children's user and system time).
  const child = spawn('bash', ['-c', 'git -C "$0" fast-import --quiet --done; s=$?; times >&2; exit $s', repo], {env, stdio: ['pipe', 'ignore', 'pipe']})
  let err = ''
  child.stderr.on('data', (d) => (err += d))
  const done = new Promise((r) => child.on('exit', r))
  const now = Math.floor(Date.now() / 1000)
  for (let i = 1; i <= n; i++) {
    const d = docFor(i)
    const body = Buffer.from(`${JSON.stringify(d, null, 2)}\n`)
    const msg = `put ${d.id}\n`
    const chunk = `commit refs/heads/main\ncommitter svc <svc@localhost> ${now} +0000\ndata ${msg.length}\n${msg}M 100644 inline ${docPath(parseId(d.id))}\ndata ${body.length}\n`
    if (!child.stdin.write(Buffer.concat([Buffer.from(chunk), body, Buffer.from('\n\n')]))) await new Promise((r) => child.stdin.once('drain', r))
  }
  child.stdin.end('done\n')
  const code = await done
  if (code !== 0) throw new Error(`git fast-import failed: ${err}`)
  const times = [...err.trim().split('\n').at(-1).matchAll(/(\d+)m([\d.]+)s/g)].map((m) => Number(m[1]) * 60 + Number(m[2]))
  onCpu?.((times[0] + times[1]) / n)
  return n / ((performance.now() - t0) / 1000)
}

/** CPU seconds (user + system) a process and its waited-for children used so far, from /proc (Linux). */
export function cpuSeconds(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const v = f.slice(f.lastIndexOf(')') + 2).split(' ').map(Number)
  // Fields 14-17 (utime, stime, cutime, cstime) are at 11-14 after the name; clock ticks of 1/100 s.
  return (v[11] + v[12] + v[13] + v[14]) / 100
}

/** Pids of the direct children of `pid` (Linux). */
export function childPids(pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    return []
  }
}

export function line(label, value) {
  console.log(`${label.padEnd(52)} ${value}`)
}

/** True when the `wrk` HTTP load generator (Debian package wrk) is installed. */
export function haveWrk() {
  return spawnSync('wrk', ['--version']).error === undefined
}

/**
 * Runs wrk with a Lua script for `seconds`; resolves {requests, rps, p50, p99} (ms). wrk is a C
 * load generator: it leaves the CPU to the servers far more than a Node client would.
 */
export function wrk(port, lua, {connections = 32, seconds = 5, threads = 1} = {}) {
  const script = join(tempDir('svc-wrk-'), 'script.lua')
  writeFileSync(script, `${lua}
done = function(summary, latency, requests)
  io.write(string.format("RESULT %d %d %d %f %f %d\\n", summary.requests, summary.duration, summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, latency:percentile(50), latency:percentile(99), summary.errors.status))
end
`)
  return new Promise((resolve, reject) => {
    const child = spawn('wrk', ['-t', String(threads), '-c', String(connections), '-d', `${seconds}s`, '--timeout', '30s', '--latency', '-s', script, `http://127.0.0.1:${port}`], {stdio: ['ignore', 'pipe', 'inherit']})
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.on('exit', () => {
      const m = /RESULT (\d+) (\d+) (\d+) ([\d.]+) ([\d.]+) (\d+)/.exec(out)
      if (!m) return reject(new Error(`wrk output not understood: ${out}`))
      const [requests, durationUs, errors, p50, p99, statusErrors] = m.slice(1).map(Number)
      resolve({errors, p50: p50 / 1000, p99: p99 / 1000, statusErrors, requests, rps: requests / (durationUs / 1e6)})
    })
  })
}
