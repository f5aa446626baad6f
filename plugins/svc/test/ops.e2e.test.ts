import {expect} from 'chai'
import {spawn} from 'node:child_process'
import {readdirSync, readFileSync, rmSync, utimesSync, writeFileSync} from 'node:fs'
import {hostname} from 'node:os'
import {join} from 'node:path'

import {openEngine} from '../src/engine/index.js'
import {runCli} from './helpers/cli.js'
import {cleanupTempDirs, gitOut, tempDir} from './helpers/tmp.js'

async function seed(): Promise<{commits: string[]; dir: string}> {
  const dir = tempDir()
  // fast-import, whatever SVC_WRITER says: the corrupt-repository test damages the loose objects its small checkpoints leave (the pack writer leaves none).
  const db = await openEngine(dir, {writer: 'fast-import'})
  await db.put({id: 'people:b', name: 'Bea'})
  await db.put({id: 'people:a', name: 'Al'})
  await db.put({id: 'pets:1', kind: 'cat'})
  await db.createBranch('dev')
  await db.put({id: 'pets:2', kind: 'dog'}, {branch: 'dev'})
  await db.close()
  return {commits: gitOut(join(dir, 'repo'), ['rev-list', 'main']).trim().split('\n'), dir}
}

describe('toolkit svc dump and diagnose (built CLI)', function () {
  this.timeout(60_000)
  after(cleanupTempDirs)

  it('dump writes every current document of a branch, in id order', async () => {
    const {commits, dir} = await seed()
    const out = join(tempDir(), 'dump.json')
    const r = await runCli(['svc', 'dump', '--data-dir', dir, '--output', out, '--format', 'json'])
    expect(r.code, r.stderr).to.equal(0)
    expect(JSON.parse(r.stdout)).to.deep.include({branch: 'main', commit: commits[0], documents: 3})
    const file = JSON.parse(readFileSync(out, 'utf8')) as {count: number; documents: Array<{id: string}>}
    expect(file.documents.map((d) => d.id)).to.deep.equal(['people:a', 'people:b', 'pets:1'])
    expect(file.count).to.equal(3)
    const dev = await runCli(['svc', 'dump', '--data-dir', dir, '--branch', 'dev', '--output', '-'])
    expect((JSON.parse(dev.stdout) as {count: number}).count).to.equal(4)
    const missing = await runCli(['svc', 'dump', '--data-dir', dir, '--branch', 'nope', '--output', out])
    expect(missing.code).to.equal(1)
    expect(missing.stderr).to.include('branch nope does not exist')
    const notDir = await runCli(['svc', 'dump', '--data-dir', tempDir(), '--output', out])
    expect(notDir.code).to.equal(1)
    expect(notDir.stderr).to.include('is not an svc data directory')
  })

  it('diagnose reports a healthy directory, then stale locks, a corrupt index and remote drift', async () => {
    const {commits, dir} = await seed()
    let r = await runCli(['svc', 'diagnose', '--data-dir', dir, '--format', 'json'])
    expect(r.code, r.stderr).to.equal(0)
    let checks = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as {check: string; message: string; status: string})
    expect(checks.map((c) => c.check)).to.deep.equal(['repository', 'instance-lock', 'git-locks', 'branches', 'wal', 'index', 'remote'])
    expect(checks.every((c) => c.status === 'ok')).to.equal(true)

    writeFileSync(join(dir, 'svc.lock'), JSON.stringify({host: hostname(), pid: 2 ** 22 + 4242}))
    // The dead server's fast-import, still reading its pipe.
    const orphan = spawn('git', ['-C', join(dir, 'repo'), 'fast-import', '--quiet', '--done'], {stdio: ['pipe', 'ignore', 'ignore']})
    writeFileSync(join(dir, 'fast-import.pid'), String(orphan.pid))
    const lock = join(dir, 'repo', 'packed-refs.lock')
    writeFileSync(lock, '')
    utimesSync(lock, new Date(Date.now() - 300_000), new Date(Date.now() - 300_000))
    const idx = join(dir, 'index', 'main', 'fts.sqlite')
    // A write-ahead log SQLite left beside the file (a close racing the background indexer under
    // load) would still hold the pages: the damage is to the whole index, so it goes too.
    for (const side of ['-wal', '-shm']) rmSync(idx + side, {force: true})
    writeFileSync(idx, readFileSync(idx).subarray(0, 200))
    gitOut(join(dir, 'repo'), ['remote', 'add', 'origin', 'https://example.invalid/db.git'])
    gitOut(join(dir, 'repo'), ['update-ref', 'refs/remotes/origin/main', commits[1]])
    r = await runCli(['svc', 'diagnose', '--data-dir', dir, '--format', 'json', '--no-fsck'])
    orphan.stdin.end('done\n')
    expect(r.code, r.stderr).to.equal(0)
    checks = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as {check: string; message: string; status: string})
    const by = Object.fromEntries(checks.map((c) => [c.check, c]))
    expect(by['instance-lock']).to.include({status: 'warning'})
    expect(by['instance-lock'].message).to.include('stale instance lock').and.include(`git fast-import it left (pid ${orphan.pid}) is still running`)
    expect(by['git-locks']).to.include({status: 'warning'})
    expect(by.index).to.include({status: 'warning'})
    expect(by.index.message).to.include('corrupt')
    expect(by.remote).to.include({status: 'warning'})
    expect(by.remote.message).to.include('differ from their remote-tracking refs')
  })

  it('diagnose fails (exit 1) on a corrupt repository', async () => {
    const {dir} = await seed()
    // Small checkpoints are unpacked into loose objects by fast-import; damage every one.
    const objects = join(dir, 'repo', 'objects')
    for (const sub of readdirSync(objects).filter((d) => /^[0-9a-f]{2}$/.test(d))) {
      for (const f of readdirSync(join(objects, sub))) {
        const file = join(objects, sub, f)
        const data = readFileSync(file)
        for (let i = 2; i < data.length; i += 7) data[i] ^= 0xff
        writeFileSync(file, data)
      }
    }
    const r = await runCli(['svc', 'diagnose', '--data-dir', dir])
    expect(r.code).to.equal(1)
    expect(r.stdout).to.match(/error\s+repository\s+git fsck --full failed/)
    expect(r.stderr).to.match(/diagnose found \d error\(s\)/)
  })
})
