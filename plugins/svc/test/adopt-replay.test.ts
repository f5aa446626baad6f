import {expect} from 'chai'
import {spawnSync} from 'node:child_process'
import {cpSync, writeFileSync} from 'node:fs'
import {hostname} from 'node:os'
import {join} from 'node:path'

import {type Engine, openEngine} from '../src/engine/index.js'
import {cleanupTempDirs, gitOut, tempDir} from './helpers/tmp.js'

/**
 * A branch adopted at a commit of another database (snapshot import on a running server) carries
 * that database's `Svc-Seq`. Writes to it acknowledged before their first checkpoint must come
 * back from the write-ahead log after a crash: open replays only the records above a branch
 * head's seq, so the engine must number them above the adopted head's.
 */
describe('svc writes to an adopted branch, crash before their checkpoint', () => {
  const open: Engine[] = []
  afterEach(async () => {
    for (const db of open.splice(0)) await db.close().catch(() => {})
  })
  after(cleanupTempDirs)

  it('are all there after the restart', async () => {
    // The other database: 30 writes, its head at Svc-Seq 30.
    const other = tempDir()
    const a = await openEngine(other, {fullText: false})
    open.push(a)
    for (let i = 0; i < 30; i++) await a.put({id: `o:${i}`, i})
    await a.close()
    open.length = 0
    const head = gitOut(join(other, 'repo'), ['rev-parse', 'main']).trim()

    const dir = tempDir()
    const repo = join(dir, 'repo')
    // Checkpoints far away: the writes below stay in the write-ahead log only.
    const b = await openEngine(dir, {checkpointDelayMs: 600_000, checkpointMaxDelayMs: 600_000, fullText: false})
    open.push(b)
    await b.put({id: 'm:1'})
    await b.flush()
    gitOut(repo, ['fetch', '-q', join(other, 'repo'), 'main'])
    await b.adoptBranch('imported', head)
    const seqs: number[] = []
    for (let i = 0; i < 3; i++) seqs.push((await b.put({id: `new:${i}`, i}, {branch: 'imported'})).seq)
    expect(seqs.every((s) => s > 30), `seqs ${seqs.join(',')} above the adopted head's 30`).to.equal(true)

    // The crash: the data directory as it is now (log durable, nothing of it in Git yet), its
    // lock naming a process that is gone.
    const crashed = tempDir()
    cpSync(dir, crashed, {recursive: true})
    writeFileSync(join(crashed, 'svc.lock'), JSON.stringify({host: hostname(), pid: spawnSync('true').pid, started: new Date().toISOString()}))
    const c = await openEngine(crashed, {fullText: false})
    open.push(c)
    for (let i = 0; i < 3; i++) expect(await c.get(`new:${i}`, {branch: 'imported'})).to.deep.equal({i, id: `new:${i}`})
    expect(await c.get('o:7', {branch: 'imported'})).to.deep.equal({i: 7, id: 'o:7'})
    await c.flush()
    expect(gitOut(join(crashed, 'repo'), ['rev-list', '--count', 'imported']).trim()).to.equal('33')
  })
})
