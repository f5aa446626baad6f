import {expect} from 'chai'
import {spawnSync} from 'node:child_process'
import {mkdirSync} from 'node:fs'
import {join} from 'node:path'

import {docPath, legacyDocPath, parseId} from '../src/engine/ids.js'
import {type Engine, openEngine} from '../src/engine/index.js'
import {cleanupTempDirs, gitOut, tempDir} from './helpers/tmp.js'

/**
 * A repository written before documents moved to the four-level layout: its documents sit at
 * `<table>/<ab>/<cd>/<key>.json`. Built with plain `git fast-import`, the way svc wrote it then.
 */
function legacyRepo(dir: string, docs: Array<Record<string, unknown> & {id: string}>): void {
  const repo = join(dir, 'repo')
  mkdirSync(dir, {recursive: true})
  spawnSync('git', ['init', '--bare', '-q', repo])
  spawnSync('git', ['-C', repo, 'symbolic-ref', 'HEAD', 'refs/heads/main'])
  let stream = ''
  for (const [i, d] of docs.entries()) {
    const body = `${JSON.stringify(d, null, 2)}\n`
    const msg = `put ${d.id}\n\nSvc-Op: put\nSvc-Id: ${d.id}\n`
    stream += `commit refs/heads/main\ncommitter svc <svc@localhost> ${1_700_000_000 + i} +0000\ndata ${Buffer.byteLength(msg)}\n${msg}`
    stream += `M 100644 inline ${legacyDocPath(parseId(d.id))}\ndata ${Buffer.byteLength(body)}\n${body}\n`
  }
  const r = spawnSync('git', ['-C', repo, 'fast-import', '--quiet'], {input: stream})
  expect(r.status, r.stderr.toString()).to.equal(0)
}

const files = (dir: string): string[] => gitOut(join(dir, 'repo'), ['ls-tree', '-r', '--name-only', 'main']).trim().split('\n')

describe('svc engine over a repository in the older two-level layout', () => {
  let db: Engine | undefined
  afterEach(async () => {
    await db?.close().catch(() => {})
    db = undefined
  })
  after(cleanupTempDirs)

  it('reads its documents, rewrites them where they are, and puts new documents in the new layout', async () => {
    const dir = tempDir()
    const long = `t:${'k'.repeat(300)}`
    legacyRepo(dir, [{id: 'u:1', name: 'Ada'}, {id: 'u:2', name: 'Grace'}, {id: long, v: 1}])
    db = await openEngine(dir, {fullText: false})
    expect(await db.get('u:1')).to.deep.equal({id: 'u:1', name: 'Ada'})
    expect(await db.get(long)).to.deep.equal({id: long, v: 1})
    expect((await db.list({table: 'u'})).docs.map((d) => d.id)).to.deep.equal(['u:1', 'u:2'])
    const before = gitOut(join(dir, 'repo'), ['rev-parse', 'main']).trim()

    await db.put({id: 'u:1', name: 'Ada Lovelace'})
    await db.put({id: long, v: 2})
    await db.delete('u:2')
    await db.put({id: 'u:3', name: 'Edsger'})
    await db.flush()
    // Rewritten in place, deleted from its old place, and the newcomer in the new layout: no document twice.
    expect(files(dir).sort()).to.deep.equal([legacyDocPath(parseId('u:1')), legacyDocPath(parseId(long)), docPath(parseId('u:3'))].sort())

    // History and as-of reads find versions at the older path.
    const h = await db.history('u:1')
    expect(h.versions.map((v) => v.doc)).to.deep.equal([{id: 'u:1', name: 'Ada Lovelace'}, {id: 'u:1', name: 'Ada'}])
    expect(await db.asOf('u:2', {commit: before})).to.deep.equal({id: 'u:2', name: 'Grace'})
    expect(await db.diff('u:1', {from: before})).to.have.length.above(0)

    // A restart reads the mixed tree back and keeps writing each document where it is.
    await db.close()
    db = await openEngine(dir, {fullText: false})
    expect(await db.get('u:1')).to.deep.equal({id: 'u:1', name: 'Ada Lovelace'})
    expect(await db.get('u:3')).to.deep.equal({id: 'u:3', name: 'Edsger'})
    await db.put({id: 'u:1', name: 'A. Lovelace'})
    await db.put({id: 'u:3', name: 'E. W. Dijkstra'})
    await db.flush()
    expect(files(dir)).to.have.length(3)
    expect(await db.get('u:1')).to.deep.equal({id: 'u:1', name: 'A. Lovelace'})
    const repo = join(dir, 'repo')
    // One commit per write: 3 imported, 4 before the restart, 2 after.
    expect(gitOut(repo, ['rev-list', '--count', 'main']).trim()).to.equal('9')
    gitOut(repo, ['fsck', '--full', '--strict'])
  })
})
