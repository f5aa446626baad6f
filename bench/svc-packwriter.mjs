#!/usr/bin/env node
// The Git writer alone: the same stream of N one-document commits (svc-write's documents, svc's
// commit message and author, the engine's four-level layout, a checkpoint every 2,000 commits as
// under a sustained stream) written by (a) svc's CommitWriter, i.e. tuned `git fast-import --force`
// with writer.ts's GLIBC_TUNABLES, and (b) the in-process pack writer (engine/pack-writer/), each
// in a child process of its own. Prints CPU per commit (fast-import's process; the pack writer's
// worker thread plus its git cat-file and update-ref), the engine-thread CPU of each (documents and
// the stream's encoding), pack bytes per commit, and whether both left the same head commit.
// Usage: node bench/svc-packwriter.mjs [--commits 20000] [--existing 0|100000] [--rounds 2] [--fixture DIR] [--build DIR]
//   --existing N: write into a copy of a repository already holding N documents of the same
//   table (built once with bench/svc-fixture.mjs, kept in --fixture DIR when given).
// Growth of the pack writer alone, from an empty repository to N documents (issue 26, 1M):
//   node bench/svc-packwriter.mjs --growth 1000000 [--block 100000] [--ab OTHER_CHECKOUT] [--rounds 1]
//   Per block: the worker thread's CPU per commit, its V8 heap, the child's RSS, trees read back
//   from the packs and the tree cache's estimate; with --ab the other checkout's build runs the
//   same stream, alternating which goes first. SVC_PACKWRITER_PROFILE=DIR profiles the worker.
import {execFileSync, spawn} from 'node:child_process'
import {existsSync, readdirSync, readFileSync, statSync} from 'node:fs'
import {join, resolve} from 'node:path'
import {fileURLToPath} from 'node:url'

import {arg, line, tempDir} from './svc-common.mjs'

const CHECKPOINT_EVERY = 2000
const here = fileURLToPath(import.meta.url)
/** The growth mode's previous block (declared before the top-level await that runs the child). */
let lastBlock = {commits: 0, cpu: 0, loads: 0, t: performance.now()}

if (process.argv[2] === '--child') await child()
else if (process.argv.includes('--growth')) await growth()
else await main()

function argText(name, def) {
  const i = process.argv.indexOf(`--${name}`)
  return i === -1 ? def : process.argv[i + 1]
}

/** CPU seconds of this process: [all threads, waited-for children] (Linux /proc, 1/100 s ticks). */
function selfCpu() {
  const f = readFileSync('/proc/self/stat', 'utf8')
  const v = f.slice(f.lastIndexOf(')') + 2).split(' ').map(Number)
  return {children: (v[13] + v[14]) / 100, self: (v[11] + v[12]) / 100}
}

async function child() {
  const [, , , kind, repo, distDir, nText, table] = process.argv
  const n = Number(nText)
  const {docPath, parseId} = await import(join(distDir, 'engine/ids.js'))
  const Writer = kind === 'fi' ? (await import(join(distDir, 'engine/writer.js'))).CommitWriter : (await import(join(distDir, 'engine/pack-writer/commit-writer.js'))).PackCommitWriter
  const branches = new Set(execFileSync('git', ['-C', repo, 'for-each-ref', '--format=%(refname:short)', 'refs/heads/'], {encoding: 'utf8'}).split('\n').filter(Boolean))
  const w = new Writer(repo, () => branches, 'svc <svc@localhost>')
  const pad = 'x'.repeat(150)
  const t0 = Date.UTC(2026, 10, 29, 6, 0, 0)
  const block = Number(process.env.SVC_PW_BLOCK ?? 0)
  const cpu0 = selfCpu()
  const start = performance.now()
  for (let i = 1; i <= n; i++) {
    const id = `${table}:t0-${i}`
    const body = Buffer.from(`${JSON.stringify({id, n: i, text: `${id} ${pad}`}, null, 2)}\n`)
    const time = t0 + i
    const message = `put ${id}\n\nSvc-Op: put\nSvc-Id: ${id}\nSvc-Seq: ${i}\nSvc-Time: ${new Date(time).toISOString()}\nSvc-Origin: rest\n`
    const more = w.commit({authorName: 'rest', branch: 'main', files: [{content: body, dirEntries: 0, path: docPath(parseId(id))}], message, time})
    if (i % CHECKPOINT_EVERY === 0) {
      await w.checkpoint()
      if (block > 0 && i % block === 0) await reportBlock(w, i)
    }
    else if (!more) await w.drain()
    // Let the event loop turn now and then, as the engine's does between requests.
    if (i % 64 === 0) await new Promise((r) => setImmediate(r))
  }
  await w.checkpoint()
  const worker = kind === 'pw' ? await w.stats() : undefined
  await w.close()
  const seconds = (performance.now() - start) / 1000
  const cpu1 = selfCpu()
  const out = {
    children: cpu1.children - cpu0.children,
    seconds,
    self: cpu1.self - cpu0.self,
    worker: worker?.cpu ?? 0,
    workerStats: worker?.stats,
  }
  process.stdout.write(`${JSON.stringify(out)}\n`)
  process.exit(0)
}

/** One block's figures of the growth mode, a JSON line on stderr: since the last block's. */
async function reportBlock(w, i) {
  const s = await w.stats()
  const status = readFileSync('/proc/self/status', 'utf8')
  const rssMB = Number(/VmRSS:\s+(\d+)/.exec(status)[1]) / 1024
  const n = i - lastBlock.commits
  const t = performance.now()
  const out = {
    cacheMB: s.stats.treeCacheBytes / 2 ** 20,
    commits: i,
    heapMB: s.heapBytes === undefined ? undefined : s.heapBytes / 2 ** 20,
    loadsPerCommit: (s.stats.treeLoads - lastBlock.loads) / n,
    rate: n / ((t - lastBlock.t) / 1000),
    rssMB,
    workerUs: ((s.cpu - lastBlock.cpu) / n) * 1e6,
  }
  lastBlock = {commits: i, cpu: s.cpu, loads: s.stats.treeLoads, t}
  process.stderr.write(`BLOCK ${JSON.stringify(out)}\n`)
}

/** `--growth N`: the pack writer alone from an empty repository to N documents, per block, optionally against another build. */
async function growth() {
  const n = arg('growth', 1_000_000)
  const block = arg('block', 100_000)
  const rounds = arg('rounds', 1)
  const self = resolve(fileURLToPath(new URL('..', import.meta.url)))
  const builds = [self]
  const other = argText('ab', undefined)
  if (other) builds.push(resolve(other))
  console.log(`load average at start: ${readFileSync('/proc/loadavg', 'utf8').trim()} (${new Date().toISOString()})`)
  const blocks = new Map(builds.map((b) => [b, []]))
  for (let r = 0; r < rounds; r++) {
    for (const build of r % 2 === 0 ? builds : [...builds].reverse()) {
      const dir = tempDir('svc-pw-growth-')
      const repo = join(dir, 'repo')
      execFileSync('git', ['init', '--bare', '-q', repo])
      execFileSync('git', ['-C', repo, 'symbolic-ref', 'HEAD', 'refs/heads/main'])
      const rows = await new Promise((res, rej) => {
        const c = spawn(process.execPath, [here, '--child', 'pw', repo, join(build, 'plugins/svc/dist'), String(n), 'bench'], {
          env: {...process.env, SVC_PW_BLOCK: String(block)},
          stdio: ['ignore', 'pipe', 'pipe'],
        })
        const got = []
        let err = ''
        c.stderr.on('data', (d) => {
          err += d
          let nl
          while ((nl = err.indexOf('\n')) !== -1) {
            const l = err.slice(0, nl)
            err = err.slice(nl + 1)
            if (l.startsWith('BLOCK ')) {
              const b = JSON.parse(l.slice(6))
              got.push(b)
              const f = (x, d = 0) => (x === undefined ? '-' : x.toFixed(d))
              line(`${build === self ? 'this' : 'other'} r${r + 1} ${b.commits}`, `worker ${f(b.workerUs, 1)} us/commit, ${f(b.rate)} commits/s, heap ${f(b.heapMB)} MB, rss ${f(b.rssMB)} MB, cache ${f(b.cacheMB)} MB, trees read ${f(b.loadsPerCommit, 3)}/commit (load ${readFileSync('/proc/loadavg', 'utf8').split(' ')[0]})`)
            } else process.stderr.write(`${l}\n`)
          }
        })
        c.stdout.on('data', () => {})
        c.on('exit', (code) => (code === 0 ? res(got) : rej(new Error(`child exited ${code}`))))
      })
      blocks.get(build).push(rows)
      // Both builds must write the same objects: the same head commit, and how many bytes they took.
      const head = execFileSync('git', ['-C', repo, 'rev-parse', 'main'], {encoding: 'utf8'}).trim()
      line(`${build === self ? 'this' : 'other'} r${r + 1} head`, `${head}, ${(packBytes(repo) / n).toFixed(0)} pack bytes per commit`)
      execFileSync('rm', ['-rf', dir])
    }
  }
  console.log(`load average at end: ${readFileSync('/proc/loadavg', 'utf8').trim()} (${new Date().toISOString()})`)
  if (other) {
    const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]
    const per = (b) => blocks.get(b)[0].map((_, k) => median(blocks.get(b).map((rows) => rows[k].workerUs)))
    const a = per(self)
    const o = per(resolve(other))
    line('worker CPU per commit, this / other, per block', a.map((x, k) => (x / o[k]).toFixed(2)).join(' '))
  }
  process.exit(0)
}

function packBytes(repo) {
  const dir = join(repo, 'objects', 'pack')
  let total = 0
  for (const f of readdirSync(dir)) if (f.endsWith('.pack')) total += statSync(join(dir, f)).size
  return total
}

function runChild(kind, repo, distDir, n, table) {
  return new Promise((res, rej) => {
    const env = {...process.env}
    const c = spawn(process.execPath, [here, '--child', kind, repo, distDir, String(n), table], {env, stdio: ['ignore', 'pipe', 'inherit']})
    let out = ''
    c.stdout.on('data', (d) => (out += d))
    c.on('exit', (code) => (code === 0 ? res(JSON.parse(out)) : rej(new Error(`${kind} child exited ${code}`))))
  })
}

async function main() {
  const commits = arg('commits', 20_000)
  const existing = arg('existing', 0)
  const rounds = arg('rounds', 2)
  const build = resolve(argText('build', fileURLToPath(new URL('..', import.meta.url))))
  const distDir = join(build, 'plugins/svc/dist')
  let fixture
  if (existing > 0) {
    fixture = argText('fixture', undefined) ?? tempDir('svc-pw-fixture-')
    if (!existsSync(join(fixture, 'repo'))) {
      const {buildDataDir} = await import('./svc-fixture.mjs')
      const t = performance.now()
      await buildDataDir(fixture, {commits: existing, docs: existing})
      console.log(`fixture of ${existing} documents built in ${((performance.now() - t) / 1000).toFixed(1)} s: ${fixture}`)
    }
  }
  // New documents of the fixture's table (items), so each commit loads trees the repository holds.
  const table = existing > 0 ? 'items' : 'bench'
  console.log(`load average at start: ${readFileSync('/proc/loadavg', 'utf8').trim()}`)
  const results = {fi: [], pw: []}
  for (let r = 0; r < rounds; r++) {
    const heads = {}
    for (const kind of r % 2 === 0 ? ['fi', 'pw'] : ['pw', 'fi']) {
      const dir = tempDir('svc-pw-')
      const repo = join(dir, 'repo')
      if (fixture) execFileSync('cp', ['-a', join(fixture, 'repo'), repo])
      else {
        execFileSync('git', ['init', '--bare', '-q', repo])
        execFileSync('git', ['-C', repo, 'symbolic-ref', 'HEAD', 'refs/heads/main'])
      }
      const before = packBytes(repo)
      const res = await runChild(kind, repo, distDir, commits, table)
      res.packBytes = packBytes(repo) - before
      heads[kind] = execFileSync('git', ['-C', repo, 'rev-parse', 'main'], {encoding: 'utf8'}).trim()
      if (r === 0 && kind === 'pw') execFileSync('git', ['-C', repo, 'fsck', '--full', '--strict', '--no-dangling'], {stdio: 'ignore'})
      results[kind].push(res)
      const us = (s) => ((s / commits) * 1e6).toFixed(1)
      const writerCpu = kind === 'fi' ? res.children : res.worker + res.children
      const mainCpu = kind === 'fi' ? res.self : res.self - res.worker
      line(`round ${r + 1} ${kind === 'fi' ? 'tuned fast-import' : 'pack writer'}`, `${us(writerCpu)} us writer CPU per commit${kind === 'pw' ? ` (worker ${us(res.worker)} + git ${us(res.children)})` : ''}, engine thread ${us(mainCpu)} us, ${(res.packBytes / commits).toFixed(0)} pack bytes per commit, ${(commits / res.seconds).toFixed(0)} commits/s`)
      if (res.workerStats) line('', `objects ${res.workerStats.objects}, tree deltas ${res.workerStats.treeDeltas}, trees loaded ${res.workerStats.treeLoads}, packs ${res.workerStats.packs}`)
    }
    line(`round ${r + 1} same head commit`, heads.fi === heads.pw ? `yes (${heads.fi.slice(0, 12)})` : `NO: ${heads.fi} / ${heads.pw}`)
  }
  const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]
  const fiCpu = median(results.fi.map((x) => x.children))
  const pwCpu = median(results.pw.map((x) => x.worker + x.children))
  const fiMain = median(results.fi.map((x) => x.self))
  const pwMain = median(results.pw.map((x) => x.self - x.worker))
  const fiBytes = median(results.fi.map((x) => x.packBytes))
  const pwBytes = median(results.pw.map((x) => x.packBytes))
  console.log(`load average at end: ${readFileSync('/proc/loadavg', 'utf8').trim()}`)
  line(`commits, existing documents`, `${commits}, ${existing}`)
  line('ratio writer CPU per commit, pack writer / fast-import', (pwCpu / fiCpu).toFixed(2))
  line('ratio writer + engine thread CPU, pack writer / fast-import', ((pwCpu + pwMain) / (fiCpu + fiMain)).toFixed(2))
  line('ratio pack bytes, pack writer / fast-import', (pwBytes / fiBytes).toFixed(2))
  process.exit(0)
}
