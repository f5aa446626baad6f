import {expect} from 'chai'
import {createHash} from 'node:crypto'

import {MODE_DIR, MODE_FILE, parseTree} from '../src/engine/pack-writer/tree.js'

/** The pack writer parses the trees it reads and the leaves it keeps as bytes: every name, mode and id as git stored them. */
describe('svc pack tree', () => {
  it('parses names of any byte, ids of any byte, and marks a mode written the non-canonical way for rewriting', () => {
    const id = (s: string): Buffer => createHash('sha1').update(s).digest()
    const ids = [id('a'), Buffer.from('00ff80207f0a2030313233343536373839616263', 'hex'), id('c'), id('d')]
    const raw = Buffer.concat([
      Buffer.from('100644 a.json\0', 'latin1'),
      ids[0],
      // A name with bytes above 0x7f (UTF-8 é), an id holding a space, a NUL-like 0x00 and 0xff.
      Buffer.concat([Buffer.from('100644 caf', 'latin1'), Buffer.from('é.json', 'utf8'), Buffer.from([0])]),
      ids[1],
      Buffer.from('040000 dir\0', 'latin1'),
      ids[2],
      Buffer.from('40000 e\0', 'latin1'),
      ids[3],
    ])
    const entries = parseTree(raw)
    expect(entries.map((e) => [Buffer.from(e.name, 'latin1').toString('utf8'), e.mode, Buffer.from(e.id!, 'latin1').toString('hex'), e.at])).to.deep.equal([
      ['a.json', MODE_FILE, ids[0].toString('hex'), 0],
      ['café.json', MODE_FILE, ids[1].toString('hex'), 34],
      ['dir', MODE_DIR, ids[2].toString('hex'), undefined],
      ['e', MODE_DIR, ids[3].toString('hex'), 103],
    ])
    expect(() => parseTree(raw.subarray(0, raw.length - 3))).to.throw('malformed tree object')
  })
})
