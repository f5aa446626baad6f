import {expect} from 'chai'
import {ChildProcess} from 'node:child_process'

import {IndexStore} from '../src/engine/fts/store.js'
import {gitHelperPid, spawnerStats} from '../src/engine/git-spawner.js'
import {type Engine, openEngine} from '../src/engine/index.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'

// Issues 24 and 26: the engine's background work leaves the server's main thread. These tests
// observe where the work runs (which process starts git, which connection indexes a large
// document), never how long it takes.
const big = (word: string): string => `${word} ${'filler '.repeat(50_000)}`

/** The engine class's wait for the history index (not part of the Engine interface). */
const caughtUp = (e: Engine): Promise<void> => (e as unknown as {historyCaughtUp(): Promise<void>}).historyCaughtUp()

const wait = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** Records the git commands this process starts itself (every spawn goes through ChildProcess.prototype.spawn). */
function recordSpawns(): {commands: string[][]; stop(): void} {
  const proto = ChildProcess.prototype as unknown as {spawn(options: {args?: string[]; file?: string}): unknown}
  const original = proto.spawn
  const commands: string[][] = []
  proto.spawn = function (this: ChildProcess, options: {args?: string[]; file?: string}) {
    if (options.file === 'git') commands.push(options.args ?? [])
    return original.call(this, options)
  }
  return {commands, stop: () => (proto.spawn = original)}
}

describe('svc engine: background work off the main thread', () => {
  let db: Engine | undefined
  afterEach(async () => {
    await db?.close().catch(() => {})
    db = undefined
  })
  after(cleanupTempDirs)

  it('catches the history index up, and repacks, through the git helper: this process starts no git per poll', async () => {
    db = await openEngine(tempDir(), {repackEveryCheckpoints: 2})
    await db.put({id: 'docs:0', n: 0})
    await db.flush()
    await caughtUp(db)
    const runs = spawnerStats.runs
    const spawns = recordSpawns()
    try {
      for (let i = 1; i <= 6; i++) {
        await db.put({id: `docs:${i}`, n: i})
        await db.flush()
        await caughtUp(db)
      }
      // Wait for the background catch-up the checkpoints scheduled (2 s after refs moved).
      await wait(2500)
      const versions = (await db.history('docs:6')).versions
      expect(versions).to.have.length(1)
    } finally {
      spawns.stop()
    }
    // fast-import and cat-file are long-lived processes of their own; everything else went through the helper.
    const direct = spawns.commands.filter((args) => !args.includes('fast-import') && !args.includes('cat-file'))
    expect(direct).to.deep.equal([])
    expect(spawnerStats.runs).to.be.greaterThan(runs)
  })

  it('starts a new git helper when the one it had was killed; the history index keeps catching up', async () => {
    db = await openEngine(tempDir())
    await db.put({id: 'docs:1', n: 1})
    await db.flush()
    await caughtUp(db)
    const pid = gitHelperPid()
    expect(pid).to.be.a('number')
    process.kill(pid!, 'SIGKILL')
    for (let i = 0; i < 100 && gitHelperPid() === pid; i++) await wait(10)
    await db.put({id: 'docs:1', n: 2})
    await db.flush()
    const versions = (await db.history('docs:1')).versions.map((v) => v.doc?.n)
    expect(versions).to.deep.equal([2, 1])
    expect(gitHelperPid()).to.be.a('number').and.not.equal(pid)
  })

  it('indexes a large document with the index worker\'s connection: no insert of it through the main thread\'s', async () => {
    db = await openEngine(tempDir())
    await db.put({body: 'small words', id: 'docs:0'})
    // Past the index's first catch-up (a build from nothing indexes large documents on its own thread, by design).
    for (let i = 0; i < 500 && (await db.search('small')).index !== undefined; i++) await wait(20)
    const put = IndexStore.prototype.put
    const onMain: string[] = []
    IndexStore.prototype.put = function (this: IndexStore, id: string, ...rest: [string, string, ({rowid: number} | null)?]) {
      onMain.push(id)
      return put.call(this, id, ...rest)
    }
    try {
      await db.put({body: big('omega'), id: 'docs:1'})
      await db.put({body: big('sigma'), id: 'docs:2'})
      // Indexed in the background: give the drain its turns before searching.
      for (let i = 0; i < 100 && db.stats().indexDocuments < 3; i++) await wait(20)
      expect(db.stats().indexDocuments).to.equal(3)
      expect((await db.search('omega')).hits.map((h) => h.id)).to.deep.equal(['docs:1'])
      expect((await db.search('sigma')).hits.map((h) => h.id)).to.deep.equal(['docs:2'])
      expect(onMain).to.not.include('docs:1')
      expect(onMain).to.not.include('docs:2')
      // A later small version replaces the worker's: search finds only the current one.
      await db.put({body: 'tiny replacement', id: 'docs:1'})
      expect((await db.search('omega')).total).to.equal(0)
      expect((await db.search('replacement')).hits.map((h) => h.id)).to.deep.equal(['docs:1'])
      expect(db.stats().indexDocuments).to.equal(3)
    } finally {
      IndexStore.prototype.put = put
    }
  })

  it('indexes a large document the same after a restart (the worker\'s writes are in the file)', async () => {
    const dir = tempDir()
    db = await openEngine(dir)
    await db.put({body: big('kappa'), id: 'docs:1'})
    for (let i = 0; i < 100 && db.stats().indexDocuments < 1; i++) await wait(20)
    await db.close()
    db = await openEngine(dir)
    expect((await db.search('kappa')).hits.map((h) => h.id)).to.deep.equal(['docs:1'])
    expect(db.stats().indexDocuments).to.equal(1)
  })
})
