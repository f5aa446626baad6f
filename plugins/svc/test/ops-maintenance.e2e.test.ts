import {expect} from 'chai'
import {execFile} from 'node:child_process'
import {existsSync} from 'node:fs'
import {join} from 'node:path'
import {promisify} from 'node:util'

import {openEngine} from '../src/engine/index.js'
import {createBackup, exportSnapshot, exportToDirectory, importSnapshot, restoreBackup} from '../src/index.js'
import {runCli, startServer, type Started} from './helpers/cli.js'
import {cleanupTempDirs, gitOut, tempDir} from './helpers/tmp.js'

const exec = promisify(execFile)

async function json(args: string[]): Promise<Record<string, unknown>> {
  const r = await runCli([...args, '--format', 'json'], {timeoutMs: 120_000})
  expect(r.code, `${args.join(' ')}: ${r.stderr}`).to.equal(0)
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>
}

async function seed(dir: string): Promise<void> {
  const db = await openEngine(dir)
  for (let i = 0; i < 40; i++) await db.put({id: `t:${i}`, text: `doc ${i} walrus`})
  await db.createBranch('dev')
  for (let i = 0; i < 20; i++) await db.put({id: `d:${i}`, text: `dev ${i} narwhal`}, {branch: 'dev'})
  await db.close()
}

describe('toolkit svc snapshots, compact, remove-branch (built CLI) and the Node API', function () {
  this.timeout(300_000)
  let s: Started | undefined

  after(() => {
    if (s && s.child.exitCode === null) s.child.kill('SIGKILL')
    cleanupTempDirs()
  })

  it('export-snapshot of chosen refs, import-snapshot into another database: same documents, history and search; bad input refused', async () => {
    const root = tempDir()
    const a = join(root, 'a')
    await seed(a)
    const snap = await json(['svc', 'export-snapshot', '--data-dir', a, '--output', join(root, 'dev.bundle'), '--refs', 'dev'])
    expect((snap.refs as Array<{name: string}>).map((r) => r.name)).to.deep.equal(['refs/heads/dev'])
    const b = join(root, 'b')
    const other = await openEngine(b)
    await other.put({id: 'x:1', text: 'unrelated'})
    await other.close()
    const imported = await json(['svc', 'import-snapshot', '--data-dir', b, '--input', String(snap.path), '--verify'])
    expect(imported.imported).to.deep.equal([{commit: gitOut(join(a, 'repo'), ['rev-parse', 'dev']).trim(), name: 'refs/heads/dev', previous: null}])
    const da = await openEngine(a)
    const db = await openEngine(b)
    await db.reindex()
    expect((await db.list({branch: 'dev', limit: 1000})).docs).to.deep.equal((await da.list({branch: 'dev', limit: 1000})).docs)
    expect(await db.history('d:3', {branch: 'dev'})).to.deep.equal(await da.history('d:3', {branch: 'dev'}))
    expect((await db.search('narwhal', {branch: 'dev', limit: 100})).total).to.equal(20)
    expect(await db.get('x:1')).to.deep.equal({id: 'x:1', text: 'unrelated'})
    await da.put({id: 'd:99', text: 'later'}, {branch: 'dev'})
    await db.put({id: 'd:100', text: 'diverged'}, {branch: 'dev'})
    await da.close()
    await db.close()
    await exec('git', ['-C', join(b, 'repo'), 'fsck', '--full', '--no-progress'])

    // A newer snapshot would drop b's own commit on dev: refused, nothing moves.
    const newer = await json(['svc', 'export-snapshot', '--data-dir', a, '--output', join(root, 'dev2.bundle'), '--refs', 'dev'])
    const before = gitOut(join(b, 'repo'), ['rev-parse', 'dev'])
    let r = await runCli(['svc', 'import-snapshot', '--data-dir', b, '--input', String(newer.path)])
    expect(r.code).to.equal(1)
    expect(r.stderr).to.include('importing would drop commits')
    expect(gitOut(join(b, 'repo'), ['rev-parse', 'dev'])).to.equal(before)
    r = await runCli(['svc', 'import-snapshot', '--data-dir', b, '--input', join(root, 'missing.bundle')])
    expect(r.code).to.equal(1)
    expect(r.stderr).to.include('does not exist')
    r = await runCli(['svc', 'export-snapshot', '--data-dir', a, '--output', join(root, 'n.bundle'), '--refs', 'nope'])
    expect(r.code).to.equal(1)
    expect(r.stderr).to.include('no such branch: nope')
  })

  it('remove-branch drops the ref and its index partition (main refused); compact reports bytes and keeps everything reachable, with and without a server', async () => {
    const root = tempDir()
    const dir = join(root, 'data')
    await seed(dir)
    let r = await runCli(['svc', 'remove-branch', '--data-dir', dir, '--name', 'main'])
    expect(r.code).to.equal(2)
    expect(r.stderr).to.include('main cannot be removed')
    expect(existsSync(join(dir, 'index', 'dev'))).to.equal(true)
    const removed = await json(['svc', 'remove-branch', '--data-dir', dir, '--name', 'dev'])
    expect(removed).to.include({name: 'dev', removed: true})
    expect(gitOut(join(dir, 'repo'), ['for-each-ref', '--format=%(refname)', 'refs/heads/']).trim()).to.equal('refs/heads/main')
    expect(existsSync(join(dir, 'index', 'dev'))).to.equal(false)
    r = await runCli(['svc', 'remove-branch', '--data-dir', dir, '--name', 'dev'])
    expect(r.code).to.equal(1)
    expect(r.stderr).to.include('does not exist')

    const c = await json(['svc', 'server', '--data-dir', dir, '--command', 'compact'])
    expect(c).to.include({mode: 'gc', packsAfter: 1})
    expect(Number(c.bytesAfter)).to.be.below(Number(c.bytesBefore))
    await exec('git', ['-C', join(dir, 'repo'), 'fsck', '--full', '--no-progress'])

    s = await startServer(['--data-dir', dir, '--http-port', '0', '--disable-redis', '--disable-sql', '--log-level', 'warn'])
    const rest = `http://127.0.0.1:${s.ready.rest}`
    await fetch(`${rest}/api/v1/branches`, {body: '{"name": "tmp"}', method: 'POST'})
    const writes = Array.from({length: 50}, (_, i) => fetch(`${rest}/api/v1/documents/w:${i}`, {body: JSON.stringify({text: `w ${i}`}), method: 'PUT'}))
    const live = await json(['svc', 'compact', '--data-dir', dir])
    expect(live).to.include({mode: 'repack'})
    expect((await Promise.all(writes)).every((w) => w.status === 200)).to.equal(true)
    expect(await json(['svc', 'server', '--data-dir', dir, '--command', 'remove-branch', '--name', 'tmp'])).to.include({removed: true})
    const branches = (await (await fetch(`${rest}/api/v1/branches`)).json()) as {branches: Array<{name: string}>}
    expect(branches.branches.map((b) => b.name)).to.deep.equal(['main'])
    s.child.kill('SIGTERM')
    expect((await s.exited).code).to.equal(0)
    const db = await openEngine(dir, {fullText: false})
    expect(await db.count()).to.equal(90)
    await db.close()
    await exec('git', ['-C', join(dir, 'repo'), 'fsck', '--full', '--no-progress'])
  })

  it('the Node API: createBackup, restoreBackup, exportSnapshot, importSnapshot, exportToDirectory', async () => {
    const root = tempDir()
    const dir = join(root, 'data')
    await seed(dir)
    const m = await createBackup({dataDir: dir, format: 'bundle', output: join(root, 'full.bundle')})
    expect(m).to.include({format: 'bundle', kind: 'backup', type: 'full'})
    const restored = await restoreBackup({dataDir: join(root, 'r'), input: m.path})
    expect(restored).to.include({documents: 40, indexDocuments: 40, type: 'full'})
    const snap = await exportSnapshot({dataDir: dir, output: join(root, 'dev.bundle'), refs: ['dev']})
    const fresh = join(root, 'fresh')
    const e = await openEngine(fresh)
    await e.put({id: 'q:1'})
    await e.close()
    const imp = await importSnapshot({dataDir: fresh, input: snap.path})
    expect(imp.imported.map((u) => u.name)).to.deep.equal(['refs/heads/dev'])
    const out = await exportToDirectory({branch: 'dev', dataDir: dir, output: join(root, 'files')})
    expect(out.documents).to.equal(60)
    const {stdout} = await exec('find', [out.output, '-name', '*.json'])
    expect(stdout.trim().split('\n')).to.have.length(60)
  })
})
