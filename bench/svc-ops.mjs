// svc backup and restore against their plain peers, same run, same 100k-document data directory:
//   full tar.gz backup (`toolkit svc backup`)          vs `tar czf` of the same repository
//   incremental bundle (`--base-commit`)                vs `git bundle create` of the same range
//   restore + reindex of 100k documents                 goal: < 20 s
// Usage: npm run build -w plugins/svc && node bench/svc-ops.mjs [--docs 100000] [--extra 5000]
import {spawnSync} from 'node:child_process'
import {join} from 'node:path'

import {arg, RUN_JS, tempDir} from './svc-common.mjs'
import {buildDataDir} from './svc-fixture.mjs'

const docs = arg('docs', 100_000)
const extra = arg('extra', 5000)

function timed(cmd, args, opts = {}) {
  const t = process.hrtime.bigint()
  const r = spawnSync(cmd, args, {encoding: 'utf8', maxBuffer: 1 << 26, ...opts})
  const s = Number(process.hrtime.bigint() - t) / 1e9
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr}`)
  return {s, stdout: r.stdout}
}
const svc = (args) => timed(process.execPath, [RUN_JS, 'svc', ...args, '--format', 'json'])

const root = tempDir('svc-ops-bench-')
const data = join(root, 'data')
console.log(`building a ${docs}-document data directory (${docs + extra} commits) ...`)
await buildDataDir(data, {commits: docs, docs})
const base = spawnSync('git', ['-C', join(data, 'repo'), 'rev-parse', 'main'], {encoding: 'utf8'}).stdout.trim()
// A second stretch of history for the incremental: `extra` more commits on top of `base`.
spawnSync('git', ['-C', join(data, 'repo'), 'update-ref', 'refs/heads/base-mark', base])
{
  const {makeDoc} = await import('./svc-fixture.mjs')
  const {spawn} = await import('node:child_process')
  const {docPath, parseId} = await import('../plugins/svc/dist/engine/ids.js')
  const child = spawn('git', ['-C', join(data, 'repo'), 'fast-import', '--quiet', '--done'], {stdio: ['pipe', 'ignore', 'inherit']})
  const done = new Promise((r) => child.on('exit', r))
  const t = Math.floor(Date.now() / 1000)
  for (let c = 0; c < extra; c++) {
    const doc = makeDoc(docs + c, 0)
    const body = Buffer.from(`${JSON.stringify(doc, null, 2)}\n`)
    const msg = `put ${doc.id}\n\nSvc-Op: put\nSvc-Id: ${doc.id}\nSvc-Seq: ${docs + c + 1}\nSvc-Time: ${new Date((t + c) * 1000).toISOString()}\n`
    const from = c === 0 ? `from ${base}\n` : ''
    const head = `commit refs/heads/main\ncommitter svc <svc@localhost> ${t + c} +0000\ndata ${Buffer.byteLength(msg)}\n${msg}${from}M 100644 inline ${docPath(parseId(doc.id))}\ndata ${body.length}\n`
    if (!child.stdin.write(Buffer.concat([Buffer.from(head), body, Buffer.from('\n\n')]))) await new Promise((r) => child.stdin.once('drain', r))
  }
  child.stdin.end('done\n')
  await done
  spawnSync('git', ['-C', join(data, 'repo'), 'update-ref', '-d', 'refs/heads/base-mark'])
  spawnSync('git', ['-C', join(data, 'repo'), 'repack', '-a', '-d', '-q'])
}

// Open once so the data directory is in its steady state (config, index) before measuring: as
// after a server has run, the full-text index is saved on disk.
svc(['dump', '--data-dir', data, '--output', join(root, 'warm.json')])
{
  const {reindexDataDir} = await import('../plugins/svc/dist/ops/offline.js')
  await reindexDataDir(data)
}
const {createBackup} = await import('../plugins/svc/dist/ops/api.js')
async function api(fn) {
  const t = process.hrtime.bigint()
  const r = await fn()
  return {r, s: Number(process.hrtime.bigint() - t) / 1e9}
}
const uptime = () => spawnSync('uptime', {encoding: 'utf8'}).stdout.trim()
console.log(`load at start: ${uptime()}`)

const rows = []
const tarPeer = timed('tar', ['czf', join(root, 'peer.tar.gz'), '-C', data, 'repo'])
const tarSvc = svc(['backup', '--data-dir', data, '--output', join(root, 'svc.tar.gz')])
const tarPeer2 = timed('tar', ['czf', join(root, 'peer2.tar.gz'), '-C', data, 'repo'])
const peerTar = (tarPeer.s + tarPeer2.s) / 2
rows.push(['full tar.gz backup', `tar czf: ${peerTar.toFixed(2)} s`, `${tarSvc.s.toFixed(2)} s`, (peerTar / tarSvc.s).toFixed(2), '>= 0.8'])

const bundlePeer = timed('git', ['-C', join(data, 'repo'), 'bundle', 'create', '-q', join(root, 'peer.bundle'), 'main', `^${base}`])
const bundleSvc = svc(['backup', '--data-dir', data, '--format', 'bundle', '--base-commit', base, '--output', join(root, 'inc.bundle')])
const bundlePeer2 = timed('git', ['-C', join(data, 'repo'), 'bundle', 'create', '-q', join(root, 'peer2.bundle'), 'main', `^${base}`])
const peerBundle = (bundlePeer.s + bundlePeer2.s) / 2
rows.push([`incremental bundle (${extra} commits), CLI`, `git bundle create: ${peerBundle.toFixed(2)} s`, `${bundleSvc.s.toFixed(2)} s`, (peerBundle / bundleSvc.s).toFixed(2), '>= 0.8'])
// The CLI's floor: a command's start-up alone (node, oclif, the plugin's command), nothing of
// the backup; the best ratio a CLI run can reach is peer / (peer + start-up).
const startup = svc(['backup', '--help'])
rows.push([`  CLI start-up alone (\`toolkit svc backup --help\`): floor of the CLI ratio`, `${peerBundle.toFixed(2)} s`, `${startup.s.toFixed(2)} s`, (peerBundle / (peerBundle + startup.s)).toFixed(2), '-'])
// The same through the Node API: the operation without the CLI's process start (mean of two).
const bundleApi = await api(() => createBackup({baseCommit: base, dataDir: data, format: 'bundle', output: join(root, 'inc-api.bundle')}))
const bundleApi2 = await api(() => createBackup({baseCommit: base, dataDir: data, format: 'bundle', output: join(root, 'inc-api2.bundle')}))
const apiBundle = (bundleApi.s + bundleApi2.s) / 2
rows.push([`incremental bundle (${extra} commits), Node API createBackup`, `git bundle create: ${peerBundle.toFixed(2)} s`, `${apiBundle.toFixed(2)} s`, (peerBundle / apiBundle).toFixed(2), '>= 0.8'])
const fullBundle = svc(['backup', '--data-dir', data, '--format', 'bundle', '--output', join(root, 'full.bundle')])

const restore = svc(['restore', '--input', join(root, 'svc.tar.gz'), '--data-dir', join(root, 'restored')])
const restored = JSON.parse(restore.stdout.trim().split('\n').at(-1))
rows.push([`restore of the tar.gz + index catch-up (${restored.indexDocuments} documents indexed)`, '-', `${restore.s.toFixed(2)} s`, '-', '< 20 s'])
const restoreB = svc(['restore', '--input', join(root, 'full.bundle'), '--data-dir', join(root, 'restored-b')])
const restoredB = JSON.parse(restoreB.stdout.trim().split('\n').at(-1))
rows.push([`restore of a full bundle + index rebuilt from nothing (${restoredB.indexDocuments} documents; bundle written in ${fullBundle.s.toFixed(2)} s)`, '-', `${restoreB.s.toFixed(2)} s`, '-', '< 20 s'])

console.log(`load at end: ${uptime()}`)
console.log('| what | peer, same run | svc | ratio | goal |\n|---|---|---|---|---|')
for (const r of rows) console.log(`| ${r.join(' | ')} |`)
