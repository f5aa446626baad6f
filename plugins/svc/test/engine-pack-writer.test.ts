import {expect} from 'chai'
import {readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'

import {type Engine, openEngine} from '../src/engine/index.js'
import {cleanupTempDirs, gitOut, tempDir} from './helpers/tmp.js'
import {killWriter} from './helpers/writer.js'

/**
 * The engine's key write paths with the in-process pack writer (`writer: 'pack'`, issue 26), so
 * CI runs them whatever SVC_WRITER says; the whole engine suite passes with SVC_WRITER=pack too.
 */
describe('svc engine with the pack writer', () => {
  let db: Engine | undefined
  afterEach(async () => {
    await db?.close().catch(() => {})
    db = undefined
  })
  after(cleanupTempDirs)

  it('refuses to open with an unknown SVC_WRITER, naming the two writers; the writer option wins over it', async () => {
    const dir = tempDir()
    const was = process.env.SVC_WRITER
    process.env.SVC_WRITER = 'packk'
    try {
      const error = await openEngine(dir, {fullText: false}).then(
        () => undefined,
        (error_: Error) => error_,
      )
      expect(error?.message).to.equal('SVC_WRITER must be "fast-import" or "pack", not "packk"')
      // The option wins over the variable: the same directory opens with the writer it names.
      db = await openEngine(dir, {fullText: false, writer: 'fast-import'})
      await db.put({id: 'a:1'})
      await db.flush()
    } finally {
      if (was === undefined) delete process.env.SVC_WRITER
      else process.env.SVC_WRITER = was
    }
    expect(gitOut(join(dir, 'repo'), ['rev-list', '--count', 'main']).trim()).to.equal('1')
  })

  it('stores each write as one commit, across branches and a restart; git fsck is clean', async () => {
    const dir = tempDir()
    const repo = join(dir, 'repo')
    db = await openEngine(dir, {fullText: false, writer: 'pack'})
    await db.put({id: 'a:1', v: 1})
    await db.put({id: 'a:2', v: 2})
    await db.delete('a:2')
    await db.createBranch('dev')
    await db.put({id: 'a:1', v: 'dev'}, {branch: 'dev'})
    await db.flush()
    expect(gitOut(repo, ['log', '--format=%s', 'main']).trim().split('\n')).to.deep.equal(['delete a:2', 'put a:2', 'put a:1'])
    expect(gitOut(repo, ['log', '--format=%s', 'dev']).trim().split('\n')).to.deep.equal(['put a:1', 'delete a:2', 'put a:2', 'put a:1'])
    await db.removeBranch('dev')
    await db.put({id: 'a:3', v: 3})
    await db.close()
    // Written straight into packs: no fast-import pid file, no loose object, no temporary pack left.
    expect(readdirSync(dir)).to.not.include('fast-import.pid')
    expect(readdirSync(join(repo, 'objects', 'pack')).filter((f) => f.startsWith('tmp_'))).to.deep.equal([])
    db = await openEngine(dir, {fullText: false, writer: 'pack'})
    expect((await db.branches()).map((b) => b.name)).to.deep.equal(['main'])
    expect(await db.getMany(['a:1', 'a:2', 'a:3'])).to.deep.equal([{id: 'a:1', v: 1}, undefined, {id: 'a:3', v: 3}])
    await db.put({id: 'a:1', v: 4})
    await db.flush()
    expect(gitOut(repo, ['rev-list', '--count', 'main']).trim()).to.equal('5')
    gitOut(repo, ['fsck', '--full', '--strict'])
  })

  it('keeps every write, one commit each, while roll-ups merge its packs away', async () => {
    const dir = tempDir()
    const repo = join(dir, 'repo')
    // No byte cache: each read goes to git, after roll-ups removed the packs the writer wrote.
    db = await openEngine(dir, {cacheBytes: 0, fullText: false, repackEveryCheckpoints: 1, writer: 'pack'})
    // Finished packs only: the one being written (tmp_svcpack_*) is renamed at the checkpoint, not merged away.
    const packs = (): string[] => readdirSync(join(repo, 'objects', 'pack')).filter((f) => f.startsWith('pack-') && f.endsWith('.pack'))
    const seen = new Set<string>()
    let writes = 0
    for (let round = 0; round < 8; round++) {
      for (const p of packs()) seen.add(p)
      await Promise.all(Array.from({length: 30}, (_, i) => db!.put({id: `r:${i}`, round})))
      // A document only this round writes: its leaf tree is read back from the repository.
      await db.put({id: `n:${round}`, round})
      writes += 31
      const before = packs()
      await db.flush()
      // flush waits for the checkpoint; the roll-up after it runs in the background (slow on a
      // loaded CI machine): wait up to 4 s for it to merge packs away (a round whose packs the
      // geometric rule leaves alone waits it out).
      for (let t = 0; t < 200 && before.length > 1 && before.every((p) => packs().includes(p)); t++) await new Promise((r) => setTimeout(r, 20))
      expect(await db.get('r:7')).to.deep.include({round})
    }
    const left = new Set(packs())
    expect([...seen].filter((p) => !left.has(p)), 'packs the writer wrote, merged away by roll-ups').to.have.length.greaterThan(2)
    await db.compact()
    await db.put({id: 'after:compact'})
    await db.close()
    db = undefined
    expect(gitOut(repo, ['rev-list', '--count', 'main']).trim()).to.equal(String(writes + 1))
    expect(gitOut(repo, ['ls-tree', '-r', '--name-only', 'main']).trim().split('\n')).to.have.length(30 + 8 + 1)
    gitOut(repo, ['fsck', '--full'])
  })

  it('when the pack writer dies, the engine starts a new one and commits every acknowledged write', async () => {
    const dir = tempDir()
    db = await openEngine(dir, {checkpointDelayMs: 60_000, checkpointMaxDelayMs: 60_000, fullText: false, writer: 'pack'})
    await db.put({id: 'w:1', v: 1})
    await db.put({id: 'w:2', v: 2})
    await killWriter(db)
    await db.put({id: 'w:3', v: 3})
    await db.flush()
    expect(db.details().writerRestarts).to.equal(1)
    expect(gitOut(join(dir, 'repo'), ['log', '--format=%s', 'main']).trim().split('\n')).to.deep.equal(['put w:3', 'put w:2', 'put w:1'])
    await db.close()
    db = await openEngine(dir, {fullText: false, writer: 'pack'})
    expect(await db.getMany(['w:1', 'w:2', 'w:3'])).to.deep.equal([{id: 'w:1', v: 1}, {id: 'w:2', v: 2}, {id: 'w:3', v: 3}])
    gitOut(join(dir, 'repo'), ['fsck', '--full'])
  })

  it('a pack writer terminated from outside leaves no git process behind, zombie or alive', async () => {
    const dir = tempDir()
    db = await openEngine(dir, {fullText: false, writer: 'pack'})
    for (let i = 0; i < 50; i++) await db.put({id: `z:${i}`, i})
    await db.close()
    // Reopened: the new writer reads the trees it continues from the repository, then is terminated.
    db = await openEngine(dir, {checkpointDelayMs: 60_000, checkpointMaxDelayMs: 60_000, fullText: false, writer: 'pack'})
    await db.put({id: 'z:50', i: 50})
    await db.flush()
    // Taken once the writer is idle: a git it runs to its end (a checkpoint's update-ref) is not
    // one it keeps.
    const before = gitChildren()
    await killWriter(db)
    await db.put({id: 'z:51', i: 51})
    await db.flush()
    expect(db.details().writerRestarts).to.equal(1)
    // The engine's own reader is the only git process before and after: the writers keep none (they
    // run theirs to the end on their thread), so a terminated one cannot leave one behind, zombie or
    // not. A git that has just exited is reaped within moments (a loaded machine may take longer
    // than a fixed pause); one left behind stays.
    for (let waited = 0; waited < 5000 && JSON.stringify(gitChildren()) !== JSON.stringify(before); waited += 100) await new Promise((r) => setTimeout(r, 100))
    expect(gitChildren(), 'git children of this process').to.deep.equal(before)
    expect(before.every((c) => !c.includes(' Z '))).to.equal(true)
    expect(await db.getMany(['z:0', 'z:50', 'z:51'])).to.deep.equal([{i: 0, id: 'z:0'}, {i: 50, id: 'z:50'}, {i: 51, id: 'z:51'}])
  })
})

/** `pid state comm` of every git child of this process (Linux /proc; state Z: exited and never waited for). */
function gitChildren(): string[] {
  const out: string[] = []
  for (const pid of readdirSync('/proc').filter((f) => /^\d+$/.test(f))) {
    let stat: string
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    } catch {
      continue
    }
    const close = stat.lastIndexOf(')')
    const [state, ppid] = stat.slice(close + 2).split(' ')
    const comm = stat.slice(stat.indexOf('(') + 1, close)
    if (Number(ppid) === process.pid && comm === 'git') out.push(`${pid} ${state} ${comm}`)
  }
  return out
}
