import {expect} from 'chai'
import {mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {writeFileAtomic, writeFileAtomicSync} from '../src/atomic-file.js'

describe('kit writeFileAtomic', () => {
  const made: string[] = []
  const dir = (): string => {
    const d = mkdtempSync(join(tmpdir(), 'kit-atomic-'))
    made.push(d)
    return d
  }
  after(() => {
    for (const d of made) rmSync(d, {force: true, recursive: true})
  })

  it('replaces a file with the new content and the mode asked for, leaving no temporary file', async () => {
    const d = dir()
    const file = join(d, 'state.json')
    writeFileSync(file, 'old', {mode: 0o644})
    await writeFileAtomic(file, '{"new":true}\n', {mode: 0o600})
    expect(readFileSync(file, 'utf8')).to.equal('{"new":true}\n')
    expect(statSync(file).mode & 0o777).to.equal(0o600)
    writeFileAtomicSync(file, Buffer.from('sync'), {mode: 0o600})
    expect(readFileSync(file, 'utf8')).to.equal('sync')
    expect(readdirSync(d)).to.deep.equal(['state.json'])
  })

  it('keeps the old file and removes the temporary one when the write cannot finish', async () => {
    const d = dir()
    const target = join(d, 'taken')
    mkdirSync(join(target, 'inside'), {recursive: true})
    // rename() cannot replace a non-empty directory: the write fails after the data was written.
    let failed: unknown
    await writeFileAtomic(target, 'x').catch((error: unknown) => (failed = error))
    expect(failed).to.be.instanceOf(Error)
    expect(() => writeFileAtomicSync(target, 'x')).to.throw()
    expect(readdirSync(d)).to.deep.equal(['taken'])
    expect(readdirSync(target)).to.deep.equal(['inside'])
  })

  it('gives every concurrent write its own temporary file, and one of them wins whole', async () => {
    const d = dir()
    const file = join(d, 'f')
    const bodies = Array.from({length: 20}, (_, i) => String(i).repeat(10_000))
    await Promise.all(bodies.map((b) => writeFileAtomic(file, b)))
    expect(bodies).to.include(readFileSync(file, 'utf8'))
    expect(readdirSync(d)).to.deep.equal(['f'])
  })
})
