import {expect} from 'chai'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'

import {CommitWriter} from '../src/engine/writer.js'
import {cleanupTempDirs, gitOut, tempDir} from './helpers/tmp.js'

/**
 * The writer replaces its fast-import once the file names it has loaded pass the budget (a large
 * table makes fast-import's fixed-size name table slow, docs/svc.md): the commits stay one per
 * write, in order, on the same branch, and the repository stays sound.
 */
describe('svc writer: fast-import replaced past the name budget', () => {
  after(cleanupTempDirs)

  it('keeps every commit, in order, across the replacements', async () => {
    const dir = tempDir()
    const repo = join(dir, 'repo')
    gitOut(dir, ['init', '--bare', '-q', repo])
    gitOut(repo, ['symbolic-ref', 'HEAD', 'refs/heads/main'])
    const pidFile = join(dir, 'fast-import.pid')
    const branches = new Set<string>()
    const pids = new Set<string>()
    // Each commit loads a new directory of ~3 names: a budget of 10 replaces the process every few commits.
    const writer = new CommitWriter(repo, () => branches, undefined, pidFile, undefined, 10)
    for (let i = 0; i < 40; i++) {
      writer.commit({authorName: 'svc', branch: 'main', files: [{content: Buffer.from(`{"n": ${i}}\n`), dirEntries: 3, path: `t/${i % 16}/${i}.json`}], message: `put t:${i}\n`, time: Date.now()})
      pids.add(readFileSync(pidFile, 'utf8'))
      // Checkpoints asked before, during and after a replacement all complete.
      if (i % 7 === 0) await writer.checkpoint()
    }
    await writer.checkpoint()
    await writer.close()
    expect(pids.size).to.be.greaterThan(5)
    expect(gitOut(repo, ['log', '--format=%s', 'main']).trim().split('\n')).to.deep.equal(Array.from({length: 40}, (_, i) => `put t:${39 - i}`))
    expect(gitOut(repo, ['ls-tree', '-r', '--name-only', 'main']).trim().split('\n')).to.have.length(40)
    gitOut(repo, ['fsck', '--full', '--strict'])
  })

  it("counts a directory's names once per process", async () => {
    const dir = tempDir()
    const repo = join(dir, 'repo')
    gitOut(dir, ['init', '--bare', '-q', repo])
    const pidFile = join(dir, 'fast-import.pid')
    const branches = new Set<string>()
    const writer = new CommitWriter(repo, () => branches, undefined, pidFile, undefined, 1000)
    const first = readFileSync(pidFile, 'utf8')
    // 200 writes into one directory of a large table: one load (400 names) and 200 names of their own.
    for (let i = 0; i < 200; i++) writer.commit({authorName: 'svc', branch: 'main', files: [{content: Buffer.from(`${i}\n`), dirEntries: 400, path: `t/0/${i}.json`}], message: `put ${i}\n`, time: Date.now()})
    await writer.checkpoint()
    expect(readFileSync(pidFile, 'utf8')).to.equal(first)
    await writer.close()
    expect(gitOut(repo, ['rev-list', '--count', 'main']).trim()).to.equal('200')
  })
})
