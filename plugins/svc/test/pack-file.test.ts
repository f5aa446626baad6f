import {expect} from 'chai'
import {execFileSync} from 'node:child_process'
import {randomBytes} from 'node:crypto'
import {mkdirSync, readdirSync} from 'node:fs'
import {join} from 'node:path'

import {OBJ_BLOB, objectKey, PackFile, sortByKey} from '../src/engine/pack-writer/pack-file.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'

/**
 * A pack's `.idx` lists its ids in byte order (git finds objects by binary search in it): the
 * writer's sort must give that order, ids that share their first bytes included.
 */
describe('svc pack file', () => {
  after(cleanupTempDirs)

  it('sorts ids in byte order, ids sharing their first four bytes or all but the last one included', () => {
    const ids: Buffer[] = []
    for (let i = 0; i < 3000; i++) ids.push(randomBytes(20))
    // Runs with a common prefix of 4, 5 and 19 bytes, and bytes above 0x7f everywhere.
    for (let i = 0; i < 40; i++) ids.push(Buffer.concat([Buffer.from([0xff, 0x80, 0x00, 0x7f]), randomBytes(16)]))
    const near = randomBytes(20)
    for (let i = 0; i < 20; i++) ids.push(Buffer.concat([near.subarray(0, 19), Buffer.from([255 - i * 7])]))
    for (let i = 0; i < 30; i++) ids.push(Buffer.concat([Buffer.from([1, 2, 3, 4, i & 1]), randomBytes(15)]))
    const entries = ids.map((id, i) => ({key: id.toString('latin1'), offset: i}))
    const expected = [...ids].sort(Buffer.compare).map((b) => b.toString('hex'))
    expect(sortByKey(entries).map((e) => Buffer.from(e.key, 'latin1').toString('hex'))).to.deep.equal(expected)
  })

  it("writes an index git accepts for the pack (git verify-pack rebuilds it and compares)", () => {
    const repo = join(tempDir(), 'repo')
    execFileSync('git', ['init', '--bare', '-q', repo])
    const packDir = join(repo, 'objects', 'pack')
    mkdirSync(packDir, {recursive: true})
    const pack = new PackFile(packDir)
    for (let i = 0; i < 5000; i++) {
      const data = Buffer.from(`blob ${i}\n`)
      pack.addStored(OBJ_BLOB, objectKey(OBJ_BLOB, data), data)
    }
    const name = pack.finish()
    expect(readdirSync(packDir).sort()).to.deep.equal([`pack-${name}.idx`, `pack-${name}.pack`])
    execFileSync('git', ['-C', repo, 'verify-pack', join(packDir, `pack-${name}.idx`)])
    const blob = objectKey(OBJ_BLOB, Buffer.from('blob 4321\n'))
    expect(execFileSync('git', ['-C', repo, 'cat-file', 'blob', Buffer.from(blob, 'latin1').toString('hex')], {encoding: 'utf8'})).to.equal('blob 4321\n')
  })
})
