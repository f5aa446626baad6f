import {expect} from 'chai'
import {spawn, spawnSync} from 'node:child_process'
import {existsSync, readFileSync, utimesSync, writeFileSync} from 'node:fs'
import {hostname} from 'node:os'
import {join} from 'node:path'

import {defaultWriter} from '../src/engine/engine.js'
import {docPath, parseId} from '../src/engine/ids.js'
import {createLogger} from '../src/engine/logger.js'
import {type Engine, openEngine} from '../src/engine/index.js'
import {cleanupTempDirs, gitOut, memoryLogger, tempDir} from './helpers/tmp.js'
import {killWriter} from './helpers/writer.js'

describe('svc engine', () => {
  let db: Engine | undefined
  afterEach(async () => {
    await db?.close().catch(() => {})
    db = undefined
  })
  after(cleanupTempDirs)

  it('stores each write as one commit in a real git repository, readable with git', async () => {
    const dir = tempDir()
    db = await openEngine(dir, {fullText: false})
    await db.put({id: 'users:1', name: 'Ada'}, {meta: {origin: 'api', requestId: 'r-1', user: 'alice'}})
    await db.put({id: 'users:1', name: 'Ada Lovelace'})
    await db.put({id: 'orders:7', total: 12})
    const del = await db.delete('orders:7')
    expect(del.existed).to.equal(true)
    await db.flush()
    const repo = join(dir, 'repo')
    expect(gitOut(repo, ['rev-list', '--count', 'main']).trim()).to.equal('4')
    const subjects = gitOut(repo, ['log', '--format=%s', 'main']).trim().split('\n')
    expect(subjects).to.deep.equal(['delete orders:7', 'put orders:7', 'put users:1', 'put users:1'])
    const first = gitOut(repo, ['log', '--reverse', '--format=%B', 'main']).split('Svc-Op')[1]
    expect(first).to.include('Svc-User: alice').and.include('Svc-Request-Id: r-1').and.include('Svc-Origin: api')
    const files = gitOut(repo, ['ls-tree', '-r', '--name-only', 'main']).trim().split('\n')
    expect(files).to.have.length(1)
    expect(files[0]).to.match(/^users\/[0-9a-f]\/[0-9a-f]\/[0-9a-f]\/[0-9a-f]\/1\.json$/)
    expect(JSON.parse(gitOut(repo, ['show', `main:${files[0]}`]))).to.deep.equal({id: 'users:1', name: 'Ada Lovelace'})
    gitOut(repo, ['fsck', '--full', '--strict'])
  })

  it('a bare key goes to the default table; ids are canonical table:key', async () => {
    db = await openEngine(tempDir(), {fullText: false})
    const r = await db.put({id: 'plain', v: 1})
    expect(r.id).to.equal('default:plain')
    expect(await db.get('plain')).to.deep.equal({id: 'default:plain', v: 1})
    expect(await db.tables()).to.deep.equal(['default'])
  })

  it('reads its own writes before git catches up, and pending-entries counts them', async () => {
    db = await openEngine(tempDir(), {checkpointDelayMs: 60_000, checkpointMaxDelayMs: 60_000, fullText: false})
    await db.put({id: 't:a', n: 1})
    await db.put({id: 't:a', n: 2})
    expect(db.stats().pendingEntries).to.equal(2)
    expect(await db.get('t:a')).to.deep.equal({id: 't:a', n: 2})
    await db.flush()
    expect(db.stats().pendingEntries).to.equal(0)
    expect(await db.get('t:a')).to.deep.equal({id: 't:a', n: 2})
  })

  it('history newest first with limit and cursor, as-of by commit and time, and diff', async () => {
    db = await openEngine(tempDir(), {fullText: false})
    for (let i = 1; i <= 5; i++) {
      await db.put({id: 'doc:x', rev: i, tag: i % 2 === 0 ? 'even' : 'odd'})
      // Versions one millisecond apart: as-of a time picks the last version at or before it.
      await new Promise((r) => setTimeout(r, 3))
    }
    await db.put({id: 'doc:other', rev: 0})
    const page1 = await db.history('doc:x', {limit: 2})
    expect(page1.versions.map((v) => v.doc?.rev)).to.deep.equal([5, 4])
    expect(page1.nextCursor).to.be.a('string')
    const page2 = await db.history('doc:x', {cursor: page1.nextCursor, limit: 2})
    expect(page2.versions.map((v) => v.doc?.rev)).to.deep.equal([3, 2])
    const page3 = await db.history('doc:x', {cursor: page2.nextCursor, limit: 2})
    expect(page3.versions.map((v) => v.doc?.rev)).to.deep.equal([1])
    expect(page3.nextCursor).to.equal(undefined)
    const rev2 = page2.versions[1]
    expect(await db.asOf('doc:x', {commit: rev2.commit})).to.deep.include({rev: 2})
    expect(await db.asOf('doc:x', {time: rev2.time})).to.deep.include({rev: 2})
    expect(await db.asOf('doc:x', {time: '2000-01-01T00:00:00Z'})).to.equal(undefined)
    const d = await db.diff('doc:x', {from: rev2.commit})
    expect(d).to.deep.equal([
      {after: 5, before: 2, op: 'change', path: '/rev'},
      {after: 'odd', before: 'even', op: 'change', path: '/tag'},
    ])
    await db.delete('doc:x')
    const h = await db.history('doc:x', {limit: 1})
    expect(h.versions[0]).to.include({doc: null, op: 'delete'})
  })

  it('lists a table by prefix in id order with a cursor', async () => {
    db = await openEngine(tempDir(), {fullText: false})
    for (const k of ['b', 'a', 'c', 'ab']) await db.put({id: `t:${k}`})
    await db.put({id: 'u:a'})
    const p1 = await db.list({limit: 2, table: 't'})
    expect(p1.docs.map((d) => d.id)).to.deep.equal(['t:a', 't:ab'])
    const p2 = await db.list({cursor: p1.nextCursor, limit: 2, table: 't'})
    expect(p2.docs.map((d) => d.id)).to.deep.equal(['t:b', 't:c'])
    expect((await db.list({prefix: 't:a'})).docs.map((d) => d.id)).to.deep.equal(['t:a', 't:ab'])
    expect(await db.count({table: 't'})).to.equal(4)
  })

  it('lists from the last id down with order desc, by page, prefix and across tables, as of a commit too', async () => {
    db = await openEngine(tempDir(), {fullText: false})
    for (const k of ['b', 'a', 'c', 'ab']) await db.put({id: `t:${k}`})
    for (const k of ['a', 'b']) await db.put({id: `u:${k}`})
    await db.put({id: 'v:a'})
    const ids = async (o: Parameters<Engine['list']>[0]) => (await db!.list(o)).docs.map((d) => d.id)
    // Every document, three a page, from the last id down: the cursor crosses from table to table.
    const seen: string[] = []
    let cursor: string | undefined
    do {
      const page = await db.list({cursor, limit: 3, order: 'desc'})
      seen.push(...page.docs.map((d) => d.id))
      cursor = page.nextCursor
    } while (cursor)
    expect(seen).to.deep.equal(['v:a', 'u:b', 'u:a', 't:c', 't:b', 't:ab', 't:a'])
    expect(await ids({order: 'desc', prefix: 't:a'})).to.deep.equal(['t:ab', 't:a'])
    expect(await ids({limit: 2, order: 'desc', table: 't'})).to.deep.equal(['t:c', 't:b'])
    expect(await ids({cursor: 't:b', order: 'desc', table: 't'})).to.deep.equal(['t:ab', 't:a'])
    // As of an earlier commit (before the u and v tables existed), in the same order.
    await db.flush()
    const history = await db.history('t:ab', {limit: 1})
    expect(await ids({asOf: {commit: history.versions[0].commit}, order: 'desc'})).to.deep.equal(['t:c', 't:b', 't:ab', 't:a'])
    let refused: unknown
    await db.list({order: 'sideways' as 'asc'}).catch((error: unknown) => (refused = error))
    expect(String(refused)).to.include('order must be asc or desc, got "sideways"')
  })

  it('branches: create from main, write independently, list, remove', async () => {
    const dir = tempDir()
    db = await openEngine(dir, {fullText: false})
    await db.put({id: 'a:1', v: 'main'})
    await db.createBranch('dev')
    await db.put({id: 'a:1', v: 'dev'}, {branch: 'dev'})
    await db.put({id: 'a:2', v: 'dev only'}, {branch: 'dev'})
    expect(await db.get('a:1')).to.deep.include({v: 'main'})
    expect(await db.get('a:1', {branch: 'dev'})).to.deep.include({v: 'dev'})
    expect(await db.get('a:2')).to.equal(undefined)
    expect((await db.branches()).map((b) => b.name)).to.deep.equal(['dev', 'main'])
    await db.removeBranch('dev')
    await db.put({id: 'a:3'})
    expect((await db.branches()).map((b) => b.name)).to.deep.equal(['main'])
    await db.close()
    db = await openEngine(dir, {fullText: false})
    expect((await db.branches()).map((b) => b.name)).to.deep.equal(['main'])
    expect(await db.count()).to.equal(2)
    gitOut(join(dir, 'repo'), ['fsck', '--full'])
  })

  it('rejects bad input with clear errors and keeps what is stored', async () => {
    db = await openEngine(tempDir(), {fullText: false, maxDocumentBytes: 1000})
    await db.put({id: 'k:1', ok: true})
    const cases: Array<[() => Promise<unknown>, string, RegExp]> = [
      [() => db!.put({id: ''}), 'invalid_id', /non-empty/],
      [() => db!.put({id: 'bad table:1'}), 'invalid_id', /invalid table name/],
      [() => db!.put({id: 't:'}), 'invalid_id', /empty key/],
      [() => db!.put({id: 't:\u0001'}), 'invalid_id', /control characters/],
      [() => db!.put({id: 7} as never), 'invalid_id', /string/],
      [() => db!.put([1, 2] as never), 'invalid_document', /JSON object/],
      [() => db!.put({id: 'k:big', blob: 'x'.repeat(2000)}), 'too_large', /limit is 1000/],
      [() => db!.put({id: 'k:2'}, {branch: 'nope'}), 'branch_not_found', /nope/],
      [() => db!.createBranch('no spaces'), 'invalid_argument', /invalid branch name/],
      [() => db!.createBranch('main'), 'branch_exists', /already exists/],
      [() => db!.removeBranch('main'), 'invalid_argument', /cannot be removed/],
      [() => db!.asOf('k:1', {commit: 'zz'}), 'invalid_argument', /invalid commit/],
      [() => db!.asOf('k:1', {time: 'yesterday-ish'}), 'invalid_argument', /invalid time/],
      [() => db!.history('k:1', {limit: -1}), 'invalid_argument', /limit/],
    ]
    for (const [fn, code, msg] of cases) {
      const err = await fn().then(() => undefined, (e: Error & {code?: string}) => e)
      expect(err, `${code} ${msg}`).to.be.instanceOf(Error)
      expect(err!.code).to.equal(code)
      expect(err!.message).to.match(msg)
    }
    expect(await db.get('k:1')).to.deep.equal({id: 'k:1', ok: true})
    expect((await db.delete('k:missing')).existed).to.equal(false)
  })

  it('applies back-pressure: writes wait while pending entries reach the bound, and all land', async () => {
    db = await openEngine(tempDir(), {checkpointDelayMs: 50, checkpointMaxDelayMs: 50, fullText: false, maxPendingEntries: 5})
    let maxSeen = 0
    const writes = Array.from({length: 20}, (_, i) => db!.put({id: `bp:${i}`, i}).then(() => (maxSeen = Math.max(maxSeen, db!.stats().pendingEntries))))
    await Promise.all(writes)
    expect(maxSeen).to.be.at.most(5)
    await db.flush()
    expect(await db.count()).to.equal(20)
  })

  it('a burst that outruns git reaches git by itself, without a flush, each write its own commit', async () => {
    const dir = tempDir()
    db = await openEngine(dir, {fullText: false})
    await Promise.all(Array.from({length: 6000}, (_, i) => db!.put({id: `burst:${i}`, i})))
    const deadline = Date.now() + 30_000
    while (db.stats().pendingEntries > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
    expect(db.stats().pendingEntries).to.equal(0)
    expect(gitOut(join(dir, 'repo'), ['rev-list', '--count', 'main']).trim()).to.equal('6000')
  })

  it("after a crash, waits for the previous run's git fast-import to end before reading the branches", async () => {
    const dir = tempDir()
    db = await openEngine(dir, {fullText: false})
    await db.put({id: 'o:1', v: 1})
    await db.close()
    // A crashed run: its lock names a process that is gone, and its fast-import still has a
    // commit and a checkpoint in its pipe.
    writeFileSync(join(dir, 'svc.lock'), JSON.stringify({host: hostname(), pid: spawnSync('true').pid, started: new Date().toISOString()}))
    const orphan = spawn('git', ['-C', join(dir, 'repo'), 'fast-import', '--quiet', '--done'], {stdio: ['pipe', 'ignore', 'ignore']})
    writeFileSync(join(dir, 'fast-import.pid'), String(orphan.pid))
    const body = '{\n  "id": "o:1",\n  "v": 2\n}\n'
    const path = docPath(parseId('o:1'))
    const msg = 'put o:1\n\nSvc-Op: put\nSvc-Id: o:1\nSvc-Seq: 2\n'
    // The orphan's last commit is sent only once the engine says it waits for the orphan: an open
    // that read the branches without waiting would miss it, whatever the machine's speed.
    let waiting!: () => void
    const saysWaiting = new Promise<void>((resolve) => (waiting = resolve))
    const lines: string[] = []
    const logger = createLogger({
      format: 'json',
      level: 'debug',
      write(line) {
        lines.push(line)
        if (line.includes('waiting for the git fast-import of the previous run to end')) waiting()
      },
    })
    const opening = openEngine(dir, {fullText: false, logger})
    await Promise.race([saysWaiting, opening.then(() => expect.fail('opened without waiting for the orphan'))])
    orphan.stdin.write(`commit refs/heads/main\ncommitter svc <svc@localhost> 1700000000 +0000\ndata ${msg.length}\n${msg}from refs/heads/main^0\nM 100644 inline ${path}\ndata ${body.length}\n${body}\ncheckpoint\n`)
    orphan.stdin.end('done\n')
    db = await opening
    expect(lines.join('\n')).to.include('waited for the git fast-import of the previous run to end')
    expect(await db.get('o:1')).to.deep.equal({id: 'o:1', v: 2})
    await db.put({id: 'o:1', v: 3})
    await db.flush()
    expect(gitOut(join(dir, 'repo'), ['rev-list', '--count', 'main']).trim()).to.equal('3')
    // fast-import's pid is recorded while it runs; the pack writer (SVC_WRITER=pack) has no process
    // to record, and drops the orphan's stale file.
    expect(existsSync(join(dir, 'fast-import.pid'))).to.equal(defaultWriter() === 'fast-import')
    await db.close()
    expect(existsSync(join(dir, 'fast-import.pid'))).to.equal(false)
  })

  it('keeps reading correctly while background repacks merge checkpoint packs', async () => {
    const dir = tempDir()
    db = await openEngine(dir, {fullText: false, repackEveryCheckpoints: 2})
    for (let round = 0; round < 8; round++) {
      await Promise.all(Array.from({length: 20}, (_, i) => db!.put({id: `r:${i}`, round})))
      await db.flush()
      // A reader that is never cached must find objects wherever the last repack moved them.
      expect((await db.history('r:3', {limit: 1})).versions[0].doc).to.deep.include({round})
    }
    await db.close()
    const packs = Number(/^packs: (\d+)/m.exec(gitOut(join(dir, 'repo'), ['count-objects', '-v']))?.[1])
    expect(packs).to.be.lessThan(8)
    gitOut(join(dir, 'repo'), ['fsck', '--full'])
  })

  it('writes sent while a background repack runs and after it are each one commit, none lost', async () => {
    const dir = tempDir()
    db = await openEngine(dir, {fullText: false, repackEveryCheckpoints: 1})
    let writes = 0
    for (let round = 0; round < 6; round++) {
      // No flush between the puts and the next round's: checkpoints (and so repacks and the
      // writer's restarts around them) happen while writes are on their way.
      await Promise.all(Array.from({length: 30}, (_, i) => db!.put({id: `m:${round}:${i}`, round})))
      writes += 30
      // Past the checkpoint delay: each round gets its own checkpoint, and so its own repack.
      await new Promise((resolve) => setTimeout(resolve, 80))
    }
    await db.flush()
    await db.close()
    const repo = join(dir, 'repo')
    expect(gitOut(repo, ['rev-list', '--count', 'main']).trim()).to.equal(String(writes))
    expect(gitOut(repo, ['ls-tree', '-r', '--name-only', 'main']).trim().split('\n')).to.have.length(writes)
    gitOut(repo, ['fsck', '--full'])
    db = await openEngine(dir, {fullText: false})
    expect(await db.get('m:5:29')).to.deep.equal({id: 'm:5:29', round: 5})
  })

  it('compact after background roll-ups (which skip the delta search) leaves the repository as small as a full delta search does', async () => {
    const dir = tempDir()
    db = await openEngine(dir, {fullText: false, repackEveryCheckpoints: 1})
    // Documents much alike: most of each one's bytes are a delta away from another's.
    // Two families of documents, written in turn: fast-import deltas a blob only against the one
    // written just before it (the other family), so the pairs are left for a delta search to find.
    // Seeded noise, so that zlib alone cannot shrink them as a delta does.
    let seed = 7
    const noise = (): string => Array.from({length: 600}, () => ((seed = (seed * 48_271) % 2_147_483_647) % 100_000).toString(36)).join(' ')
    const common = [noise(), noise()]
    const body = (round: number, i: number): string => `${common[i % 2]} ${round}-${i}`
    for (let round = 0; round < 6; round++) {
      await Promise.all(Array.from({length: 25}, (_, i) => db!.put({body: body(round, i), id: `c:${round}:${i}`})))
      await db.flush()
    }
    const repo = join(dir, 'repo')
    const packBytes = (r: string): number => Number(/^size-pack: (\d+)/m.exec(gitOut(r, ['count-objects', '-v']))?.[1])
    await db.compact()
    await db.close()
    db = undefined
    const compacted = packBytes(repo)
    // The reference: the same objects with every delta searched afresh.
    const reference = join(tempDir(), 'ref')
    spawnSync('git', ['clone', '-q', '--bare', '--no-local', repo, reference])
    gitOut(reference, ['repack', '-a', '-d', '-f', '-q'])
    expect(compacted).to.be.at.most(packBytes(reference) * 1.05)
    expect(gitOut(repo, ['rev-list', '--count', 'main']).trim()).to.equal('150')
    gitOut(repo, ['fsck', '--full'])
    db = await openEngine(dir, {fullText: false})
    expect(await db.get('c:5:24')).to.deep.equal({body: body(5, 24), id: 'c:5:24'})
  })

  it('under a sustained stream checkpoints grow apart, yet a flush puts every acknowledged write in git at once and none is lost', async () => {
    const dir = tempDir()
    // A short first bound and a small cap: the stream below makes the bound grow within a second.
    db = await openEngine(dir, {checkpointMaxDelayMs: 30, checkpointSustainedMaxDelayMs: 400, fullText: false, repackEveryCheckpoints: 3})
    const repo = join(dir, 'repo')
    let acknowledged = 0
    let stop = false
    const writers = Array.from({length: 4}, async (_, w) => {
      for (let i = 0; !stop; i++) {
        await db!.put({id: `s:${w}:${i}`, w, i})
        acknowledged++
        await new Promise((resolve) => setTimeout(resolve, 2))
      }
    })
    const counts: number[] = []
    for (let round = 0; round < 4; round++) {
      await new Promise((resolve) => setTimeout(resolve, 300))
      // Everything acknowledged before the flush is a commit in git when it returns, however far the bound has grown.
      const before = acknowledged
      await db.flush()
      const inGit = Number(gitOut(repo, ['rev-list', '--count', 'main']).trim())
      expect(inGit).to.be.at.least(before)
      counts.push(inGit)
    }
    stop = true
    await Promise.all(writers)
    await db.close()
    expect(counts[3]).to.be.greaterThan(counts[0])
    expect(gitOut(repo, ['rev-list', '--count', 'main']).trim()).to.equal(String(acknowledged))
    expect(gitOut(repo, ['ls-tree', '-r', '--name-only', 'main']).trim().split('\n')).to.have.length(acknowledged)
    gitOut(repo, ['fsck', '--full'])
    db = await openEngine(dir, {fullText: false})
    expect(await db.get('s:3:0')).to.deep.equal({i: 0, id: 's:3:0', w: 3})
    expect(db.stats().documents).to.equal(acknowledged)
  })

  it('when git fast-import dies, the engine restarts it and sends it every acknowledged write not yet in git', async () => {
    const dir = tempDir()
    db = await openEngine(dir, {checkpointDelayMs: 60_000, checkpointMaxDelayMs: 60_000, fullText: false})
    await db.put({id: 'w:1', v: 1})
    // Acknowledged but never committed: fast-import is killed before any checkpoint.
    await db.put({id: 'w:2', v: 2})
    await killWriter(db)
    await db.put({id: 'w:3', v: 3})
    await db.flush()
    expect(db.details().writerRestarts).to.equal(1)
    expect(db.details().writerError).to.equal(undefined)
    expect(gitOut(join(dir, 'repo'), ['log', '--format=%s', 'main']).trim().split('\n')).to.deep.equal(['put w:3', 'put w:2', 'put w:1'])
    await db.close()
    db = await openEngine(dir, {fullText: false})
    expect(await db.getMany(['w:1', 'w:2', 'w:3'])).to.deep.equal([{id: 'w:1', v: 1}, {id: 'w:2', v: 2}, {id: 'w:3', v: 3}])
    gitOut(join(dir, 'repo'), ['fsck', '--full'])
  })

  it('one instance per data directory; a dead owner\'s lock and stale git locks are cleaned', async () => {
    const dir = tempDir()
    db = await openEngine(dir, {fullText: false})
    await db.put({id: 'x:1'})
    const err = await openEngine(dir).then(() => undefined, (e: Error & {code?: string}) => e)
    expect(err?.code).to.equal('locked')
    expect(err?.message).to.match(/in use by another svc (process|engine).*\(pid \d+\)/)
    await db.close()
    // A lock left by a process that no longer exists, and a git ref lock from a crash.
    writeFileSync(join(dir, 'svc.lock'), JSON.stringify({host: (await import('node:os')).hostname(), pid: 2 ** 22 + 12_345}))
    const refLock = join(dir, 'repo', 'refs', 'heads', 'main.lock')
    writeFileSync(refLock, '')
    const old = new Date(Date.now() - 120_000)
    utimesSync(refLock, old, old)
    const {lines, logger} = memoryLogger()
    db = await openEngine(dir, {fullText: false, logger})
    expect(existsSync(refLock)).to.equal(false)
    expect(lines.join('')).to.include('removed stale git lock file')
    await db.put({id: 'x:2'})
    await db.flush()
    expect(await db.count()).to.equal(2)
  })

  it('takes over the lock of a killed owner not yet reaped (a zombie: a restart right after SIGKILL in a container)', async function () {
    // A shell that starts a child and becomes a `sleep` that never waits for it: the child, once
    // ended, stays a zombie until the sleep ends.
    const parent = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 30'], {stdio: ['ignore', 'pipe', 'ignore']})
    try {
      const pid = Number(await new Promise<string>((resolve) => parent.stdout.once('data', (d: Buffer) => resolve(d.toString()))))
      const until = Date.now() + 10_000
      const state = (): string => {
        try {
          const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
          return stat[stat.lastIndexOf(')') + 2]
        } catch {
          return 'gone'
        }
      }
      while (state() !== 'Z' && Date.now() < until) await new Promise((r) => setTimeout(r, 20))
      if (state() !== 'Z') this.skip()
      const dir = tempDir()
      db = await openEngine(dir, {fullText: false})
      await db.put({id: 'z:1'})
      await db.close()
      writeFileSync(join(dir, 'svc.lock'), JSON.stringify({host: hostname(), pid, started: new Date().toISOString()}))
      db = await openEngine(dir, {fullText: false})
      expect(await db.get('z:1')).to.deep.equal({id: 'z:1'})
    } finally {
      parent.kill('SIGKILL')
    }
  })
})
