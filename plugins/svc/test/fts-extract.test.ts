import {expect} from 'chai'
import {execFileSync} from 'node:child_process'
import {copyFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {TextExtractor} from '../src/engine/fts/extract.js'
import {IndexStore} from '../src/engine/fts/store.js'
import {documentText} from '../src/engine/fulltext.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'

/** Writes each content as a blob (one git call for all) and returns their ids. */
function blobs(repo: string, contents: string[]): string[] {
  const dir = tempDir()
  const files = contents.map((c, i) => {
    const f = join(dir, String(i))
    writeFileSync(f, c)
    return f
  })
  return execFileSync('git', ['-C', repo, 'hash-object', '-w', '--stdin-paths'], {encoding: 'utf8', input: files.join('\n')}).trim().split('\n')
}

describe('svc full-text index build from nothing', () => {
  after(cleanupTempDirs)

  it('turns documents read from Git into index text in a worker, and answers null for what it cannot read', async () => {
    const repo = join(tempDir(), 'repo')
    execFileSync('git', ['init', '--bare', '-q', repo])
    const docs = Array.from({length: 300}, (_, i) => ({id: `t:${i}`, n: i, tags: ['alpha', i % 2 === 0], text: `word${i} émigré`}))
    const [notJson, ...shas] = blobs(repo, ['not json at all\n', ...docs.map((d) => `${JSON.stringify(d, null, 2)}\n`)])
    const missing = '0123456789abcdef0123456789abcdef01234567'
    const x = new TextExtractor(repo, documentText)
    try {
      // Two batches in flight at once come back each to its own caller, in order.
      const [first, second] = await Promise.all([x.texts(shas.slice(0, 200)), x.texts([null, notJson, ...shas.slice(200), missing, null])])
      expect(first).to.deep.equal(docs.slice(0, 200).map((d) => documentText(d)))
      expect(first[7]).to.equal('t:7 7 alpha false word7 émigré')
      expect(second).to.deep.equal([null, null, ...docs.slice(200).map((d) => documentText(d)), null, null])
      expect(await x.texts([null, null])).to.deep.equal([null, null])
    } finally {
      x.close()
    }
  })

  it('marks a build without a journal as unfinished until it ends, so a file cut mid-build is rebuilt', () => {
    const dir = tempDir()
    const file = join(dir, 'fts.sqlite')
    const ix = new IndexStore(file)
    try {
      expect(ix.beginBulk()).to.equal(true)
      ix.transaction(() => ix.put('a:1', 's1', 'first words'))
      // What a crash at this point leaves on disk.
      copyFileSync(file, join(dir, 'cut.sqlite'))
      ix.transaction(() => ix.put('a:2', 's2', 'second words'))
      ix.endBulk()
      expect(ix.search('words', {limit: 10, offset: 0}).total).to.equal(2)
    } finally {
      ix.close()
    }
    expect(() => new IndexStore(join(dir, 'cut.sqlite'))).to.throw(/cut short/).with.property('code', 'SVC_FTS_UNFINISHED')
    const again = new IndexStore(file)
    try {
      expect(again.documents).to.equal(2)
      expect(again.search('second', {limit: 10, offset: 0}).hits.map((h) => h.id)).to.deep.equal(['a:2'])
    } finally {
      again.close()
    }
  })
})
