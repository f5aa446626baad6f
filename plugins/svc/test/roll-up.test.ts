import {expect} from 'chai'
import {type ChildProcess, execFileSync, spawn} from 'node:child_process'
import {chmodSync, cpSync, existsSync, mkdirSync, readdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {defaultWriter} from '../src/engine/engine.js'
import {type Engine, nullLogger, openEngine} from '../src/engine/index.js'
import {useGitSpawner} from '../src/engine/git-spawner.js'
import {geometricSplit, rollUp} from '../src/engine/roll-up.js'
import {Health} from '../src/servers/health.js'
import {createMetrics} from '../src/servers/metrics.js'
import {startRestServer} from '../src/servers/rest/index.js'
import {cleanupTempDirs, gitOut, tempDir} from './helpers/tmp.js'

const packNames = (repo: string): string[] =>
  readdirSync(join(repo, 'objects', 'pack'))
    .filter((f) => f.endsWith('.pack'))
    .map((f) => f.slice(0, -5))
    .sort()
const countObjects = (repo: string): Record<string, number> =>
  Object.fromEntries(
    gitOut(repo, ['count-objects', '-v'])
      .trim()
      .split('\n')
      .map((l) => l.split(': '))
      .map(([k, v]) => [k, Number(v)]),
  )
/** Every object of the repository with its type and size: what a reader can get out of it. */
const allObjects = (repo: string): string => gitOut(repo, ['cat-file', '--batch-all-objects', '--batch-check=%(objectname) %(objecttype) %(objectsize)'])

/**
 * A bare repository of packs holding the given numbers of blobs (the first `kept` of them with a
 * `.keep`), plus `loose` loose blobs.
 */
function packedRepo(sizes: number[], loose: number, kept = 0): string {
  const repo = join(tempDir(), 'r.git')
  execFileSync('git', ['init', '-q', '--bare', repo])
  const files = tempDir()
  let n = 0
  const blobs = (count: number): string[] => {
    const paths = Array.from({length: count}, () => {
      const p = join(files, `f${n}`)
      writeFileSync(p, `blob ${n++} ${'x'.repeat(n % 50)}\n`)
      return p
    })
    return execFileSync('git', ['-C', repo, 'hash-object', '-w', '--stdin-paths'], {encoding: 'utf8', input: paths.join('\n')}).trim().split('\n')
  }
  sizes.forEach((size, i) => {
    const hash = execFileSync('git', ['-C', repo, 'pack-objects', '-q', join(repo, 'objects', 'pack', 'pack')], {encoding: 'utf8', input: blobs(size).join('\n') + '\n'}).trim()
    if (i < kept) writeFileSync(join(repo, 'objects', 'pack', `pack-${hash}.keep`), '')
  })
  gitOut(repo, ['prune-packed'])
  blobs(loose)
  return repo
}

describe('svc roll-up by object list', function () {
  this.timeout(120_000)
  let db: Engine | undefined
  afterEach(async () => {
    await db?.close()
    db = undefined
  })
  after(cleanupTempDirs)

  it('merges the packs and loose objects git repack --geometric=2 merges, leaving the same objects and the kept packs alone', async () => {
    // Sorted by size: 1, 2, 3 break the progression, 10 then joins them (16 objects), 40 and 100 stay.
    const repo = packedRepo([5, 1, 2, 3, 10, 40, 100], 7, 1)
    const before = packNames(repo)
    const theirs = join(tempDir(), 'theirs.git')
    cpSync(repo, theirs, {recursive: true})
    gitOut(theirs, ['repack', '-d', '-q', '--geometric=2', '--window=0', '--no-write-bitmap-index'])

    const result = await rollUp(repo)

    expect(result.merged).to.have.length(4)
    expect(result.loose).to.equal(7)
    // The packs left untouched are the same ones, the kept pack among them, and so is the count.
    expect(packNames(repo).filter((p) => before.includes(p))).to.deep.equal(packNames(theirs).filter((p) => before.includes(p)))
    expect(packNames(repo)).to.have.length(packNames(theirs).length).and.to.have.length(4)
    expect(allObjects(repo)).to.equal(allObjects(theirs))
    expect(countObjects(repo)).to.deep.include({count: 0, garbage: 0, packs: 4})
    execFileSync('git', ['-C', repo, 'fsck', '--full', '--strict'], {stdio: 'pipe'})
    // The merged pack (23 objects) now breaks the progression of 40 and 100: both merge again into it, as git's would.
    gitOut(theirs, ['repack', '-d', '-q', '--geometric=2', '--window=0', '--no-write-bitmap-index'])
    expect((await rollUp(repo)).merged).to.have.length(3)
    expect(packNames(repo).filter((p) => before.includes(p))).to.deep.equal(packNames(theirs).filter((p) => before.includes(p))).and.to.have.length(1)
    expect(packNames(repo)).to.have.length(2)
    expect(allObjects(repo)).to.equal(allObjects(theirs))
    // Nothing left to merge (one pack and the kept one): a roll-up writes nothing.
    expect(await rollUp(repo)).to.deep.equal({loose: 0, merged: []})
    expect(packNames(repo)).to.have.length(2)
  })

  it('chooses the packs as git does for progressions that hold, break at the bottom, or pull the largest in', () => {
    expect(geometricSplit([])).to.equal(0)
    expect(geometricSplit([7])).to.equal(0)
    expect(geometricSplit([1, 2, 4, 8])).to.equal(0)
    expect(geometricSplit([1, 1, 4, 8])).to.equal(2)
    expect(geometricSplit([10, 10, 10, 10, 100])).to.equal(4)
    expect(geometricSplit([10, 10, 10, 10, 70])).to.equal(5)
  })

  it('writes the same pack whether the git helper or the server itself lists the objects', async () => {
    const repo = packedRepo([3, 3, 3, 20], 2)
    const copy = join(tempDir(), 'copy.git')
    cpSync(repo, copy, {recursive: true})
    const direct = await rollUp(repo)
    const release = useGitSpawner()
    try {
      const helped = await rollUp(copy)
      expect(helped.pack).to.be.a('string').and.to.equal(direct.pack)
    } finally {
      release()
    }
    expect(packNames(copy)).to.deep.equal(packNames(repo))
  })

  it('keeps every acknowledged write readable through its open reader and over REST while roll-ups remove the packs it read from', async () => {
    const dir = tempDir()
    // No byte cache: reads after each roll-up go to `git cat-file --batch`, opened before the packs it knew were removed.
    db = await openEngine(dir, {cacheBytes: 0, fullText: false, logger: nullLogger, repackEveryCheckpoints: 1})
    const metrics = createMetrics(db)
    const server = await startRestServer(
      {engine: db, logger: nullLogger, metrics: metrics.connections},
      {health: new Health(db, {startedAt: Date.now(), version: '9.9.9'}), host: '127.0.0.1', maxBodyBytes: 4096, metrics, port: 0},
    )
    const repo = join(dir, 'repo')
    const base = `http://127.0.0.1:${server.port}`
    const removed = new Set<string>()
    let writes = 0
    try {
      for (let round = 0; round < 10; round++) {
        // Rounds of 60 writes leave a pack each, rounds of 5 loose objects (under fast-import's unpack limit).
        const count = round % 3 === 2 ? 5 : 60
        await Promise.all(Array.from({length: count}, (_, i) => db!.put({id: `r:${round}:${i}`, round})))
        writes += count
        const packs = packNames(repo)
        await db.flush()
        // flush waits for the checkpoint; the roll-up after it runs in the background: wait for its packs to go.
        for (let t = 0; t < 100 && packNames(repo).length >= packs.length && packs.length > 1; t++) await new Promise((r) => setTimeout(r, 20))
        for (const p of packs) if (!packNames(repo).includes(p)) removed.add(p)
        for (let r = 0; r <= round; r++) {
          const n = r % 3 === 2 ? 5 : 60
          for (const i of [0, n - 1]) {
            expect(await db.get(`r:${r}:${i}`)).to.deep.equal({id: `r:${r}:${i}`, round: r})
            const res = await fetch(`${base}/api/v1/documents/r:${r}:${i}`)
            expect(res.status).to.equal(200)
            expect(await res.json()).to.deep.equal({id: `r:${r}:${i}`, round: r})
          }
        }
      }
    } finally {
      await server.close()
    }
    await db.close()
    db = undefined
    expect(removed.size, 'packs merged away while the reader was open').to.be.greaterThan(2)
    expect(gitOut(repo, ['rev-list', '--count', 'main']).trim()).to.equal(String(writes))
    expect(gitOut(repo, ['ls-tree', '-r', '--name-only', 'main']).trim().split('\n')).to.have.length(writes)
    expect(countObjects(repo).packs).to.be.at.most(4)
    gitOut(repo, ['fsck', '--full'])
  })

  for (const stall of ['pack-objects', 'prune-packed']) {
    // prune-packed runs only when loose objects are there to pack: fast-import leaves them (small
    // checkpoints under its unpack limit), the pack writer never does; that stall runs fast-import.
    const writer = stall === 'prune-packed' ? 'fast-import' : defaultWriter()
    it(`loses nothing acknowledged when the server is killed during a roll-up's ${stall}, and the next start cleans up after it`, async () => {
      const dir = tempDir()
      const repo = join(dir, 'repo')
      // A git that stalls at the roll-up's step: after pack-objects has written its pack, or before
      // prune-packed, with the new pack in place and the merged ones removed.
      const bin = tempDir('svc-git-')
      const mark = join(bin, 'stalled')
      const realGit = execFileSync('sh', ['-c', 'command -v git'], {encoding: 'utf8'}).trim()
      const stallAt =
        stall === 'pack-objects' ? `${realGit} "$@"; rc=$?; touch "${mark}"; sleep 30; exit $rc` : `touch "${mark}"; sleep 30; exec ${realGit} "$@"`
      writeFileSync(join(bin, 'git'), `#!/bin/sh\nfor a in "$@"; do [ "$a" = ${stall} ] && [ ! -e "${mark}" ] && { ${stallAt}; }; done\nexec ${realGit} "$@"\n`)
      chmodSync(join(bin, 'git'), 0o755)
      mkdirSync(dir, {recursive: true})
      const engineUrl = new URL('../src/engine/index.ts', import.meta.url).href
      const script = `
        const {openEngine} = await import(${JSON.stringify(engineUrl)})
        const db = await openEngine(${JSON.stringify(dir)}, {fullText: false, repackEveryCheckpoints: 2, writer: ${JSON.stringify(writer)}})
        for (let round = 0; ; round++) {
          const count = round % 3 === 2 ? 5 : 40
          await Promise.all(Array.from({length: count}, (_, i) => db.put({id: 'k:' + round + ':' + i, round}).then(() => process.stdout.write('k:' + round + ':' + i + '\\n'))))
          await db.flush()
        }`
      // tsx for the engine's TypeScript, given here: mocha's own loader does not pass on to children.
      const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        env: {...process.env, NODE_OPTIONS: '', PATH: `${bin}:${process.env.PATH}`},
        stdio: ['ignore', 'pipe', 'inherit'],
      })
      const acked: string[] = []
      let rest = ''
      child.stdout!.on('data', (d: Buffer) => {
        const lines = (rest + d.toString()).split('\n')
        rest = lines.pop() ?? ''
        acked.push(...lines)
      })
      const exited = new Promise((resolve) => child.on('exit', resolve))
      try {
        for (let t = 0; t < 600 && !existsSync(mark) && child.exitCode === null; t++) await new Promise((r) => setTimeout(r, 50))
        expect(existsSync(mark), `the roll-up reached ${stall}`).to.equal(true)
        // Writes go on while the roll-up is stalled.
        const at = acked.length
        for (let t = 0; t < 200 && acked.length < at + 40; t++) await new Promise((r) => setTimeout(r, 20))
      } finally {
        child.kill('SIGKILL')
        await exited
      }
      if (stall === 'pack-objects') expect(readdirSync(join(repo, 'objects', 'pack')).some((f) => f.startsWith('tmp_rollup-'))).to.equal(true)
      expect(acked.length).to.be.greaterThan(100)

      db = await openEngine(dir, {fullText: false, logger: nullLogger})
      for (const id of acked) expect(await db.get(id), id).to.deep.include({id})
      await db.close()
      db = undefined
      const commits = Number(gitOut(repo, ['rev-list', '--count', 'main']).trim())
      const files = gitOut(repo, ['ls-tree', '-r', '--name-only', 'main']).trim().split('\n').length
      // One commit per write: the acknowledged ones, and those sent but not yet acknowledged when it died.
      expect(commits).to.equal(files).and.to.be.at.least(acked.length)
      expect(readdirSync(join(repo, 'objects', 'pack')).filter((f) => f.startsWith('tmp_'))).to.deep.equal([])
      expect(countObjects(repo).garbage).to.equal(0)
      gitOut(repo, ['fsck', '--full'])
    })
  }
})
