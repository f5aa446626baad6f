import {expect} from 'chai'
import {execFileSync, spawnSync} from 'node:child_process'
import {randomBytes} from 'node:crypto'
import {chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {openEngine} from '../src/engine/index.js'
import {runCli, startServer, type Started} from './helpers/cli.js'
import {cleanupTempDirs, gitOut, tempDir} from './helpers/tmp.js'

// The spec's error table, through the built CLI: each case names the cause and the remedy, exits
// non-zero where a command ends, keeps a server up where it can, and loses nothing acknowledged.

async function seed(dir: string, n = 20, branch?: string): Promise<void> {
  const db = await openEngine(dir, {fullText: false})
  if (branch) {
    await db.put({id: 'm:0', text: 'on main'})
    await db.createBranch(branch)
  }
  for (let i = 0; i < n; i++) await db.put({id: `t:${i}`, text: `doc ${i} ${branch ?? 'main'} walrus`}, {branch})
  await db.close()
}

/** A tmpfs of `mb` megabytes, or undefined when this process may not mount one (not root). */
function smallDisk(mb: number): string | undefined {
  const dir = tempDir('svc-disk-')
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${mb}m`, 'tmpfs', dir])
  return r.status === 0 ? dir : undefined
}

describe('svc error table (built CLI)', function () {
  this.timeout(300_000)
  const mounts: string[] = []
  let s: Started | undefined

  afterEach(async () => {
    if (s && s.child.exitCode === null) {
      s.child.kill('SIGKILL')
      await s.exited
    }
    s = undefined
  })
  after(() => {
    for (const m of mounts) spawnSync('umount', ['-l', m])
    cleanupTempDirs()
  })

  it('disk full: a backup onto a full disk fails with "No space left on device" and the remedy, leaving no partial file', async function () {
    const disk = smallDisk(1)
    if (!disk) this.skip()
    mounts.push(disk!)
    const data = join(tempDir(), 'data')
    const db = await openEngine(data, {fullText: false})
    // Distinct, incompressible-enough documents so the archive is larger than the 1 MB disk.
    for (let i = 0; i < 400; i++) await db.put({id: `t:${i}`, text: randomBytes(3000).toString('hex')})
    await db.close()
    const r = await runCli(['svc', 'backup', '--data-dir', data, '--output', join(disk!, 'full.tar.gz')], {timeoutMs: 120_000})
    expect(r.code).to.equal(1)
    expect(r.stderr).to.include('No space left on device')
    expect(r.stderr).to.include('svc compact')
    expect(readdirSync(disk!)).to.deep.equal([])
    // A quiet data directory is archived in place (no staged copy); any temporary files must be gone.
    expect(existsSync(join(data, '.ops')) ? readdirSync(join(data, '.ops')) : []).to.deep.equal([])
  })

  it('disk full under a running server: writes are refused with the cause and remedy, reads go on, and every acknowledged write survives', async function () {
    const disk = smallDisk(4)
    if (!disk) this.skip()
    mounts.push(disk!)
    const data = join(disk!, 'data')
    s = await startServer(['--data-dir', data, '--http-port', '0', '--disable-redis', '--disable-sql', '--log-level', 'error'])
    const rest = `http://127.0.0.1:${s.ready.rest}`
    const acked: number[] = []
    let refusal: {code: string; message: string} | undefined
    for (let i = 0; i < 2000 && !refusal; i++) {
      const res = await fetch(`${rest}/api/v1/documents/f:${i}`, {body: JSON.stringify({i, pad: `${i}`.repeat(4000)}), method: 'PUT'})
      if (res.ok) acked.push(i)
      else refusal = ((await res.json()) as {error: {code: string; message: string}}).error
    }
    expect(refusal, 'the disk never filled up').to.not.equal(undefined)
    expect(refusal!.code).to.equal('unavailable')
    expect(refusal!.message).to.match(/No space left on device|ENOSPC/)
    expect(refusal!.message).to.include('svc compact')
    expect(acked.length).to.be.greaterThan(10)
    // The process stays up and serves what it acknowledged.
    const read = await fetch(`${rest}/api/v1/documents/f:${acked[0]}`)
    expect(read.status).to.equal(200)
    s.child.kill('SIGKILL')
    await s.exited
    // Room again (the remedy), then a restart replays the log: nothing acknowledged is lost.
    execFileSync('mount', ['-o', 'remount,size=64m', disk!])
    s = await startServer(['--data-dir', data, '--http-port', '0', '--disable-redis', '--disable-sql', '--log-level', 'error'])
    const rest2 = `http://127.0.0.1:${s.ready.rest}`
    for (const i of acked) expect((await fetch(`${rest2}/api/v1/documents/f:${i}`)).status, `f:${i}`).to.equal(200)
    expect((await fetch(`${rest2}/api/v1/documents/f:next`, {body: '{"ok": true}', method: 'PUT'})).ok).to.equal(true)
    s.child.kill('SIGTERM')
    await s.exited
    execFileSync('git', ['-C', join(data, 'repo'), 'fsck', '--full', '--no-progress'])
  })

  it('corrupt repository: backups name the damaged object and the remedy (git fsck --full, restore a backup)', async () => {
    const data = join(tempDir(), 'data')
    await seed(data)
    const repo = join(data, 'repo')
    const tree = gitOut(repo, ['rev-parse', 'main^{tree}']).trim()
    // Every object loose, so the tree can be damaged alone.
    const packDir = join(repo, 'objects', 'pack')
    for (const f of readdirSync(packDir).filter((x) => x.endsWith('.pack'))) {
      const bytes = readFileSync(join(packDir, f))
      for (const x of readdirSync(packDir).filter((y) => y.startsWith(f.slice(0, -5)))) rmSync(join(packDir, x))
      execFileSync('git', ['-C', repo, 'unpack-objects', '-q'], {input: bytes})
    }
    const file = join(repo, 'objects', tree.slice(0, 2), tree.slice(2))
    chmodSync(file, 0o644)
    writeFileSync(file, 'not a git object')
    for (const format of ['bundle', 'tar.gz']) {
      const r = await runCli(['svc', 'backup', '--data-dir', data, '--output', join(data, '..', `b.${format}`), '--format', format], {timeoutMs: 120_000})
      expect(r.code, format).to.equal(1)
      expect(r.stderr, format).to.include('corrupt repository')
      expect(r.stderr, format).to.include(tree)
      expect(r.stderr, format).to.include('git fsck --full')
      expect(r.stderr, format).to.include('restore a backup')
      expect(existsSync(join(data, '..', `b.${format}`))).to.equal(false)
    }
  })

  it('corrupt full-text index: the server rebuilds it from the commits at start and search answers', async () => {
    const data = join(tempDir(), 'data')
    await seed(data)
    mkdirSync(join(data, 'index', 'main'), {recursive: true})
    writeFileSync(join(data, 'index', 'main', 'fts.sqlite'), 'SQLite format 3\0 garbage')
    s = await startServer(['--data-dir', data, '--http-port', '0', '--disable-redis', '--disable-sql', '--log-level', 'error'])
    const rest = `http://127.0.0.1:${s.ready.rest}`
    let total = 0
    for (let i = 0; i < 100 && total !== 20; i++) {
      const res = await fetch(`${rest}/api/v1/search?q=walrus&limit=100`)
      if (res.ok) total = ((await res.json()) as {total: number}).total
      else await new Promise((r) => setTimeout(r, 100))
    }
    expect(total).to.equal(20)
    expect(s.stderr()).to.include('corrupt full-text index')
  })

  it('stale Git locks: removed at start when older than 60 s; a fresh one makes a live import fail whole, naming the lock and the remedy', async () => {
    const root = tempDir()
    const src = join(root, 'src')
    await seed(src, 3, 'aa')
    const other = await openEngine(src, {fullText: false})
    await other.createBranch('zz')
    await other.put({id: 'z:1', text: 'zz walrus'}, {branch: 'zz'})
    await other.close()
    const snap = await runCli(['svc', 'export-snapshot', '--data-dir', src, '--output', join(root, 'two.bundle'), '--refs', 'aa', '--refs', 'zz', '--format', 'json'], {timeoutMs: 120_000})
    expect(snap.code, snap.stderr).to.equal(0)

    const data = join(root, 'data')
    await seed(data, 2)
    const old = join(data, 'repo', 'refs', 'heads', 'main.lock')
    writeFileSync(old, '')
    const past = new Date(Date.now() - 120_000)
    utimesSync(old, past, past)
    s = await startServer(['--data-dir', data, '--http-port', '0', '--disable-redis', '--disable-sql', '--log-level', 'warn'])
    expect(existsSync(old)).to.equal(false)
    const rest = `http://127.0.0.1:${s.ready.rest}`
    expect((await fetch(`${rest}/api/v1/documents/t:99`, {body: '{"x": 1}', method: 'PUT'})).ok).to.equal(true)

    // A lock on the second branch of the snapshot: the first must not be created either.
    const fresh = join(data, 'repo', 'refs', 'heads', 'zz.lock')
    writeFileSync(fresh, '')
    const r = await runCli(['svc', 'import-snapshot', '--data-dir', data, '--input', join(root, 'two.bundle')], {timeoutMs: 120_000})
    expect(r.code).to.equal(1)
    expect(r.stderr).to.include('a ref cannot be locked')
    expect(r.stderr).to.include('nothing was imported')
    expect(r.stderr).to.include('remove the *.lock files')
    const branches = ((await (await fetch(`${rest}/api/v1/branches`)).json()) as {branches?: Array<{name: string}>} | Array<{name: string}>)
    const names = (Array.isArray(branches) ? branches : branches.branches ?? []).map((b) => b.name)
    expect(names).to.deep.equal(['main'])
    expect(gitOut(join(data, 'repo'), ['for-each-ref', '--format=%(refname)', 'refs/heads/']).trim()).to.equal('refs/heads/main')
    // The remedy, then the same import goes through whole.
    execFileSync('rm', ['-f', fresh])
    const again = await runCli(['svc', 'import-snapshot', '--data-dir', data, '--input', join(root, 'two.bundle'), '--format', 'json'], {timeoutMs: 120_000})
    expect(again.code, again.stderr).to.equal(0)
    expect(gitOut(join(data, 'repo'), ['for-each-ref', '--format=%(refname)', 'refs/heads/']).trim().split('\n')).to.deep.equal(['refs/heads/aa', 'refs/heads/main', 'refs/heads/zz'])
    expect(((await (await fetch(`${rest}/api/v1/documents/z:1?branch=zz`)).json()) as {text: string}).text).to.equal('zz walrus')
  })

  it('a second instance: restore into a directory a server holds is refused (exit 1) and changes nothing', async () => {
    const root = tempDir()
    const data = join(root, 'data')
    await seed(data, 3)
    const backup = await runCli(['svc', 'backup', '--data-dir', data, '--output', join(root, 'full.bundle'), '--format', 'bundle'], {timeoutMs: 120_000})
    expect(backup.code, backup.stderr).to.equal(0)
    s = await startServer(['--data-dir', data, '--http-port', '0', '--disable-redis', '--disable-sql', '--log-level', 'error'])
    const r = await runCli(['svc', 'restore', '--data-dir', data, '--input', join(root, 'full.bundle'), '--force'], {timeoutMs: 120_000})
    expect(r.code).to.equal(1)
    expect(r.stderr).to.match(/a server \(pid \d+\) is running on .*stop it/)
    expect(readdirSync(root).filter((f) => f.includes('before-restore'))).to.deep.equal([])
    expect((await fetch(`http://127.0.0.1:${s.ready.rest}/api/v1/documents/t:1`)).status).to.equal(200)
  })
})
