import {expect} from 'chai'
import {appendFileSync, constants, existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync} from 'node:fs'
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

  it('acknowledges a small batch written after a large one only once the large one is on disk', async () => {
    // On tmpfs the small writes finish while the large one is still copying (on ext4 they mostly
    // wait for the same journal commit), so the order is the log's doing, not the disk's.
    const dir = existsSync('/dev/shm') ? mkdtempSync('/dev/shm/svc-wal-') : tempDir()
    after(() => rmSync(dir, {force: true, recursive: true}))
    const {wal} = await WriteAheadLog.open(dir)
    const order: number[] = []
    const big = {...entry(1), ops: [{body: JSON.stringify({id: 't:1', pad: 'x'.repeat(48 * 1024 * 1024)}), id: 't:1', op: 'put' as const}]}
    const pending = [wal.append(big, () => order.push(1))]
    // The small ones a turn of the loop later: their own batch, in flight beside the large write.
    await new Promise((r) => setImmediate(r))
    for (let i = 2; i <= 6; i++) pending.push(wal.append(entry(i), () => order.push(i)))
    await Promise.all(pending)
    expect(order).to.deep.equal([1, 2, 3, 4, 5, 6])
    await wal.close()
    expect(WriteAheadLog.read(dir).map((e) => e.seq)).to.deep.equal([1, 2, 3, 4, 5, 6])
  })

  it('writes the log through a descriptor opened O_DSYNC, so a write that returns is on disk', async function () {
    if (!existsSync('/proc/self/fdinfo')) this.skip()
    const dir = tempDir()
    const {wal} = await WriteAheadLog.open(dir)
    await wal.append(entry(1), () => {})
    const fds = readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir)
      } catch {
        return false
      }
    })
    expect(fds).to.have.length(1)
    const flags = Number.parseInt(/flags:\s*(\d+)/.exec(readFileSync(`/proc/self/fdinfo/${fds[0]}`, 'utf8'))![1], 8)
    expect(flags & constants.O_DSYNC).to.equal(constants.O_DSYNC)
    await wal.close()
  })

  it('recovers nothing past a batch that never landed (a crash with a later batch already written)', async () => {
    const dir = tempDir()
    const {wal} = await WriteAheadLog.open(dir)
    for (let i = 1; i <= 3; i++) await wal.append(entry(i), () => {})
    await wal.close()
    const file = join(dir, readdirSync(dir).find((f) => f.endsWith('.log'))!)
    const size = statSync(file).size
    const whole = readFileSync(file)
    // Concurrent batches take fixed offsets: a later one can reach the disk while an earlier one
    // is still a hole of zeros. Neither was acknowledged; nothing after the hole may be replayed.
    appendFileSync(file, Buffer.concat([Buffer.alloc(64), whole]))
    const {entries, wal: again} = await WriteAheadLog.open(dir)
    expect(entries.map((e) => e.seq)).to.deep.equal([1, 2, 3])
    expect(statSync(file).size).to.equal(size)
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
  it('reads back every acknowledged record after a seq, from this run and from before the open, and none Git already has', async () => {
    const dir = tempDir()
    const {wal} = await WriteAheadLog.open(dir)
    await wal.append(entry(1), () => {})
    await wal.append(entry(2), () => {})
    await wal.close()
    const {wal: w2} = await WriteAheadLog.open(dir)
    // Groups of several records each, in a second segment.
    for (let g = 0; g < 4; g++) await Promise.all([3, 4, 5].map((i) => w2.append(entry(g * 3 + i), () => {})))
    expect((await w2.since(0)).map((e) => e.seq)).to.deep.equal(Array.from({length: 14}, (_, i) => i + 1))
    // The first segment holds only what Git has; a seq inside a group reads from that group on.
    await w2.release(7)
    expect((await w2.since(7)).map((e) => e.seq)).to.deep.equal([8, 9, 10, 11, 12, 13, 14])
    expect((await w2.since(10)).map((e) => e.seq)).to.deep.equal([11, 12, 13, 14])
    expect((await w2.since(10))[0].ops).to.deep.equal(entry(11).ops)
    expect(await w2.since(14)).to.deep.equal([])
    await w2.close()
  })
})
