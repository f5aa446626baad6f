import {expect} from 'chai'
import {spawn, spawnSync} from 'node:child_process'
import {readdirSync, rmSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {docPath, expiryPath, parseId} from '../src/engine/ids.js'
import {openEngine} from '../src/engine/index.js'
import {PackCommitWriter, type WriterStats} from '../src/engine/pack-writer/commit-writer.js'
import {type CommitSpec, CommitWriter} from '../src/engine/writer.js'
import {cleanupTempDirs, gitOut, tempDir} from './helpers/tmp.js'

/**
 * The in-process pack writer makes exactly the commits `git fast-import` makes from the same
 * stream (same object ids), leaves a repository git accepts, and moves refs only at checkpoints.
 */
interface Writer {
  checkpoint(): Promise<void>
  close(): Promise<void>
  commit(spec: CommitSpec): boolean
  createBranch(branch: string, from: string): void
}

type Step = {branch: string; from: string; kind: 'branch'} | {kind: 'checkpoint'} | {kind: 'commit'; spec: CommitSpec}

const T0 = Date.UTC(2026, 10, 29, 6, 0, 0)

function doc(id: string, n: number): Buffer {
  return Buffer.from(`${JSON.stringify({id, n, text: `${id} ${'x'.repeat(n % 200)}`}, null, 2)}\n`)
}

function put(branch: string, id: string, n: number, extra: CommitSpec['files'] = []): Step {
  const p = docPath(parseId(id))
  return {kind: 'commit', spec: {authorName: n % 3 === 0 ? 'rest' : 'redis', branch, files: [...extra, {content: doc(id, n), path: p}], message: `put ${id}\n\nSvc-Op: put\nSvc-Id: ${id}\nSvc-Seq: ${n}\n`, time: T0 + n * 1000}}
}

function del(branch: string, id: string, n: number): Step {
  return {kind: 'commit', spec: {authorName: 'svc', branch, files: [{path: docPath(parseId(id))}], message: `delete ${id}\n`, time: T0 + n * 1000}}
}

/** A stream with new documents, rewrites, deletes (some emptying their directories), expiry markers, a branch, checkpoints. */
function stream(seed: number, count: number, hasMain: boolean): Step[] {
  const steps: Step[] = []
  let n = seed
  for (let i = 0; i < count; i++) {
    n++
    if (i % 50 === 49) steps.push({kind: 'checkpoint'})
    if (i % 7 === 3) steps.push(put('main', `t:${(n * 7) % 40}`, n))
    else if (i % 11 === 5) steps.push(del('main', `t:${(n * 3) % 40}`, n))
    else if (i % 13 === 6) {
      const id = `t:${n % 40}`
      const p = docPath(parseId(id))
      steps.push({kind: 'commit', spec: {authorName: 'expiry', branch: 'main', files: [{content: Buffer.from(`${new Date(T0).toISOString()}\n`), path: expiryPath(p, T0 + n)}], message: `expire ${id}\n`, time: T0 + n * 1000}})
    } else if (i % 17 === 8) steps.push({kind: 'commit', spec: {authorName: 'svc', branch: 'main', files: [{path: 'none/a/b/c/d/missing.json'}], message: 'delete nothing\n', time: T0 + n * 1000}})
    else steps.push(put('main', i % 5 === 0 ? `other:${n}` : `t:${n}`, n))
    if (i === Math.floor(count / 2) && (hasMain || i > 0)) steps.push({branch: `b${seed}`, from: 'main', kind: 'branch'})
    if (i > count / 2 && i % 4 === 0) steps.push(put(`b${seed}`, `t:${n % 30}`, n + 100_000))
  }
  // Every document of one table deleted: its directories go, up to the table itself.
  for (let k = 0; k < 3; k++) steps.push(del('main', `gone:${k}`, n + k))
  steps.splice(5, 0, ...[0, 1, 2].map((k) => put('main', `gone:${k}`, k)))
  steps.push({kind: 'checkpoint'})
  return steps
}

/** Runs the steps and closes the writer; a pack writer's statistics from just before it closed. */
async function run(w: Writer, steps: Step[]): Promise<WriterStats | undefined> {
  for (const s of steps) {
    if (s.kind === 'commit') w.commit(s.spec)
    else if (s.kind === 'branch') w.createBranch(s.branch, s.from)
    else await w.checkpoint()
  }
  const stats = w instanceof PackCommitWriter ? await w.stats() : undefined
  await w.close()
  return stats
}

function bareRepo(): string {
  const dir = tempDir()
  const repo = join(dir, 'repo')
  gitOut(dir, ['init', '--bare', '-q', repo])
  gitOut(repo, ['symbolic-ref', 'HEAD', 'refs/heads/main'])
  return repo
}

function branchesOf(repo: string): Set<string> {
  return new Set(gitOut(repo, ['for-each-ref', '--format=%(refname:short)', 'refs/heads/']).split('\n').filter(Boolean))
}

function history(repo: string, ref: string): string {
  return gitOut(repo, ['log', '--format=%H %T %P', ref])
}

function assertSound(repo: string): void {
  gitOut(repo, ['fsck', '--full', '--strict', '--no-dangling'])
  for (const f of readdirSync(join(repo, 'objects', 'pack'))) {
    if (f.endsWith('.idx')) gitOut(repo, ['verify-pack', '-v', join(repo, 'objects', 'pack', f)])
  }
}

describe('svc pack writer', function () {
  this.timeout(60_000)
  after(cleanupTempDirs)

  it('makes the same commits, trees and blobs as git fast-import for the same stream, across writers and branches', async () => {
    const fi = bareRepo()
    const pw = bareRepo()
    const first = stream(0, 300, false)
    await run(new CommitWriter(fi, () => branchesOf(fi)), first)
    const written = await run(new PackCommitWriter(pw, () => branchesOf(pw)), first)
    // Leaves written before a checkpoint are kept as bytes only (folded) and parsed again by the
    // writes after it, the branch's included: those trees must come out as fast-import's too.
    expect(written!.stats.treeUnfolds).to.be.greaterThan(10)
    expect(written!.stats.treeLoads).to.equal(0)
    expect(history(pw, 'main')).to.equal(history(fi, 'main'))
    expect(history(pw, 'b0')).to.equal(history(fi, 'b0'))
    // A second writer continues existing branches: it reads their trees from the repository.
    const second = stream(1000, 200, true)
    await run(new CommitWriter(fi, () => branchesOf(fi)), second)
    await run(new PackCommitWriter(pw, () => branchesOf(pw)), second)
    for (const b of ['main', 'b0', 'b1000']) expect(history(pw, b), b).to.equal(history(fi, b))
    const commits = second.filter((s) => s.kind === 'commit' && s.spec.branch === 'main').length + first.filter((s) => s.kind === 'commit' && s.spec.branch === 'main').length
    expect(gitOut(pw, ['rev-list', '--count', 'main']).trim()).to.equal(String(commits))
    expect(gitOut(pw, ['ls-tree', 'main']).trim()).to.not.contain('gone')
    assertSound(pw)
  })

  it('makes the same objects as fast-import when every tree is dropped at each checkpoint and read back from packs, compacted ones too', async () => {
    const fi = bareRepo()
    const pw = bareRepo()
    const first = stream(0, 300, false)
    await run(new CommitWriter(fi, () => branchesOf(fi)), first)
    // A budget of one byte: after each checkpoint every tree but the roots is read again from the repository.
    await run(new PackCommitWriter(pw, () => branchesOf(pw), undefined, undefined, undefined, {treeCacheBytes: 1}), first)
    expect(history(pw, 'main')).to.equal(history(fi, 'main'))
    // compact's deltas (OFS_DELTA chains), then REF_DELTA ones: the next writer reads its trees through them.
    gitOut(pw, ['repack', '-a', '-d', '-f', '-q', '--depth=50', '--window=20'])
    const second = stream(1000, 200, true)
    await run(new CommitWriter(fi, () => branchesOf(fi)), second)
    await run(new PackCommitWriter(pw, () => branchesOf(pw), undefined, undefined, undefined, {treeCacheBytes: 1}), second)
    gitOut(pw, ['-c', 'repack.useDeltaBaseOffset=false', 'repack', '-a', '-d', '-f', '-q', '--window=20'])
    const third = stream(2000, 100, true)
    await run(new CommitWriter(fi, () => branchesOf(fi)), third)
    await run(new PackCommitWriter(pw, () => branchesOf(pw), undefined, undefined, undefined, {treeCacheBytes: 1}), third)
    for (const b of ['main', 'b0', 'b1000', 'b2000']) expect(history(pw, b), b).to.equal(history(fi, b))
    assertSound(pw)
  })

  it('stores what was written: documents read back with git cat-file, one commit per write', async () => {
    const repo = bareRepo()
    const w = new PackCommitWriter(repo, () => branchesOf(repo))
    for (let i = 0; i < 100; i++) w.commit((put('main', `items:${i}`, i) as Extract<Step, {kind: 'commit'}>).spec)
    await w.checkpoint()
    // close() alone puts the last commits in the repository, as fast-import's `done` does.
    w.commit((del('main', 'items:7', 200) as Extract<Step, {kind: 'commit'}>).spec)
    await w.close()
    expect(gitOut(repo, ['rev-list', '--count', 'main']).trim()).to.equal('101')
    expect(gitOut(repo, ['cat-file', 'blob', `main:${docPath(parseId('items:42'))}`])).to.equal(doc('items:42', 42).toString())
    expect(spawnSync('git', ['-C', repo, 'cat-file', '-e', `main:${docPath(parseId('items:7'))}`]).status).to.not.equal(0)
    expect(gitOut(repo, ['log', '-1', '--format=%an <%ae> %at%n%cn <%ce>%n%B', 'main'])).to.equal(`svc <svc@localhost> ${(T0 + 200_000) / 1000}\nsvc <svc@localhost>\ndelete items:7\n\n`)
    assertSound(repo)
  })

  it('asks its caller to wait past 16 MB not yet applied, and lets it go on once the thread has caught up', async () => {
    const repo = bareRepo()
    const w = new PackCommitWriter(repo, () => branchesOf(repo))
    const big = (i: number): CommitSpec => ({authorName: 'rest', branch: 'main', files: [{content: Buffer.alloc(700_000, 97 + (i % 26)), path: docPath(parseId(`big:${i}`))}], message: `put big:${i}\n`, time: T0 + i})
    let full = -1
    for (let i = 0; i < 40 && full === -1; i++) if (!w.commit(big(i))) full = i
    // 700 kB a commit, all in one turn of the event loop: the 24th crosses 16 MB.
    expect(full).to.equal(23)
    // Resolves only when the thread's reports bring the bytes in flight under the mark (a writer that never reports hangs here).
    await w.drain()
    // Then more writes, and again, so that reports a megabyte apart are what frees it.
    for (let round = 0; round < 2; round++) {
      let more = true
      for (let i = 0; more; i++) more = w.commit(big(100 * (round + 1) + i))
      await w.drain()
    }
    await w.close()
    expect(Number(gitOut(repo, ['rev-list', '--count', 'main']).trim())).to.be.greaterThan(60)
    assertSound(repo)
  })

  it('moves refs only at checkpoints; a writer killed before one leaves no pack and the refs where they were', async () => {
    const repo = bareRepo()
    const w = new PackCommitWriter(repo, () => branchesOf(repo))
    for (let i = 0; i < 20; i++) w.commit((put('main', `k:${i}`, i) as Extract<Step, {kind: 'commit'}>).spec)
    await w.checkpoint()
    const at = gitOut(repo, ['rev-parse', 'main']).trim()
    for (let i = 20; i < 40; i++) w.commit((put('main', `k:${i}`, i) as Extract<Step, {kind: 'commit'}>).spec)
    // Let the worker write those objects into its open pack, then kill it mid-pack.
    await new Promise((r) => setTimeout(r, 200))
    await w.kill()
    expect(gitOut(repo, ['rev-parse', 'main']).trim()).to.equal(at)
    const packs = readdirSync(join(repo, 'objects', 'pack'))
    // The open pack is there under its temporary name only.
    expect(packs.some((f) => f.startsWith('tmp_svcpack_'))).to.equal(true)
    expect(packs.filter((f) => f.startsWith('pack-') && f.endsWith('.pack'))).to.have.length(1)
    for (const f of packs.filter((f) => f.startsWith('pack-') && f.endsWith('.pack'))) expect(packs).to.include(f.replace(/\.pack$/, '.idx'))
    assertSound(repo)
    // The next writer removes the dead one's temporary pack and continues from the last checkpoint.
    const again = new PackCommitWriter(repo, () => branchesOf(repo))
    for (let i = 20; i < 40; i++) again.commit((put('main', `k:${i}`, i) as Extract<Step, {kind: 'commit'}>).spec)
    await again.checkpoint()
    await again.close()
    expect(readdirSync(join(repo, 'objects', 'pack')).filter((f) => f.startsWith('tmp_'))).to.deep.equal([])
    expect(gitOut(repo, ['rev-list', '--count', 'main']).trim()).to.equal('40')
    assertSound(repo)
  })

  it('a process killed (SIGKILL) with a pack open leaves the refs at its last checkpoint and no pack without its index', async () => {
    const repo = bareRepo()
    const writer = fileURLToPath(new URL('../src/engine/pack-writer/commit-writer.ts', import.meta.url))
    const script = `
      const {PackCommitWriter} = await import(${JSON.stringify(writer)})
      const w = new PackCommitWriter(${JSON.stringify(repo)}, () => new Set())
      const c = (i) => w.commit({authorName: 'svc', branch: 'main', files: [{content: Buffer.from('{"n": ' + i + '}\\n'), path: 't/' + (i % 16).toString(16) + '/' + i + '.json'}], message: 'put t:' + i + '\\n', time: 0})
      for (let i = 0; i < 10; i++) c(i)
      await w.checkpoint()
      for (let i = 10; i < 5000; i++) c(i)
      setTimeout(() => process.stdout.write('open\\n'), 300)
      setInterval(() => {}, 1000)
    `
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {stdio: ['ignore', 'pipe', 'inherit']})
    await new Promise<void>((resolve) => child.stdout.on('data', () => resolve()))
    const gone = new Promise((r) => child.once('exit', r))
    child.kill('SIGKILL')
    await gone
    expect(gitOut(repo, ['rev-list', '--count', 'main']).trim()).to.equal('10')
    const packs = readdirSync(join(repo, 'objects', 'pack'))
    // It died with the commits after the checkpoint in its open pack, under the temporary name.
    expect(packs.some((f) => f.startsWith('tmp_svcpack_'))).to.equal(true)
    for (const f of packs.filter((f) => f.startsWith('pack-') && f.endsWith('.pack'))) expect(packs).to.include(f.replace(/\.pack$/, '.idx'))
    assertSound(repo)
  })

  it('a process killed (SIGKILL) between renaming its pack and its index leaves a pack the next engine removes at open', async () => {
    const dir = tempDir()
    const repo = join(dir, 'repo')
    gitOut(dir, ['init', '--bare', '-q', repo])
    gitOut(repo, ['symbolic-ref', 'HEAD', 'refs/heads/main'])
    const builder = fileURLToPath(new URL('../src/engine/pack-writer/builder.ts', import.meta.url))
    const protocol = fileURLToPath(new URL('../src/engine/pack-writer/protocol.ts', import.meta.url))
    // The builder on the process's own thread, killed by itself right after finish() renamed the .pack (before the .idx).
    const script = `
      const fs = (await import('node:fs')).default
      const {syncBuiltinESMExports} = await import('node:module')
      const {PackBuilder} = await import(${JSON.stringify(builder)})
      const {RecordEncoder, decodeRecords} = await import(${JSON.stringify(protocol)})
      const rename = fs.renameSync
      let finished = 0
      fs.renameSync = (a, b) => {
        rename(a, b)
        if (b.endsWith('.pack') && ++finished === 2) process.kill(process.pid, 'SIGKILL')
      }
      syncBuiltinESMExports()
      const b = new PackBuilder(${JSON.stringify(repo)}, process.env)
      for (let round = 0; round < 2; round++) {
        const e = new RecordEncoder()
        for (let i = 0; i < 10; i++) e.commit('main', false, 'svc <svc@localhost> 0 +0000', 'svc <svc@localhost> 0 +0000', 'put t:' + round + i + '\\n', [{content: Buffer.from('{}\\n'), path: 't/' + i + '/' + round + '.json'}])
        e.token(3, round + 1)
        for (const r of decodeRecords(e.take())) b.apply(r)
      }
    `
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {stdio: ['ignore', 'inherit', 'inherit']})
    const signal = await new Promise((r) => child.once('exit', (_code, sig) => r(sig)))
    expect(signal).to.equal('SIGKILL')
    const packDir = join(repo, 'objects', 'pack')
    const names = readdirSync(packDir)
    const orphans = names.filter((f) => f.startsWith('pack-') && f.endsWith('.pack') && !names.includes(f.replace(/\.pack$/, '.idx')))
    expect(orphans, 'a pack without its index').to.have.length(1)
    expect(names.some((f) => f.startsWith('tmp_svcpack_') && f.endsWith('.idx'))).to.equal(true)
    const kept = names.filter((f) => f.startsWith('pack-') && f.endsWith('.idx'))
    expect(kept).to.have.length(1)
    // A pack without an index that is not the writer's (git's own, say) is left alone.
    const foreign = 'pack-0123456789012345678901234567890123456789.pack'
    writeFileSync(join(packDir, foreign), 'PACK')
    expect(gitOut(repo, ['rev-list', '--count', 'main']).trim()).to.equal('10')
    const db = await openEngine(dir, {fullText: false, writer: 'pack'})
    try {
      const after = readdirSync(packDir)
      expect(after.filter((f) => f.startsWith('tmp_'))).to.deep.equal([])
      expect(after).to.not.include(orphans[0])
      expect(after).to.include.members([...kept, kept[0].replace(/\.idx$/, '.pack'), foreign])
      expect(await db.get('t:05')).to.equal(undefined)
      await db.put({id: 't:x'})
      await db.flush()
    } finally {
      await db.close()
    }
    rmSync(join(packDir, foreign))
    expect(gitOut(repo, ['rev-list', '--count', 'main']).trim()).to.equal('11')
    assertSound(repo)
  })
})
