import {expect} from 'chai'
import {spawnSync} from 'node:child_process'
import {randomBytes} from 'node:crypto'
import {Readable} from 'node:stream'
import {buffer} from 'node:stream/consumers'
import {gzipSync, inflateRawSync} from 'node:zlib'

import {parallelGzip} from '../src/ops/parallel-gzip.js'

// A tar.gz backup is compressed in blocks on several threads: whatever the input's size and
// however it arrives, the file must read back with the plain `gzip` program byte for byte, as
// one gzip member about as small as a single-threaded gzip's.
describe('svc backup: gzip on several cores', () => {
  // Documents of the benchmark's kind: JSON of pseudo-random words, compressible about 3:1.
  const text = (n: number): Buffer => {
    let seed = 7
    const next = (): number => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648)
    let s = ''
    for (let i = 0; s.length < n; i++) s += `{"id": "items:${i}", "title": "${Array.from({length: 6}, () => next().toString(36).slice(0, 3 + (seed % 4))).join(' ')}"}\n`
    return Buffer.from(s.slice(0, n))
  }

  async function gz(input: Buffer, chunk: number, blockSize: number): Promise<Buffer> {
    const parts: Buffer[] = []
    for (let i = 0; i < input.length; i += chunk) parts.push(input.subarray(i, i + chunk))
    return buffer(Readable.from(parts).pipe(parallelGzip({blockSize, level: 1})))
  }

  const gunzip = (file: Buffer): Buffer => {
    const r = spawnSync('gzip', ['-dc'], {input: file, maxBuffer: 1 << 26})
    expect(r.status, r.stderr.toString()).to.equal(0)
    return r.stdout
  }

  it('reads back with gzip -dc byte for byte: many blocks, an exact multiple of the block, one partial block, nothing', async () => {
    const mixed = Buffer.concat([text(300_000), randomBytes(200_000), text(150_000)])
    const cases: Array<[string, Buffer, number, number]> = [
      ['many blocks, odd chunks', mixed, 7777, 64 << 10],
      ['exact multiple of the block size', text(4 * (64 << 10)), 65_536, 64 << 10],
      ['smaller than one block', text(1000), 100, 64 << 10],
      ['empty', Buffer.alloc(0), 1, 64 << 10],
    ]
    for (const [name, input, chunk, blockSize] of cases) {
      const out = gunzip(await gz(input, chunk, blockSize))
      expect(out.equals(input), name).to.equal(true)
    }
  })

  it('is one gzip member about as small as single-threaded gzip of the same level', async () => {
    const input = text(2_000_000)
    const file = await gz(input, 65_536, 128 << 10)
    const single = gzipSync(input, {level: 1})
    // Each block is primed with the 32 KiB before it, so cutting costs next to nothing.
    expect(file.length).to.be.below(single.length * 1.02)
    expect(gunzip(file).equals(input)).to.equal(true)
    // One member: the deflate stream after the 10-byte header ends only after the whole input
    // (a reader that takes the first member alone gets everything).
    expect(inflateRawSync(file.subarray(10)).equals(input)).to.equal(true)
  })
})
