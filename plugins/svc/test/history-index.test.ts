import {expect} from 'chai'
import {existsSync, rmSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import Database from 'better-sqlite3'

import {type Engine, openEngine} from '../src/engine/index.js'
import {cleanupTempDirs, gitOut, memoryLogger, tempDir} from './helpers/tmp.js'

const IDS = ['a:1', 'a:2', 'a:3', 'a:4', 'b:x', 'never:written']
/** As-of reads walk Git in the comparison run (slow on a busy machine): the documents whose past differs most. */
const AS_OF_IDS = ['a:1', 'a:2', 'a:4']

/**
 * Everything a user reads of the documents' past: every history page (limit 2, following the
 * cursor), a page after an abbreviated cursor, and as-of reads by time at each moment given.
 */
async function past(db: Engine, branches: string[], times: number[]): Promise<unknown> {
  const out: Record<string, unknown> = {}
  for (const branch of branches) {
    for (const id of IDS) {
      const pages = []
      let cursor: string | undefined
      do {
        const page = await db.history(id, {branch, cursor, limit: 2})
        pages.push(page)
        cursor = page.nextCursor
      } while (cursor)
      const first = pages[0].versions[0]?.commit
      const abbreviated = first ? await db.history(id, {branch, cursor: first.slice(0, 10), limit: 1}) : undefined
      const asOf = []
      if (AS_OF_IDS.includes(id)) for (const time of times) asOf.push(await db.asOf(id, {branch, time}))
      out[`${branch} ${id}`] = {abbreviated, asOf, pages}
    }
  }
  return out
}

describe('svc engine: the history index answers history and as-of reads exactly as walking Git does', () => {
  let db: Engine | undefined
  afterEach(async () => {
    await db?.close().catch(() => {})
    db = undefined
  })
  after(cleanupTempDirs)

  it('versions, deletes, unchanged rewrites, expiry sweeps, metadata, branches and cursors; rebuilt the same when deleted', async () => {
    const dir = tempDir()
    let clock = Date.parse('2026-03-01T10:00:00.000Z')
    const now = (): number => clock
    const times: number[] = []
    const step = (ms: number): void => {
      clock += ms
      times.push(clock - 1)
    }
    db = await openEngine(dir, {fullText: false, now})
    for (let v = 1; v <= 4; v++) {
      for (const id of ['a:1', 'a:2', 'a:3']) await db.put({id, v})
      step(700)
    }
    await db.put({id: 'a:3', v: 4}) // the same content again: no change to the document, so no version
    await db.delete('a:2')
    step(1500)
    await db.put({id: 'a:2', v: 'back'}, {meta: {origin: 'rest', requestId: 'r-1', user: 'ada'}})
    await db.put({id: 'a:4', v: 1})
    await db.expire('a:4', clock + 2000)
    step(2500)
    await db.sweepExpired()
    await db.batch([
      {doc: {id: 'a:1', v: 'batch'}, op: 'put'},
      {doc: {id: 'b:x', v: 1}, op: 'put'},
    ])
    step(300)
    await db.createBranch('dev')
    await db.put({id: 'a:1', v: 'dev'}, {branch: 'dev'})
    await db.put({id: 'a:1', v: 'main after fork'})
    step(1200)
    await db.delete('b:x', {branch: 'dev'})
    step(400)
    times.unshift(Date.parse('2026-03-01T09:00:00.000Z'))
    const indexed = await past(db, ['main', 'dev'], times)
    await db.close()
    expect(existsSync(join(dir, 'index', '.history', 'main.sqlite'))).to.equal(true)

    db = await openEngine(dir, {fullText: false, historyIndex: false, now})
    const walked = await past(db, ['main', 'dev'], times)
    await db.close()
    expect(indexed).to.deep.equal(walked)
    // What the comparison covers: a deleted and rewritten document, its metadata, the sweep's delete, the fork.
    const a2 = (walked as Record<string, {pages: Array<{versions: Array<{doc: unknown; meta: unknown; op: string}>}>}>)['main a:2'].pages.flatMap((p) => p.versions)
    expect(a2.map((v) => v.op)).to.deep.equal(['put', 'delete', 'put', 'put', 'put', 'put'])
    expect(a2[0].meta).to.deep.equal({origin: 'rest', requestId: 'r-1', user: 'ada'})
    const a4 = (walked as Record<string, {pages: Array<{versions: Array<{meta: unknown; op: string}>}>}>)['main a:4'].pages.flatMap((p) => p.versions)
    expect(a4.map((v) => v.op)).to.deep.equal(['delete', 'put'])
    expect(a4[0].meta).to.deep.equal({origin: 'expiry'})
    const dev = (walked as Record<string, {pages: Array<{versions: unknown[]}>}>)['dev a:1'].pages.flatMap((p) => p.versions)
    expect(dev).to.have.length(6)

    // Deleted: rebuilt from Git in one pass at open, with the same answers.
    rmSync(join(dir, 'index', '.history'), {force: true, recursive: true})
    const {lines, logger} = memoryLogger()
    db = await openEngine(dir, {fullText: false, logger, now})
    const commits = Number(gitOut(join(dir, 'repo'), ['rev-list', '--count', 'main']).trim())
    for (let i = 0; i < 100 && !lines.some((l) => l.includes('history index built') && l.includes('"branch":"main"')); i++) await new Promise((r) => setTimeout(r, 50))
    expect(lines.find((l) => l.includes('history index built') && l.includes('"branch":"main"'))).to.include(`"commits":${commits}`)
    expect(await past(db, ['main', 'dev'], times)).to.deep.equal(walked)
  })

  it('keeps a multi-byte character whole when it falls across two chunks of git log output', async () => {
    // Every commit's message is mostly 3-byte characters (the user and the id), and the walk's
    // output (~300 KB) comes in 64 KB chunks: a chunk boundary lands inside a character with
    // probability 2/3 each, so some always does. Decoding each chunk alone misread it as U+FFFD.
    const dir = tempDir()
    const user = '文'.repeat(3000)
    const ids = Array.from({length: 240}, (_, i) => `a:${'x'.repeat(i % 3)}${'字'.repeat(100)}${i}`)
    db = await openEngine(dir, {fullText: false, historyIndex: false})
    for (const id of ids) await db.put({id}, {meta: {user}})
    await db.close()
    const {lines, logger} = memoryLogger()
    db = await openEngine(dir, {fullText: false, logger})
    for (let i = 0; i < 200 && !lines.some((l) => l.includes('history index built')); i++) await new Promise((r) => setTimeout(r, 50))
    expect(lines.some((l) => l.includes('history index built'))).to.equal(true)
    const read = async (): Promise<string[]> => {
      const users: string[] = []
      for (const id of ids) for (const v of (await db!.history(id)).versions) users.push(v.meta?.user ?? '')
      return users
    }
    const indexed = await read()
    await db.close()
    db = await openEngine(dir, {fullText: false, historyIndex: false})
    const walked = await read()
    expect(walked.some((u) => u.includes('\ufffd'))).to.equal(false)
    expect(indexed.filter((u, i) => u !== walked[i])).to.deep.equal([])
  })

  it('follows a branch removed and made again, a ref moved back, and a damaged index file', async () => {
    const dir = tempDir()
    db = await openEngine(dir, {fullText: false})
    for (let v = 1; v <= 3; v++) await db.put({id: 'a:1', v})
    await db.createBranch('dev')
    for (let v = 1; v <= 3; v++) await db.put({id: 'a:2', v: `dev ${v}`}, {branch: 'dev'})
    expect((await db.history('a:2', {branch: 'dev'})).versions).to.have.length(3)
    await db.removeBranch('dev')
    expect(existsSync(join(dir, 'index', '.history', 'dev.sqlite'))).to.equal(false)
    await db.put({id: 'a:1', v: 4})
    await db.createBranch('dev')
    expect((await db.history('a:2', {branch: 'dev'})).versions).to.deep.equal([])
    expect((await db.history('a:1', {branch: 'dev'})).versions.map((v) => v.doc?.v)).to.deep.equal([4, 3, 2, 1])
    await db.put({id: 'a:1', v: 5}, {branch: 'dev'})
    await db.put({id: 'a:1', v: 6}, {branch: 'dev'})
    expect((await db.history('a:1', {branch: 'dev', limit: 1})).versions.map((v) => v.doc?.v)).to.deep.equal([6])
    await db.close()

    // A follower's forced update or a restore moves the ref back: the index is cut back to match.
    const repo = join(dir, 'repo')
    gitOut(repo, ['update-ref', 'refs/heads/dev', 'dev~1'])
    rmSync(join(dir, 'wal'), {force: true, recursive: true})
    // And main's index file is damaged.
    writeFileSync(join(dir, 'index', '.history', 'main.sqlite'), 'not a database'.repeat(100))
    rmSync(join(dir, 'index', '.history', 'main.sqlite-wal'), {force: true})
    const {lines, logger} = memoryLogger()
    db = await openEngine(dir, {fullText: false, logger})
    expect((await db.history('a:1', {branch: 'dev'})).versions.map((v) => v.doc?.v)).to.deep.equal([5, 4, 3, 2, 1])
    expect((await db.history('a:1')).versions.map((v) => v.doc?.v)).to.deep.equal([4, 3, 2, 1])
    await db.put({id: 'a:1', v: 7}, {branch: 'dev'})
    expect((await db.history('a:1', {branch: 'dev', limit: 2})).versions.map((v) => v.doc?.v)).to.deep.equal([7, 5])
    expect(lines.some((l) => l.includes('rebuilding it from Git'))).to.equal(true)
    expect(lines.some((l) => l.includes('cut back'))).to.equal(true)
  })

  it('rebuilds a history file of the earlier format at open', async () => {
    const dir = tempDir()
    db = await openEngine(dir, {fullText: false})
    for (let v = 1; v <= 3; v++) for (const id of ['a:1', 'a:2']) await db.put({id, v})
    await db.delete('a:2')
    expect((await db.history('a:1')).versions).to.have.length(3)
    await db.close()
    // The first format (one commit-id index, one changes table), with every commit but no changes:
    // read as this version's, its tip is the branch's and nothing would catch up, so a:1 would have no history.
    const file = join(dir, 'index', '.history', 'main.sqlite')
    const current = new Database(file, {readonly: true})
    const commits = current.prepare('SELECT pos, sha, ct, ms, ttext, meta, k FROM commits ORDER BY pos').raw().all()
    current.close()
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${file}${suffix}`, {force: true})
    const old = new Database(file)
    old.exec(`
      CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
      CREATE TABLE commits (pos INTEGER PRIMARY KEY, sha BLOB NOT NULL, ct INTEGER NOT NULL, ms INTEGER, ttext TEXT, meta TEXT, k INTEGER);
      CREATE UNIQUE INDEX commits_sha ON commits (sha);
      CREATE TABLE changes (path TEXT NOT NULL, pos INTEGER NOT NULL, PRIMARY KEY (path, pos)) WITHOUT ROWID;
      INSERT INTO meta VALUES ('format', '1'), ('monotonic', '1');
    `)
    const ins = old.prepare('INSERT INTO commits VALUES (?, ?, ?, ?, ?, ?, ?)')
    for (const row of commits) ins.run(...(row as unknown[]))
    old.close()
    expect(commits).to.have.length(7)

    const {lines, logger} = memoryLogger()
    db = await openEngine(dir, {fullText: false, logger})
    const indexed = [await db.history('a:1'), await db.history('a:2', {limit: 2})]
    const next = await db.history('a:2', {cursor: indexed[1].nextCursor, limit: 2})
    await db.close()
    expect(lines.some((l) => l.includes('of another format; rebuilding it from Git') && l.includes('format 1, this version reads 2'))).to.equal(true)
    const rebuilt = new Database(file, {readonly: true})
    expect(rebuilt.prepare(`SELECT value FROM meta WHERE key = 'format'`).pluck().get()).to.equal('2')
    rebuilt.close()

    db = await openEngine(dir, {fullText: false, historyIndex: false})
    const walked = [await db.history('a:1'), await db.history('a:2', {limit: 2})]
    expect(indexed).to.deep.equal(walked)
    expect(next).to.deep.equal(await db.history('a:2', {cursor: walked[1].nextCursor, limit: 2}))
    expect(indexed[0].versions.map((v) => v.doc?.v)).to.deep.equal([3, 2, 1])
    expect(next.versions.map((v) => v.op)).to.deep.equal(['put', 'put'])
  })
})
