/**
 * PostgreSQL's binary wire forms (the typsend/typreceive functions) of the types svc computes
 * with: numeric (base-10000 digits), date, timestamp, timestamptz, interval, uuid, regtype and
 * one-dimensional arrays of any of them. Drivers ask for these when they request binary results
 * (node-postgres `binary: true`, JDBC, pgx) or send binary parameters.
 */
import * as D from '../../query/datetime.js'
import {SqlError} from '../../query/errors.js'
import {arrayOid, OID, oidOfTypeName, toDatetime} from '../../query/types.js'
import {Dec, Numeric, PgArray, RegType, textOf} from '../../query/values.js'

const NUMERIC_NEG = 0x40_00
const NUMERIC_NAN = 0xc0_00
const PG_EPOCH_US = BigInt(D.PG_EPOCH_DAYS) * D.US_PER_DAY

function numericOf(v: unknown): Numeric {
  if (v instanceof Numeric) return v
  return Numeric.parse(textOf(v))
}

/** numeric_send: ndigits, weight, sign, dscale, then base-10000 digits without leading or trailing zero groups. */
export function numericToBinary(v: unknown): Buffer {
  const n = numericOf(v)
  if (n.v.isNaN()) return header(0, 0, NUMERIC_NAN, 0, [])
  // PostgreSQL 14+'s numeric infinities (extract(year FROM 'infinity'::timestamp)); their short
  // header's scale bits read as 32, which numeric_send sends.
  if (!n.v.isFinite()) return header(0, 0, n.v.isNegative() ? 0xf0_00 : 0xd0_00, 32, [])
  const text = n.v.abs().toFixed(n.scale)
  const [int, frac = ''] = text.split('.')
  const intPadded = int.padStart(Math.ceil(int.length / 4) * 4, '0')
  const fracPadded = frac.padEnd(Math.ceil(frac.length / 4) * 4, '0')
  const groups: number[] = []
  for (let i = 0; i < intPadded.length; i += 4) groups.push(Number(intPadded.slice(i, i + 4)))
  for (let i = 0; i < fracPadded.length; i += 4) groups.push(Number(fracPadded.slice(i, i + 4)))
  let weight = intPadded.length / 4 - 1
  let first = 0
  while (first < groups.length && groups[first] === 0) {
    first++
    weight--
  }
  let last = groups.length
  while (last > first && groups[last - 1] === 0) last--
  const digits = groups.slice(first, last)
  if (digits.length === 0) weight = 0
  return header(digits.length, weight, n.v.isNegative() && digits.length > 0 ? NUMERIC_NEG : 0, n.scale, digits)
}

function header(ndigits: number, weight: number, sign: number, dscale: number, digits: number[]): Buffer {
  const b = Buffer.alloc(8 + 2 * digits.length)
  b.writeInt16BE(ndigits, 0)
  b.writeInt16BE(weight, 2)
  b.writeUInt16BE(sign, 4)
  b.writeInt16BE(dscale, 6)
  for (const [i, d] of digits.entries()) b.writeInt16BE(d, 8 + 2 * i)
  return b
}

export function numericFromBinary(raw: Buffer): Numeric {
  const ndigits = raw.readInt16BE(0)
  const weight = raw.readInt16BE(2)
  const sign = raw.readUInt16BE(4)
  const dscale = raw.readInt16BE(6)
  if (sign === NUMERIC_NAN) return new Numeric(new Dec(Number.NaN), 0)
  let v = new Dec(0)
  for (let i = 0; i < ndigits; i++) v = v.plus(new Dec(raw.readInt16BE(8 + 2 * i)).shiftedBy(4 * (weight - i)))
  return new Numeric(sign === NUMERIC_NEG ? v.negated() : v, dscale)
}

/** The binary form of a date, timestamp, timestamptz or interval value (text forms are parsed first). */
export function datetimeToBinary(v: unknown, oid: number): Buffer {
  const dt = toDatetime(v, oid)
  if (dt instanceof D.PgDate) {
    const b = Buffer.alloc(4)
    b.writeInt32BE(dt.days - D.PG_EPOCH_DAYS)
    return b
  }
  if (dt instanceof D.PgTimestamp) {
    const b = Buffer.alloc(8)
    b.writeBigInt64BE(dt.us - PG_EPOCH_US)
    return b
  }
  const b = Buffer.alloc(16)
  b.writeBigInt64BE(dt.us, 0)
  b.writeInt32BE(dt.days, 8)
  b.writeInt32BE(dt.months, 12)
  return b
}

export function datetimeFromBinary(raw: Buffer, oid: number): D.PgDate | D.PgInterval | D.PgTimestamp {
  if (oid === OID.date) return new D.PgDate(raw.readInt32BE(0) + D.PG_EPOCH_DAYS)
  if (oid === OID.interval) return new D.PgInterval(raw.readInt32BE(12), raw.readInt32BE(8), raw.readBigInt64BE(0))
  return new D.PgTimestamp(raw.readBigInt64BE(0) + PG_EPOCH_US, oid === OID.timestamptz)
}

export function uuidToBinary(v: unknown): Buffer {
  const hex = String(v).replaceAll('-', '')
  if (!/^[0-9a-f]{32}$/i.test(hex)) throw new SqlError('22P02', `invalid input syntax for type uuid: "${String(v)}"`)
  return Buffer.from(hex, 'hex')
}

export function uuidFromBinary(raw: Buffer): string {
  if (raw.length !== 16) throw new RangeError('uuid is 16 bytes')
  const h = raw.toString('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}

export function regtypeToBinary(v: unknown): Buffer {
  const b = Buffer.alloc(4)
  const name = v instanceof RegType ? v.name : String(v)
  b.writeUInt32BE(name.endsWith('[]') ? arrayOid(oidOfTypeName(name.slice(0, -2))) : oidOfTypeName(name))
  return b
}

/** array_send: dimensions, a has-null flag, the element type, then each element's length and bytes (-1 for NULL). */
export function arrayToBinary(v: unknown, elementOid: number, element: (x: unknown, oid: number) => Buffer | null): Buffer {
  const items = v instanceof PgArray ? v.items : Array.isArray(v) ? v : []
  const parts = items.map((x) => (x === null || x === undefined ? null : element(x, elementOid)))
  const head = Buffer.alloc(items.length === 0 ? 12 : 20)
  head.writeInt32BE(items.length === 0 ? 0 : 1, 0)
  head.writeInt32BE(parts.includes(null) ? 1 : 0, 4)
  head.writeUInt32BE(elementOid, 8)
  if (items.length > 0) {
    head.writeInt32BE(items.length, 12)
    head.writeInt32BE(1, 16)
  }
  const chunks: Buffer[] = [head]
  for (const p of parts) {
    const len = Buffer.alloc(4)
    len.writeInt32BE(p === null ? -1 : p.length)
    chunks.push(len)
    if (p) chunks.push(p)
  }
  return Buffer.concat(chunks)
}

/** array_recv for one-dimensional arrays: the elements decoded by `element`. */
export function arrayFromBinary(raw: Buffer, element: (x: Buffer, oid: number) => unknown): PgArray {
  const ndim = raw.readInt32BE(0)
  const elementOid = raw.readUInt32BE(8)
  if (ndim === 0) return new PgArray([], elementOid)
  if (ndim !== 1) throw new SqlError('0A000', 'Unsupported SQL statement', {detail: 'multi-dimensional array parameters are not supported'})
  const n = raw.readInt32BE(12)
  const items: unknown[] = []
  let at = 20
  for (let i = 0; i < n; i++) {
    const len = raw.readInt32BE(at)
    at += 4
    if (len < 0) items.push(null)
    else {
      items.push(element(raw.subarray(at, at + len), elementOid))
      at += len
    }
  }
  return new PgArray(items, elementOid)
}

/** The element type of an array type OID (int4[] 1007 -> int4 23), or undefined when `oid` is not an array type. */
export function elementOfArray(oid: number): number | undefined {
  return ARRAY_ELEMENT[oid]
}

const ARRAY_ELEMENT: Record<number, number> = {199: 114, 1000: 16, 1005: 21, 1007: 23, 1009: 25, 1015: 1043, 1016: 20, 1021: 700, 1022: 701, 1115: 1114, 1182: 1082, 1185: 1184, 1187: 1186, 1231: 1700, 2951: 2950, 3807: 3802}
