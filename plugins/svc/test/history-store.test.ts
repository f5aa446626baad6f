import {expect} from 'chai'
import {join} from 'node:path'

import Database from 'better-sqlite3'

import {openEngine} from '../src/engine/index.js'
import {HistoryStore, readHistoryState} from '../src/engine/history-store.js'
import {HistoryWorker} from '../src/engine/history-worker.js'
import {cleanupTempDirs, gitOut, tempDir} from './helpers/tmp.js'

/** Everything the index answers: each path's versions before every fifth position, each commit's position, as-of by time. */
function answers(store: HistoryStore, paths: string[], shas: string[]): unknown {
  const versions: Record<string, unknown> = {}
  for (const p of paths) for (let before = 1; before <= store.commits + 1; before += 5) versions[`${p} ${before}`] = store.versions([p, `${p}.old`], before, 4).map((c) => c.sha)
  return {commits: store.commits, positions: shas.map((s) => store.position(s) ?? null), tip: store.tip, versions}
}

/** The `sealed` position kept in the file, what the file's rows say it is, and the commits. */
const sealedState = (file: string): {kept: null | number; pos: number; sealedRows: number} => {
  const db = new Database(file, {readonly: true})
  try {
    const kept = db.prepare(`SELECT value FROM meta WHERE key = 'sealed'`).pluck().get() as string | undefined
    return {kept: kept === undefined ? null : Number(kept), pos: db.prepare('SELECT count(*) FROM commits').pluck().get() as number, sealedRows: db.prepare('SELECT count(*) FROM commit_ids').pluck().get() as number}
  } finally {
    db.close()
  }
}

const recentRows = (file: string): number => {
  const db = new Database(file, {readonly: true})
  try {
    return db.prepare('SELECT count(*) FROM recent_commit_ids').pluck().get() as number
  } finally {
    db.close()
  }
}

describe('svc history store: appends kept in two levels answer as one', () => {
  after(cleanupTempDirs)

  it('gives the same versions, positions and cut-backs whether the recent rows moved into the sealed tables or not', async () => {
    const dir = tempDir()
    const db = await openEngine(dir, {fullText: false, historyIndex: false})
    const ids = ['a:1', 'a:2', 'a:3', 'b:1', 'b:2']
    // 60 commits, documents changed in a seeded order, so the positions of one path straddle every merge.
    let seed = 7
    for (let i = 0; i < 60; i++) {
      seed = (seed * 31 + 11) % 101
      if (i % 13 === 12) await db.batch(ids.slice(0, 3).map((id) => ({doc: {id, v: i}, op: 'put' as const})))
      else await db.put({id: ids[seed % ids.length], v: i})
    }
    await db.close()
    const repo = join(dir, 'repo')
    const shas = gitOut(repo, ['rev-list', '--reverse', 'main']).trim().split('\n')
    const paths = gitOut(repo, ['ls-tree', '-r', '--name-only', 'main']).trim().split('\n')
    expect(shas).to.have.length(60)
    const never = () => {}

    const built = async (mergeAt: number, urgentAt: (c: number) => boolean): Promise<{file: string; store: HistoryStore}> => {
      const file = join(tempDir(), 'main.sqlite')
      const store = new HistoryStore(file)
      const worker = new HistoryWorker(mergeAt)
      // Caught up in steps of 9 commits, 4 commits a transaction; some steps have a read waiting.
      for (let to = 9; ; to += 9) {
        const end = Math.min(to, shas.length)
        const range = store.tip === '' ? [shas[end - 1]] : [`${store.tip}..${shas[end - 1]}`]
        await worker.scan(file, repo, range, new AbortController().signal, never, () => urgentAt(end), 4)
        store.reload()
        if (end === shas.length) break
      }
      await worker.close()
      return {file, store}
    }
    const one = await built(1e9, () => false)
    const two = await built(10, (end) => end === 18 || end === 27)
    expect(recentRows(one.file)).to.equal(60)
    // Merged at the ends of the walks to 36 and 54 (at 18 and 27 a read waited, at 9 and 45 fewer than 10 were recent).
    expect(recentRows(two.file)).to.equal(6)
    const expected = answers(one.store, paths, shas)
    expect(answers(two.store, paths, shas)).to.deep.equal(expected)
    expect(expected).to.have.property('tip', shas[59])
    expect((expected as {positions: number[]}).positions).to.deep.equal(shas.map((_, i) => i + 1))
    // Some path's history spans both levels.
    expect(Object.values((expected as {versions: Record<string, string[]>}).versions).some((v) => v.length === 4)).to.equal(true)

    // Forced mid-walk once past 4x the mark, whatever waits.
    const three = await built(2, () => true)
    expect(recentRows(three.file)).to.be.below(9)
    expect(recentRows(three.file)).to.be.above(1)
    expect(answers(three.store, paths, shas)).to.deep.equal(expected)

    // Built from the first commit in one walk while a read waits: merged at its end all the same.
    const file = join(tempDir(), 'main.sqlite')
    const full = new HistoryStore(file)
    const worker = new HistoryWorker(10)
    expect(await worker.scan(file, repo, [shas[59]], new AbortController().signal, never, () => true, 4)).to.equal(60)
    await worker.close()
    full.reload()
    expect(recentRows(file)).to.equal(0)
    expect(answers(full, paths, shas)).to.deep.equal(expected)
    full.close()

    // Cut back into the sealed rows: both agree again, and the positions past the cut are gone.
    one.store.truncate(40)
    two.store.truncate(40)
    const cut = answers(one.store, paths, shas)
    expect(answers(two.store, paths, shas)).to.deep.equal(cut)
    expect((cut as {positions: Array<null | number>}).positions.slice(38)).to.deep.equal([39, 40, ...Array.from({length: 20}, () => null)])
    // The sealed position followed the cut (54 -> 40): the next catch-up counts 20 recent commits and merges them.
    expect(sealedState(two.file)).to.deep.equal({kept: 40, pos: 40, sealedRows: 40})
    const again = new HistoryWorker(10)
    await again.scan(two.file, repo, [`${shas[39]}..${shas[59]}`], new AbortController().signal, never)
    await again.close()
    two.store.reload()
    expect(sealedState(two.file)).to.deep.equal({kept: 60, pos: 60, sealedRows: 60})
    expect(answers(two.store, paths, shas)).to.deep.equal(expected)
    for (const s of [one, two, three]) s.store.close()
  })

  it('keeps how many commits are sealed in the file, and reads it from the rows of a file that lacks it', async () => {
    const dir = tempDir()
    const db = await openEngine(dir, {fullText: false, historyIndex: false})
    for (let i = 0; i < 30; i++) await db.put({id: `a:${i % 7}`, v: i})
    await db.close()
    const repo = join(dir, 'repo')
    const shas = gitOut(repo, ['rev-list', '--reverse', 'main']).trim().split('\n')
    const file = join(tempDir(), 'main.sqlite')
    const store = new HistoryStore(file)
    const worker = new HistoryWorker(10)
    // 12 commits (merged at the walk's end), then 15 (merged), then 3 (left recent).
    for (const [from, to] of [[-1, 11], [11, 26], [26, 29]]) {
      await worker.scan(file, repo, from < 0 ? [shas[to]] : [`${shas[from]}..${shas[to]}`], new AbortController().signal, () => {})
      store.reload()
    }
    await worker.close()
    expect(sealedState(file)).to.deep.equal({kept: 27, pos: 30, sealedRows: 27})
    expect(recentRows(file)).to.equal(3)
    // A file of this format written before the row was kept (branch hist-1m): the first recent position says it.
    const raw = new Database(file)
    raw.prepare(`DELETE FROM meta WHERE key = 'sealed'`).run()
    expect(readHistoryState(raw).sealed).to.equal(27)
    raw.prepare('DELETE FROM recent_commit_ids').run()
    raw.prepare('DELETE FROM recent_changes').run()
    raw.prepare('DELETE FROM commits WHERE pos > 27').run()
    expect(readHistoryState(raw).sealed).to.equal(27)
    raw.close()
    store.close()
  })
})
