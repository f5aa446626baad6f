import {expect} from 'chai'
import {readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'

import {hasCommitGraph} from '../src/engine/commit-graph.js'
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
})
