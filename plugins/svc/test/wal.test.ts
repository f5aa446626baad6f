import {expect} from 'chai'
import {appendFileSync, readdirSync, statSync} from 'node:fs'
import {join} from 'node:path'

import {WriteAheadLog} from '../src/engine/wal.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'

const entry = (seq: number) => ({branch: 'main', ops: [{body: `{"id":"t:${seq}"}`, id: `t:${seq}`, op: 'put' as const}], seq, time: Date.now()})

describe('svc write-ahead log', () => {
  after(cleanupTempDirs)

  it('acknowledges concurrent appends in log order, grouping many per fsync', async () => {
    const dir = tempDir()
    const {wal} = await WriteAheadLog.open(dir)
    const order: number[] = []
    await Promise.all(Array.from({length: 300}, (_, i) => wal.append(entry(i + 1), () => order.push(i + 1))))
    expect(order).to.deep.equal(Array.from({length: 300}, (_, i) => i + 1))
    expect(wal.fsyncs).to.be.lessThan(300)
    await wal.close()
    const {entries, wal: again} = await WriteAheadLog.open(dir)
    expect(entries.map((e) => e.seq)).to.deep.equal(order)
    await again.close()
  })

  it('cuts a torn or corrupt tail at open and keeps every whole record', async () => {
    const dir = tempDir()
    const {wal} = await WriteAheadLog.open(dir)
    for (let i = 1; i <= 5; i++) await wal.append(entry(i), () => {})
    await wal.close()
    const file = join(dir, readdirSync(dir).find((f) => f.endsWith('.log'))!)
    const size = statSync(file).size
    // A record header promising more bytes than were written: what a crash mid-append leaves.
    appendFileSync(file, Buffer.from([0xff, 0x00, 0x00, 0x00, 1, 2, 3, 4, 5, 6]))
    expect(WriteAheadLog.read(dir).map((e) => e.seq)).to.deep.equal([1, 2, 3, 4, 5])
    expect(statSync(file).size).to.equal(size + 10)
    const {entries, wal: again} = await WriteAheadLog.open(dir)
    expect(entries.map((e) => e.seq)).to.deep.equal([1, 2, 3, 4, 5])
    expect(statSync(file).size).to.equal(size)
    await again.append(entry(6), () => {})
    await again.close()
    expect(WriteAheadLog.read(dir).map((e) => e.seq)).to.deep.equal([1, 2, 3, 4, 5, 6])
  })

  it('deletes segments once everything in them is in git', async () => {
    const dir = tempDir()
    const {wal} = await WriteAheadLog.open(dir)
    await wal.append(entry(1), () => {})
    await wal.close()
    const {wal: w2} = await WriteAheadLog.open(dir)
    await w2.append(entry(2), () => {})
    expect(readdirSync(dir).filter((f) => f.endsWith('.log'))).to.have.length(2)
    await w2.release(1)
    expect(readdirSync(dir).filter((f) => f.endsWith('.log'))).to.have.length(1)
    expect(WriteAheadLog.read(dir).map((e) => e.seq)).to.deep.equal([2])
    await w2.close()
  })
})
