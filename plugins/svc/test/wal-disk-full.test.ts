import {expect} from 'chai'
import {spawnSync} from 'node:child_process'
import {rmSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {WriteAheadLog} from '../src/engine/wal.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'

const entry = (seq: number) => ({branch: 'main', ops: [{body: JSON.stringify({id: `t:${seq}`, pad: `${seq}`.padEnd(20_000, 'x')}), id: `t:${seq}`, op: 'put' as const}], seq, time: Date.now()})

// Issue 20: a full disk refuses writes, and writes go on once space is freed, without a restart
// (the spec's remedy is to free space); the refused and half-written records never reach the log.
describe('svc write-ahead log on a full disk (a real tmpfs; skipped when this process may not mount one)', () => {
  const mounts: string[] = []
  after(() => {
    for (const m of mounts) spawnSync('umount', ['-l', m])
    cleanupTempDirs()
  })

  it('refuses appends with ENOSPC while the disk is full, appends again once space is freed, and keeps exactly the acknowledged records', async function () {
    const disk = tempDir('svc-wal-disk-')
    if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', disk]).status !== 0) this.skip()
    mounts.push(disk)
    const filler = join(disk, 'filler')
    writeFileSync(filler, Buffer.alloc(700 * 1024))
    const dir = join(disk, 'wal')
    const {wal} = await WriteAheadLog.open(dir)
    const acked: number[] = []
    let refusal: Error | undefined
    let seq = 0
    // Concurrent appends, so the refusal also hits batches in flight.
    while (!refusal && seq < 200) {
      const batch = Array.from({length: 4}, () => ++seq)
      const results = await Promise.allSettled(batch.map((s) => wal.append(entry(s), () => acked.push(s))))
      refusal = results.map((r) => (r.status === 'rejected' ? (r.reason as Error) : undefined)).find(Boolean)
    }
    expect(refusal?.message, 'the disk never filled').to.match(/ENOSPC|No space left/)
    expect(acked.length).to.be.greaterThan(3)
    // Still full: refused again, with the same cause.
    const again = await wal.append(entry(++seq), () => acked.push(seq)).catch((error: Error) => error)
    expect((again as Error).message).to.match(/ENOSPC|No space left/)
    rmSync(filler)
    for (let i = 0; i < 5; i++) {
      const s = ++seq
      await wal.append(entry(s), () => acked.push(s))
    }
    await wal.close()
    const {entries, wal: reopened} = await WriteAheadLog.open(dir)
    expect(entries.map((e) => e.seq)).to.deep.equal(acked)
    await reopened.close()
  })
})
