import {expect} from 'chai'
import {readdirSync, readFileSync, rmSync} from 'node:fs'
import {getPriority} from 'node:os'
import {join} from 'node:path'

import {gateStats} from '../src/engine/background-gate.js'
import {hasCommitGraph} from '../src/engine/commit-graph.js'
import {type Engine, openEngine} from '../src/engine/index.js'
import {cleanupTempDirs, memoryLogger, tempDir} from './helpers/tmp.js'

// The engine's benchmark and test hook, not on the Engine interface (as in off-loop.test.ts).
const caughtUp = (e: Engine): Promise<void> => (e as unknown as {historyCaughtUp(): Promise<void>}).historyCaughtUp()

/** The nice value of each thread of this process (Linux: field 19 of /proc/self/task/TID/stat). */
function threadNices(): number[] {
  return readdirSync('/proc/self/task').flatMap((t) => {
    try {
      const stat = readFileSync(`/proc/self/task/${t}/stat`, 'utf8')
      return [Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])]
    } catch {
      return []
    }
  })
}

/**
 * 240 commits whose messages carry ~9 KB of metadata each: the history walk's output (~2 MB)
 * comes in many chunks, so the catch-up asks whether to give way many times.
 */
async function repoWithLongHistory(dir: string): Promise<string[]> {
  const user = 'u'.repeat(9000)
  const ids = Array.from({length: 240}, (_, i) => `a:${i}`)
  const db = await openEngine(dir, {fullText: false, historyIndex: false})
  for (const id of ids) await db.put({id}, {meta: {user}})
  await db.close()
  return ids
}

/**
 * A repository of 5,000 documents `items:0`..`items:4999` (the size that gets the start-up wait
 * and a commit-graph at open), with no history index and no commit-graph; `more` writes after them.
 */
async function largeRepo(more?: (e: Engine) => Promise<void>): Promise<string> {
  const dir = tempDir()
  const e = await openEngine(dir, {fullText: false, historyIndex: false, repackEveryCheckpoints: 1_000_000})
  for (let b = 0; b < 5; b++) await e.batch(Array.from({length: 1000}, (_, i) => ({doc: {id: `items:${b * 1000 + i}`, n: i}, op: 'put' as const})))
  await more?.(e)
  await e.close()
  return dir
}

describe('svc background work gives way to requests (background-gate.ts)', () => {
  let db: Engine | undefined
  afterEach(async () => {
    await db?.close().catch(() => {})
    db = undefined
  })
  after(cleanupTempDirs)

  it('the history index is still built while requests keep arriving, and answers as walking Git does', async () => {
    const dir = tempDir()
    const ids = await repoWithLongHistory(dir)
    rmSync(join(dir, 'index'), {force: true, recursive: true})
    const {lines, logger} = memoryLogger()
    const heldBefore = gateStats.held
    // startupMaxWaitMs: the build waits for a pause in requests at most this long after open.
    db = await openEngine(dir, {fullText: false, logger, startupMaxWaitMs: 300})
    // A client that never stops: a read every turn of the loop until the index is built.
    let reads = 0
    const built = (): boolean => lines.some((l) => l.includes('history index built'))
    while (!built()) {
      expect((await db.get(ids[reads % ids.length]))?.id).to.equal(ids[reads % ids.length])
      reads++
      await new Promise((r) => setImmediate(r))
    }
    expect(lines.find((l) => l.includes('history index built'))).to.include('"commits":240')
    // It gave way to those reads at least once, and finished all the same.
    expect(gateStats.held).to.be.greaterThan(heldBefore)
    const indexed = []
    for (const id of ids.slice(0, 20)) indexed.push(await db.history(id))
    await db.close()
    db = await openEngine(dir, {fullText: false, historyIndex: false})
    const walked = []
    for (const id of ids.slice(0, 20)) walked.push(await db.history(id))
    expect(indexed).to.deep.equal(walked)
  })

  it('right after open, the history build and the commit-graph write wait for a pause in requests, and run within the bound under steady requests', async () => {
    const dir = await largeRepo()
    const repo = join(dir, 'repo')
    const built = (lines: string[]): boolean => lines.some((l) => l.includes('history index built'))
    const readUntil = async (e: Engine, done: () => boolean): Promise<number> => {
      let reads = 0
      while (!done()) {
        expect((await e.get(`items:${reads % 5000}`))?.id).to.equal(`items:${reads % 5000}`)
        reads++
        await new Promise((r) => setImmediate(r))
      }
      return reads
    }

    // Steady requests and a far bound: neither starts while they keep coming; both run once they pause.
    const first = memoryLogger()
    db = await openEngine(dir, {fullText: false, logger: first.logger, startupMaxWaitMs: 60_000, startupQuietMs: 200})
    const until = Date.now() + 1500
    await readUntil(db, () => Date.now() > until)
    expect(built(first.lines)).to.equal(false)
    expect(hasCommitGraph(repo)).to.equal(false)
    for (let i = 0; i < 200 && !(built(first.lines) && hasCommitGraph(repo)); i++) await new Promise((r) => setTimeout(r, 50))
    expect(built(first.lines)).to.equal(true)
    expect(hasCommitGraph(repo)).to.equal(true)
    await db.close()

    // Requests that never pause: the bound starts both all the same.
    rmSync(join(dir, 'index'), {force: true, recursive: true})
    rmSync(join(repo, 'objects', 'info', 'commit-graphs'), {force: true, recursive: true})
    rmSync(join(repo, 'objects', 'info', 'commit-graph'), {force: true})
    const second = memoryLogger()
    db = await openEngine(dir, {fullText: false, logger: second.logger, startupMaxWaitMs: 300, startupQuietMs: 60_000})
    expect(await readUntil(db, () => built(second.lines) && hasCommitGraph(repo))).to.be.greaterThan(0)
  })

  it('right after open, the first history read ends the wait: the build runs while other requests keep coming', async () => {
    const dir = await largeRepo(async (e) => {
      await e.put({id: 'items:7', n: 'second'})
    })
    const {lines, logger} = memoryLogger()
    const built = (): boolean => lines.some((l) => l.includes('history index built'))
    // Bound and pause far beyond the test: only the history read can start the build.
    db = await openEngine(dir, {fullText: false, logger, startupMaxWaitMs: 600_000, startupQuietMs: 600_000})
    const walked = await db.history('items:7')
    expect(walked.versions.length).to.equal(2)
    const until = Date.now() + 30_000
    for (let i = 0; !built() && Date.now() < until; i++) {
      await db.get(`items:${i % 5000}`)
      await new Promise((r) => setImmediate(r))
    }
    expect(built()).to.equal(true)
    expect(await db.history('items:7')).to.deep.equal(walked)
  })

  it('a repository opened with fewer than 5,000 documents indexes its history as writes land, with no wait for a pause', async () => {
    const dir = tempDir()
    const {lines, logger} = memoryLogger()
    const built = (): boolean => lines.some((l) => l.includes('history index built'))
    db = await openEngine(dir, {checkpointDelayMs: 20, fullText: false, logger, startupMaxWaitMs: 600_000, startupQuietMs: 600_000})
    const until = Date.now() + 30_000
    // Writes that never pause, as the scale bench's: the history index still catches up.
    for (let i = 0; !built() && Date.now() < until; i++) await db.put({id: `items:${i}`, n: i})
    expect(built()).to.equal(true)
  })

  it('a history read is not held behind other requests: the catch-up it waits for runs at once', async () => {
    const dir = tempDir()
    const ids = await repoWithLongHistory(dir)
    db = await openEngine(dir, {fullText: false})
    await caughtUp(db)
    // New commits, then a read of their history while other reads keep coming: the read waits
    // for the catch-up (it needs it) and sees every new version.
    for (const id of ids.slice(0, 30)) await db.put({id, v: 2}, {meta: {user: 'u'.repeat(9000)}})
    let stop = false
    const others = (async () => {
      for (let i = 0; !stop; i++) {
        await db!.get(ids[i % ids.length])
        await new Promise((r) => setImmediate(r))
      }
    })()
    const heldBefore = gateStats.held
    const page = await db.history(ids[0])
    stop = true
    await others
    expect(page.versions.length).to.equal(2)
    expect(gateStats.held).to.equal(heldBefore)
  })

  it('the history worker thread runs at a lower priority than the server, where the OS allows it', async function () {
    if (process.platform !== 'linux') this.skip()
    const dir = tempDir()
    await repoWithLongHistory(dir)
    rmSync(join(dir, 'index'), {force: true, recursive: true})
    const base = getPriority()
    const lowered = Math.min(19, base + 10)
    const before = threadNices().filter((n) => n === lowered).length
    db = await openEngine(dir, {fullText: false})
    await caughtUp(db)
    // The worker thread stays until the engine closes: one more thread of this process at nice +10.
    expect(threadNices().filter((n) => n === lowered).length).to.equal(before + 1)
    // And only that thread: the event loop's own keeps the server's priority.
    expect(getPriority()).to.equal(base)
  })
})
