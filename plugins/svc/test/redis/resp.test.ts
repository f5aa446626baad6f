import {expect} from 'chai'

import {globToRegExp} from '../../src/servers/redis/keyspace.js'
import {encode, map, ProtocolError, RespParser, splitInline} from '../../src/servers/redis/resp.js'

function render(reply: Parameters<typeof encode>[0], resp3: boolean): string {
  const out: Array<Buffer | string> = []
  encode(reply, resp3, out)
  return out.map(String).join('')
}

describe('svc RESP parser and encoder', () => {
  it('parses commands split across arbitrary chunk boundaries', () => {
    const wire = Buffer.from('*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nva\r\nl\r\n*1\r\n$4\r\nPING\r\n')
    for (let cut = 1; cut < wire.length; cut++) {
      const p = new RespParser()
      const got: string[][] = []
      for (const part of [wire.subarray(0, cut), wire.subarray(cut)]) {
        p.feed(part)
        for (let c = p.next(); c; c = p.next()) got.push(c.map(String))
      }
      expect(got, `cut at ${cut}`).to.deep.equal([['SET', 'k', 'va\r\nl'], ['PING']])
    }
  })

  it('assembles a large bulk string from many small reads', () => {
    const value = Buffer.alloc(3 * 1024 * 1024, 'v')
    const wire = Buffer.concat([Buffer.from(`*2\r\n$4\r\nECHO\r\n$${value.length}\r\n`), value, Buffer.from('\r\n*1\r\n$4\r\nPING\r\n')])
    const p = new RespParser()
    const got: Buffer[][] = []
    for (let i = 0; i < wire.length; i += 65_536) {
      p.feed(wire.subarray(i, i + 65_536))
      for (let c = p.next(); c; c = p.next()) got.push(c)
    }
    expect(got).to.have.length(2)
    expect(got[0][1].equals(value)).to.equal(true)
    expect(String(got[1][0])).to.equal('PING')
  })

  it('the GET fast path takes whole GET frames in any case and leaves everything else to next()', () => {
    const wire = Buffer.from('*2\r\n$3\r\nGET\r\n$5\r\nk:ключ\r\n*2\r\n$3\r\nget\r\n$0\r\n\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGeT\r\n$1\r\nz\r\n'.replace('$5', `$${Buffer.byteLength('k:ключ')}`))
    for (let cut = 1; cut < wire.length; cut++) {
      const p = new RespParser()
      const got: string[] = []
      for (const part of [wire.subarray(0, cut), wire.subarray(cut)]) {
        p.feed(part)
        for (;;) {
          const key = p.nextGetKey()
          if (key !== undefined) {
            got.push(`GET ${key}`)
            continue
          }
          const c = p.next()
          if (!c) break
          got.push(c.map(String).join(' '))
        }
      }
      expect(got, `cut at ${cut}`).to.deep.equal(['GET k:ключ', 'GET ', 'SET k v', 'GET z'])
    }
    // A GET frame whose length does not match its bytes is not taken; next() reports it.
    const bad = new RespParser()
    bad.feed(Buffer.from('*2\r\n$3\r\nGET\r\n$2\r\nabc\r\n'))
    expect(bad.nextGetKey()).to.equal(undefined)
    expect(() => bad.next()).to.throw(ProtocolError)
  })

  it('rejects malformed frames with a protocol error', () => {
    for (const bad of ['*1\r\n$x\r\n', '*1\r\n:3\r\n', '*a\r\n', '*1\r\n$3\r\nabcXY']) {
      const p = new RespParser()
      p.feed(Buffer.from(bad))
      expect(() => p.next(), bad).to.throw(ProtocolError)
    }
  })

  it('splits inline commands with Redis quoting rules', () => {
    expect(splitInline(`SET k "a \\"b\\" \\x41" 'it\\'s'`)).to.deep.equal(['SET', 'k', 'a "b" A', "it's"])
    expect(() => splitInline('GET "open')).to.throw(ProtocolError)
  })

  it('encodes maps, nulls and booleans per protocol version', () => {
    expect(render(map([['a', 1]]), false)).to.equal('*2\r\n$1\r\na\r\n:1\r\n')
    expect(render(map([['a', 1]]), true)).to.equal('%1\r\n$1\r\na\r\n:1\r\n')
    expect(render(null, false)).to.equal('$-1\r\n')
    expect(render(null, true)).to.equal('_\r\n')
    expect(render(true, true)).to.equal('#t\r\n')
  })

  it('turns glob patterns into matchers and a literal prefix', () => {
    const g = globToRegExp('user:[ab]?:*')
    expect(g.prefix).to.equal('user:')
    expect(g.re.test('user:a1:x')).to.equal(true)
    expect(g.re.test('user:c1:x')).to.equal(false)
    expect(globToRegExp('a\\*b').re.test('a*b')).to.equal(true)
  })
})
