import {expect} from 'chai'

import {lsTreeEntries} from '../src/engine/branch-state.js'
import {type Engine, openEngine} from '../src/engine/index.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'

const sha = (n: number) => n.toString(16).padStart(40, '0')
const PATHS = ['items/0/0/0/1/2951.json', 'caf\u00E9s/a/b/c/d/cr\u00E8me \u20AC \u{1F600}.json', 'x/1/2/3/4/k.json.expires-1700000000000', 'x/1/2/3/4/k.json']
const OUTPUT = Buffer.from(PATHS.map((p, i) => `100644 blob ${sha(i + 1)}\t${p}\0`).join(''))

function parse(chunks: Buffer[]): Array<[string, string]> {
  const out: Array<[string, string]> = []
  const onChunk = lsTreeEntries((path, s) => out.push([path, s]))
  for (const c of chunks) onChunk(c)
  return out
}

describe('svc branch state', () => {
  let db: Engine | undefined
  afterEach(async () => {
    await db?.close().catch(() => {})
    db = undefined
  })
  after(cleanupTempDirs)

  it('reads every ls-tree line whole wherever the output is cut, inside a multi-byte character too', () => {
    const want = PATHS.map((p, i) => [p, sha(i + 1)])
    expect(parse([OUTPUT])).to.deep.equal(want)
    for (let cut = 1; cut < OUTPUT.length; cut++) {
      expect(parse([OUTPUT.subarray(0, cut), OUTPUT.subarray(cut)]), `cut at byte ${cut}`).to.deep.equal(want)
    }
    // One byte a chunk: every line is carried over many chunks.
    expect(parse([...OUTPUT].map((b) => Buffer.from([b])))).to.deep.equal(want)
  })

  it('counts and lists each table from writes, deletes, a restart and a fork, each branch on its own', async () => {
    const dir = tempDir()
    db = await openEngine(dir, {fullText: false})
    for (const k of ['b', 'a', 'c']) await db.put({id: `t:${k}`})
    await db.put({id: 'u:a'})
    await db.put({id: 't:a', v: 2})
    await db.delete('t:b')
    const ids = async (table: string, branch?: string) => (await db!.list({branch, table})).docs.map((d) => d.id)
    expect(await ids('t')).to.deep.equal(['t:a', 't:c'])
    expect([await db.count({table: 't'}), await db.count({table: 'u'}), await db.count()]).to.deep.equal([2, 1, 3])
    await db.close()
    db = await openEngine(dir, {fullText: false})
    expect([await db.count({table: 't'}), await db.count({table: 'u'})]).to.deep.equal([2, 1])
    expect(await ids('t')).to.deep.equal(['t:a', 't:c'])
    await db.createBranch('dev')
    await db.put({id: 't:d'}, {branch: 'dev'})
    await db.delete('u:a', {branch: 'dev'})
    expect(await ids('t', 'dev')).to.deep.equal(['t:a', 't:c', 't:d'])
    expect(await db.tables({branch: 'dev'})).to.deep.equal(['t'])
    expect([await db.count({branch: 'dev', table: 't'}), await db.count({branch: 'dev', table: 'u'})]).to.deep.equal([3, 0])
    // The fork's writes leave main's counts and listings as they were.
    expect(await ids('t')).to.deep.equal(['t:a', 't:c'])
    expect(await db.tables()).to.deep.equal(['t', 'u'])
    expect([await db.count({table: 't'}), await db.count({table: 'u'})]).to.deep.equal([2, 1])
  })
})
