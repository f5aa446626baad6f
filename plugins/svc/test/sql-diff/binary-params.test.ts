/**
 * Binary-format Bind parameters (issue 18): what a driver sends in PostgreSQL's binary forms is
 * read back as the same value. The byte strings are what PostgreSQL 15's send functions produce
 * (the differential suite compares svc's binary results with a real PostgreSQL byte for byte).
 */
import {expect} from 'chai'

import {OID} from '../../src/query/types.js'
import {textOf} from '../../src/query/values.js'
import {decodeParam, toBinary} from '../../src/servers/pg/encoding.js'

const hex = (s: string): Buffer => Buffer.from(s.replaceAll(' ', ''), 'hex')

describe('pg binary parameters', () => {
  const cases: Array<[string, number, string]> = [
    ['numeric 1.50', OID.numeric, '0002 0000 0000 0002 0001 1388'],
    ['numeric -0.0001', OID.numeric, '0001 ffff 4000 0004 0001'],
    ['numeric 12345678.9', OID.numeric, '0003 0001 0000 0001 04d2 162e 2328'],
    ['numeric 0', OID.numeric, '0000 0000 0000 0000'],
    ['numeric NaN', OID.numeric, '0000 0000 c000 0000'],
    ['date 2024-02-29', OID.date, '0000 2279'],
    ['timestamptz 2000-01-01 00:00:01+00', OID.timestamptz, '0000 0000 000f 4240'],
    ['interval 1 mon 2 days 00:00:03', OID.interval, '0000 0000 002d c6c0 0000 0002 0000 0001'],
    ['uuid', OID.uuid, 'a0ee bc99 9c0b 4ef8 bb6d 6bb9 bd38 0a11'],
    ['int4[] {1,NULL}', 1007, '0000 0001 0000 0001 0000 0017 0000 0002 0000 0001 0000 0004 0000 0001 ffff ffff'],
  ]
  const texts: Record<string, string> = {
    'date 2024-02-29': '2024-02-29',
    'int4[] {1,NULL}': '{1,NULL}',
    'interval 1 mon 2 days 00:00:03': '1 mon 2 days 00:00:03',
    'numeric -0.0001': '-0.0001',
    'numeric 0': '0',
    'numeric 1.50': '1.50',
    'numeric 12345678.9': '12345678.9',
    'numeric NaN': 'NaN',
    'timestamptz 2000-01-01 00:00:01+00': '2000-01-01 00:00:01+00',
    uuid: 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
  }
  for (const [name, oid, bytes] of cases) {
    it(`reads ${name} sent in binary, and sends it back in the same bytes`, () => {
      const v = decodeParam(hex(bytes), oid, 1)
      expect(textOf(v)).to.equal(texts[name])
      expect((toBinary(v, oid) as Buffer).toString('hex')).to.equal(hex(bytes).toString('hex'))
    })
  }

  it('refuses a binary uuid of the wrong length instead of guessing', () => {
    expect(() => decodeParam(hex('0102'), OID.uuid, 1)).to.throw(RangeError)
  })
})
