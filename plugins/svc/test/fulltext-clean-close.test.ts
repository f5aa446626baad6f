import {expect} from 'chai'
import {cpSync, existsSync, readFileSync, statSync, utimesSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {type Engine, openEngine} from '../src/engine/index.js'
import {cleanupTempDirs, memoryLogger, tempDir} from './helpers/tmp.js'

const SHORTCUT = 'full-text index closed cleanly at the branch head; no check or walk at open'

function messages(lines: string[]): string[] {
  return lines.map((l) => (JSON.parse(l) as {msg: string}).msg)
}

function indexState(db: Engine, branch = 'main'): string | undefined {
  return db.details().branches.find((b) => b.name === branch)?.index.state
}

async function seed(dir: string): Promise<void> {
  const db = await openEngine(dir)
  try {
    for (let i = 0; i < 40; i++) await db.put({id: `c:${i}`, text: `word${i}x common`})
    await db.put({id: 'c:alpha', text: 'alpha'})
    await db.reindex()
  } finally {
    await db.close()
  }
}

// A restart after a clean close skips reading the whole index again (issue 26: at 1M documents
// that was seconds of a core beside the first requests), and every other start still checks it.
describe('svc full-text index after a clean close', () => {
  let db: Engine | undefined
  afterEach(async () => {
    await db?.close().catch(() => {})
    db = undefined
  })
  after(cleanupTempDirs)

  it('answers complete searches as soon as a cleanly closed engine opens again, and keeps indexing writes', async () => {
    const dir = tempDir()
    await seed(dir)
    const {lines, logger} = memoryLogger()
    db = await openEngine(dir, {logger})
    expect(indexState(db)).to.equal('ready')
    const r = await db.search('alpha')
    expect(r.hits.map((h) => h.id)).to.deep.equal(['c:alpha'])
    expect(r.index).to.equal(undefined)
    expect((await db.search('common')).total).to.equal(40)
    expect(messages(lines)).to.include(SHORTCUT)
    await db.put({id: 'c:beta', text: 'beta'})
    await db.delete('c:alpha')
    expect((await db.search('beta')).total).to.equal(1)
    expect((await db.search('alpha')).total).to.equal(0)
    await db.close()
    // And the next clean restart has the writes of the last run.
    db = await openEngine(dir)
    expect((await db.search('beta')).total).to.equal(1)
    expect((await db.search('alpha')).total).to.equal(0)
    expect((await db.search('common')).total).to.equal(40)
  })

  it('still finds and rebuilds an index damaged after a clean close, even with its modification time put back', async () => {
    const dir = tempDir()
    await seed(dir)
    const file = join(dir, 'index', 'main', 'fts.sqlite')
    const before = statSync(file)
    const data = readFileSync(file)
    for (let i = data.length - 64; i < data.length; i++) data[i] ^= 0x55
    writeFileSync(file, data)
    utimesSync(file, before.atime, before.mtime)
    const {lines, logger} = memoryLogger()
    db = await openEngine(dir, {logger})
    await db.reindex()
    expect(messages(lines)).to.not.include(SHORTCUT)
    expect(messages(lines).some((m) => m.includes('corrupt full-text index'))).to.equal(true)
    expect(db.indexProgress()?.corruptDetected).to.equal(1)
    expect((await db.search('alpha')).hits.map((h) => h.id)).to.deep.equal(['c:alpha'])
    expect((await db.search('common')).total).to.equal(40)
  })

  it('catches up on writes another process made while the index was closed', async () => {
    const dir = tempDir()
    await seed(dir)
    // A process without the full-text index (a one-shot command, say) writes to the branch.
    const other = await openEngine(dir, {fullText: false})
    await other.put({id: 'c:gamma', text: 'gamma'})
    await other.put({id: 'c:3', text: 'rewritten'})
    await other.delete('c:alpha')
    await other.close()
    const {lines, logger} = memoryLogger()
    db = await openEngine(dir, {logger})
    await db.reindex()
    expect(messages(lines)).to.not.include(SHORTCUT)
    expect((await db.search('gamma')).hits.map((h) => h.id)).to.deep.equal(['c:gamma'])
    expect((await db.search('alpha')).total).to.equal(0)
    expect((await db.search('word3x')).total).to.equal(0)
    expect((await db.search('rewritten')).total).to.equal(1)
    expect(db.stats().indexDocuments).to.equal(db.stats().documents)
  })

  it('checks the index again after a process that stopped without closing (a copy taken while open)', async () => {
    const dir = tempDir()
    await seed(dir)
    db = await openEngine(dir)
    await db.put({id: 'c:delta', text: 'delta'})
    await db.flush()
    // The running engine's data directory as a crash would leave it: no clean-close marker.
    const copy = tempDir()
    cpSync(dir, copy, {recursive: true})
    expect(existsSync(join(copy, 'index', 'main', 'fts.clean'))).to.equal(false)
    await db.close()
    const {lines, logger} = memoryLogger()
    const crashed = await openEngine(copy, {logger})
    try {
      await crashed.reindex()
      expect(messages(lines)).to.not.include(SHORTCUT)
      expect((await crashed.search('delta')).hits.map((h) => h.id)).to.deep.equal(['c:delta'])
      expect((await crashed.search('common')).total).to.equal(40)
    } finally {
      await crashed.close()
    }
  })
})
