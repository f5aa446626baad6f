/**
 * The Redis server reads sockets through one receive buffer shared by every connection
 * (servers/socket-read.ts). These tests interleave connections whose commands arrive in
 * pieces (a byte at a time, and values larger than the buffer) so any byte kept by reference past
 * the next read would show in an answer; and check a client that stops reading is paused, then
 * served, as before.
 */
import {expect} from 'chai'
import {connect, type Socket} from 'node:net'

import {Redis} from 'ioredis'

import {readsWithoutStreams} from '../../src/servers/socket-read.js'
import {type Harness, startHarness} from './harness.js'

function frame(...args: Array<Buffer | string>): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)]
  for (const a of args) {
    const b = Buffer.isBuffer(a) ? a : Buffer.from(a)
    parts.push(Buffer.from(`$${b.length}\r\n`), b, Buffer.from('\r\n'))
  }
  return Buffer.concat(parts)
}

/** A raw connection whose received bytes are collected. */
async function open(port: number): Promise<{got: () => Buffer; sock: Socket; until: (n: number) => Promise<Buffer>}> {
  const sock = connect(port, '127.0.0.1')
  await new Promise<void>((resolve, reject) => sock.once('connect', resolve).once('error', reject))
  sock.setNoDelay(true)
  const chunks: Buffer[] = []
  let received = 0
  let waiter: (() => void) | undefined
  sock.on('data', (d: Buffer) => {
    chunks.push(d)
    received += d.length
    waiter?.()
  })
  const got = () => Buffer.concat(chunks)
  const until = async (n: number) => {
    const deadline = Date.now() + 10_000
    while (received < n) {
      if (Date.now() > deadline) throw new Error(`only ${received} of ${n} bytes: ${got().toString().slice(0, 200)}`)
      await new Promise<void>((resolve) => {
        waiter = resolve
        setTimeout(resolve, 50)
      })
    }
    return got()
  }
  return {got, sock, until}
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe('svc Redis: reads through one shared receive buffer', function () {
  this.timeout(60_000)
  let h: Harness
  before(async () => {
    h = await startHarness({pg: false})
  })
  after(async () => h.close())

  it('reads accepted sockets without the stream machinery on this Node (the path the benchmarks measure)', () => {
    expect(readsWithoutStreams).to.equal(true)
  })

  it('connections sending commands a byte at a time, interleaved, and values larger than the buffer get exactly their own answers', async () => {
    const port = h.redis!.port
    const big = (seed: number, n: number) => Buffer.from(Array.from({length: n}, (_, i) => 97 + ((i * 7 + seed) % 26)))
    const values = [big(1, 200_000), big(2, 70_000), Buffer.from('small-é-value'), big(3, 65_536)]
    const conns = await Promise.all(values.map(() => open(port)))
    // SETs whose frames arrive interleaved in small pieces: each connection's bytes are copied out before the next read reuses the buffer.
    const frames = values.map((v, i) => frame('SET', `sr:k${i}`, v))
    const step = 997
    for (let off = 0; off < Math.max(...frames.map((f) => f.length)); off += step) {
      for (const [i, f] of frames.entries()) if (off < f.length) conns[i].sock.write(f.subarray(off, off + step))
      if (off % (step * 20) === 0) await pause(1)
    }
    for (const c of conns) await c.until(5)
    for (const c of conns) expect(c.got().toString()).to.equal('+OK\r\n')

    // GETs sent one byte at a time on two connections at once, with a pipelined MGET between.
    const a = await open(port)
    const b = await open(port)
    const ga = frame('GET', 'sr:k2')
    const gb = Buffer.concat([frame('GET', 'sr:k1'), frame('MGET', 'sr:k2', 'sr:absent', 'sr:k2')])
    for (let i = 0; i < Math.max(ga.length, gb.length); i++) {
      if (i < ga.length) a.sock.write(ga.subarray(i, i + 1))
      if (i < gb.length) b.sock.write(gb.subarray(i, i + 1))
      if (i % 8 === 0) await pause(1)
    }
    const small = values[2]
    const wantA = Buffer.concat([Buffer.from(`$${small.length}\r\n`), small, Buffer.from('\r\n')])
    const wantB = Buffer.concat([Buffer.from(`$${values[1].length}\r\n`), values[1], Buffer.from(`\r\n*3\r\n$${small.length}\r\n`), small, Buffer.from(`\r\n$-1\r\n$${small.length}\r\n`), small, Buffer.from('\r\n')])
    expect((await a.until(wantA.length)).equals(wantA)).to.equal(true)
    expect((await b.until(wantB.length)).equals(wantB)).to.equal(true)

    // Every value as ioredis reads it, byte for byte.
    const r = new Redis({lazyConnect: true, port})
    await r.connect()
    for (const [i, v] of values.entries()) expect((await r.getBuffer(`sr:k${i}`))?.equals(v)).to.equal(true)
    r.disconnect()
    for (const c of [...conns, a, b]) c.sock.destroy()
  })

  it('a client that stops reading is paused and answered in full once it reads again; others are served meanwhile', async () => {
    const port = h.redis!.port
    const value = Buffer.alloc(256 * 1024, 'v')
    const setter = new Redis({lazyConnect: true, port})
    await setter.connect()
    await setter.set('sr:wide', value)
    const slow = await open(port)
    slow.sock.pause()
    const n = 80
    for (let i = 0; i < n; i++) slow.sock.write(frame('GET', 'sr:wide'))
    await pause(300)
    // Another client is answered while the slow one's replies are held back.
    expect(await setter.get('sr:k2')).to.equal('small-é-value')
    slow.sock.resume()
    const one = Buffer.concat([Buffer.from(`$${value.length}\r\n`), value, Buffer.from('\r\n')])
    const all = await slow.until(one.length * n)
    expect(all.length).to.equal(one.length * n)
    for (let i = 0; i < n; i++) expect(all.subarray(i * one.length, (i + 1) * one.length).equals(one)).to.equal(true)
    setter.disconnect()
    slow.sock.destroy()
  })

  it('a client that closes its end is closed; the connection count returns to zero', async () => {
    const c = await open(h.redis!.port)
    c.sock.write(frame('PING'))
    await c.until(7)
    const closed = new Promise<void>((resolve) => c.sock.once('close', () => resolve()))
    c.sock.end()
    await closed
    const deadline = Date.now() + 5000
    while (h.open.redis > 0 && Date.now() < deadline) await pause(20)
    expect(h.open.redis).to.equal(0)
  })
})
