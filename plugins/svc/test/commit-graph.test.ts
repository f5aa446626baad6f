import {expect} from 'chai'
import {execFileSync} from 'node:child_process'
import {readdirSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {hasCommitGraph, writeCommitGraph} from '../src/engine/commit-graph.js'
import {type Engine, openEngine} from '../src/engine/index.js'
import {cleanupTempDirs, gitOut, tempDir} from './helpers/tmp.js'

/** True when every layer of the repository's commit-graph carries changed-path Bloom filters (chunks BIDX and BDAT). */
function graphHasBloomFilters(repo: string): boolean {
  const info = join(repo, 'objects', 'info')
  const layers = hasCommitGraph(repo) ? readdirSync(join(info, 'commit-graphs'), {withFileTypes: true}).filter((f) => f.name.endsWith('.graph')) : []
  const files = layers.length > 0 ? layers.map((f) => join(info, 'commit-graphs', f.name)) : [join(info, 'commit-graph')]
  return files.every((f) => {
    const head = readFileSync(f).subarray(0, 200).toString('latin1')
    return head.includes('BIDX') && head.includes('BDAT')
  })
}

/** Git's own count, for a `git log -- <path>` walk, of the commits whose changed-path filter it found missing. */
function commitsWithoutFilter(repo: string, path: string): number {
  const trace = join(tempDir(), 'trace2.txt')
  execFileSync('git', ['-C', repo, 'log', '--format=%h', '--', path], {env: {...process.env, GIT_TRACE2_PERF: trace}})
  const stats = /statistics:(\{[^}]*\})/.exec(readFileSync(trace, 'utf8'))
  if (!stats) throw new Error('git log printed no Bloom filter statistics')
  return (JSON.parse(stats[1]) as {filter_not_present: number}).filter_not_present
}

/** `n` commits on the current branch, each changing one of a few files. */
function commits(repo: string, from: number, n: number): void {
  for (let i = from; i < from + n; i++) {
    writeFileSync(join(repo, `f${i % 3}`), String(i))
    gitOut(repo, ['add', '-A'])
    gitOut(repo, ['commit', '-q', '-m', `c${i}`])
  }
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (check()) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`timed out waiting for ${what}`)
}

describe('svc engine: history reads use a commit-graph with changed-path filters', () => {
  let db: Engine | undefined
  afterEach(async () => {
    await db?.close().catch(() => {})
    db = undefined
  })
  after(cleanupTempDirs)

  it('writes one with the background repack, and history answers the same with it', async () => {
    const dir = tempDir()
    db = await openEngine(dir, {fullText: false, repackEveryCheckpoints: 1})
    await db.put({id: 'users:1', name: 'Ada'})
    await db.put({id: 'users:2', name: 'Ann'})
    await db.put({id: 'users:1', name: 'Ada Lovelace'})
    await db.flush()
    const repo = join(dir, 'repo')
    await until(() => hasCommitGraph(repo), 'the commit-graph')
    expect(graphHasBloomFilters(repo)).to.equal(true)
    const versions = (await db.history('users:1')).versions.map((v) => v.doc)
    expect(versions).to.deep.equal([{id: 'users:1', name: 'Ada Lovelace'}, {id: 'users:1', name: 'Ada'}])
    gitOut(repo, ['commit-graph', 'verify'])
  })

  it('gives a large repository that has none one in the background at open', async () => {
    const dir = tempDir()
    db = await openEngine(dir, {fullText: false, repackEveryCheckpoints: 1_000_000})
    for (let b = 0; b < 5; b++) await db.batch(Array.from({length: 1000}, (_, i) => ({doc: {id: `items:${b * 1000 + i}`, n: i}, op: 'put' as const})))
    await db.close()
    const repo = join(dir, 'repo')
    expect(hasCommitGraph(repo)).to.equal(false)
    db = await openEngine(dir, {fullText: false})
    await until(() => hasCommitGraph(repo), 'the commit-graph')
    expect(graphHasBloomFilters(repo)).to.equal(true)
    expect((await db.history('items:4999')).versions).to.have.length(1)
  })

  it('computes at most the bound of new filters, and a later layer merge keeps the filters already written', async () => {
    const repo = tempDir()
    gitOut(repo, ['init', '-q'])
    gitOut(repo, ['config', 'user.name', 'svc'])
    gitOut(repo, ['config', 'user.email', 'svc@localhost'])
    commits(repo, 0, 20)
    expect(await writeCommitGraph(repo, new AbortController().signal)).to.equal(undefined)
    // The root commit is the one git never looks a filter up for (it has no parent to diff with).
    expect(commitsWithoutFilter(repo, 'f1')).to.equal(0)
    commits(repo, 20, 20)
    expect(await writeCommitGraph(repo, new AbortController().signal, 5)).to.equal(undefined)
    // 20 new commits, 5 given a filter; git's default split merges the two equal layers into one.
    expect(commitsWithoutFilter(repo, 'f1')).to.equal(15)
    gitOut(repo, ['commit-graph', 'verify'])
    expect(gitOut(repo, ['log', '--format=%s', '--', 'f1']).trim().split('\n')).to.have.length(13)
  })
})
