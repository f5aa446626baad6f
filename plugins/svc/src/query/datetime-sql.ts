/**
 * The SQL face of date, timestamp and interval values: which operator applies to which operand
 * types (an untyped literal takes the type PostgreSQL's operator resolution gives it), ordering,
 * and the functions date_trunc, date_part / extract, age, justify_*, make_date, make_interval,
 * to_timestamp.
 */
import * as D from './datetime.js'
import {SqlError} from './errors.js'
import {OID, toDatetime} from './types.js'
import * as V from './values.js'

type DT = D.PgDate | D.PgInterval | D.PgTimestamp

const isInt = (v: unknown): boolean => V.numKind(v) === 'int4' || V.numKind(v) === 'int8'

function noOperator(a: unknown, op: string, b: unknown): SqlError {
  return new SqlError('42883', `operator does not exist: ${V.typeNameOf(a)} ${op} ${V.typeNameOf(b)}`)
}

/** An untyped literal read as the type of the datetime value on the other side. */
function sameType(v: unknown, like: DT): DT {
  return toDatetime(v, like instanceof D.PgDate ? OID.date : like instanceof D.PgInterval ? OID.interval : like.zone ? OID.timestamptz : OID.timestamp)
}

const asInterval = (v: unknown): D.PgInterval => toDatetime(v, OID.interval) as D.PgInterval

function dateShift(d: D.PgDate, n: unknown, sign: number): D.PgDate {
  if (!d.finite) return d
  const days = d.days + sign * Number(V.toNumber(n))
  if (Math.abs(days) > 100_000_000) throw new SqlError('22008', 'date out of range')
  return new D.PgDate(days)
}

/** `a op b` when either side is a date, timestamp or interval; undefined when neither is. */
export function datetimeArith(op: string, a: unknown, b: unknown): unknown {
  if (!D.isDatetime(a) && !D.isDatetime(b)) return undefined
  if (op === '+') {
    if (!D.isDatetime(a) || (a instanceof D.PgInterval && D.isDatetime(b) && !(b instanceof D.PgInterval))) [a, b] = [b, a]
    if (a instanceof D.PgTimestamp) {
      if (b instanceof D.PgInterval || typeof b === 'string') return D.addInterval(a, asInterval(b))
    } else if (a instanceof D.PgDate) {
      if (isInt(b)) return dateShift(a, b, 1)
      if (b instanceof D.PgInterval) return D.addInterval(D.toTimestamp(a, false), b)
      if (typeof b === 'string') throw new SqlError('42725', 'operator is not unique: date + unknown')
    } else if (a instanceof D.PgInterval) {
      if (b instanceof D.PgInterval || typeof b === 'string') return D.intervalAdd(a, asInterval(b))
    }
    throw noOperator(a, op, b)
  }
  if (op === '-') {
    if (a instanceof D.PgTimestamp) {
      if (b instanceof D.PgInterval) return D.addInterval(a, b, -1)
      if (b instanceof D.PgTimestamp || b instanceof D.PgDate) return D.timestampDiff(a, D.toTimestamp(b, a.zone))
      if (typeof b === 'string') return D.timestampDiff(a, sameType(b, a) as D.PgTimestamp)
    } else if (a instanceof D.PgDate) {
      if (b instanceof D.PgDate || typeof b === 'string') return dateDiff(a, b instanceof D.PgDate ? b : (sameType(b, a) as D.PgDate))
      if (isInt(b)) return dateShift(a, b, -1)
      if (b instanceof D.PgInterval) return D.addInterval(D.toTimestamp(a, false), b, -1)
      if (b instanceof D.PgTimestamp) return D.timestampDiff(D.toTimestamp(a, b.zone), b)
    } else if (a instanceof D.PgInterval) {
      if (b instanceof D.PgInterval || typeof b === 'string') return D.intervalAdd(a, asInterval(b), -1)
    } else if (typeof a === 'string' && D.isDatetime(b)) {
      return datetimeArith('-', sameType(a, b), b)
    }
    throw noOperator(a, op, b)
  }
  if (op === '*' || op === '/') {
    const [iv, n] = a instanceof D.PgInterval ? [a, b] : op === '*' && b instanceof D.PgInterval ? [b, a] : [undefined, undefined]
    if (iv && (V.isNumeric(n) || typeof n === 'string')) {
      const f = V.isNumeric(n) ? V.toNumber(n) : V.parseFloat8(n as string)
      return op === '*' ? D.intervalMul(iv, f) : D.intervalDiv(iv, f)
    }
  }
  throw noOperator(a, op, b)
}

function dateDiff(a: D.PgDate, b: D.PgDate): number {
  if (!a.finite || !b.finite) throw new SqlError('22008', 'cannot subtract infinite dates')
  return a.days - b.days
}

/** Units whose value grows with time: of an infinite date or timestamp they are ±Infinity, the others NULL (PostgreSQL 14+). */
const MONOTONIC_UNITS = new Set(['year', 'decade', 'century', 'millennium', 'julian', 'isoyear', 'epoch'])

/** extract / date_part of 'infinity' or '-infinity': the sign, 0 for NULL; undefined for a finite value. */
function infinitePart(u: string, v: DT): number | undefined {
  if (v instanceof D.PgInterval || v.finite) return undefined
  const sign = (v instanceof D.PgDate ? v.days : Number(v.us)) > 0 ? 1 : -1
  return MONOTONIC_UNITS.has(u) ? sign : 0
}

export function datetimeNegate(v: unknown): unknown {
  if (v instanceof D.PgInterval) return D.intervalNegate(v)
  throw new SqlError('42883', `operator does not exist: - ${V.typeNameOf(v)}`)
}

/** Order of two values when one is a date, timestamp or interval (a date compares as its midnight). */
export function compareDatetime(a: unknown, b: unknown): number | undefined {
  if (!D.isDatetime(a) && !D.isDatetime(b)) return undefined
  if (!D.isDatetime(a)) a = typeof a === 'string' ? sameType(a, b as DT) : a
  if (!D.isDatetime(b)) b = typeof b === 'string' ? sameType(b, a as DT) : b
  if (a instanceof D.PgInterval && b instanceof D.PgInterval) return cmp(a.span(), b.span())
  if (a instanceof D.PgDate && b instanceof D.PgDate) return cmp(a.days, b.days)
  if ((a instanceof D.PgDate || a instanceof D.PgTimestamp) && (b instanceof D.PgDate || b instanceof D.PgTimestamp)) {
    return cmp(D.toTimestamp(a, true).us, D.toTimestamp(b, true).us)
  }
  throw new SqlError('42883', `operator does not exist: ${V.typeNameOf(a)} = ${V.typeNameOf(b)}`)
}

function cmp<T extends bigint | number>(x: T, y: T): number {
  return x < y ? -1 : x > y ? 1 : 0
}

function unit(v: unknown): string {
  const name = String(v)
  const u = D.unitOf(name)
  if (!u) throw new SqlError('22023', `unit "${name.toLowerCase()}" not recognized for type timestamp with time zone`)
  return u
}

/** A datetime argument of a function: an untyped literal is a timestamptz, as PostgreSQL resolves it. */
function datetimeArg(v: unknown, fallback: number = OID.timestamptz): DT {
  if (D.isDatetime(v)) return v
  return toDatetime(v, fallback)
}

/** extract(field FROM value): numeric. */
export function extract(field: string, v: unknown): unknown {
  if (v === null) return null
  const u = unit(field)
  const x = datetimeArg(v)
  const inf = infinitePart(u, x)
  if (inf !== undefined) return inf === 0 ? null : new V.Numeric(new V.Dec(inf * Number.POSITIVE_INFINITY), 0)
  const r = D.extractField(u, x)
  return new V.Numeric(new V.Dec(r.text), r.scale)
}

/** The current time the session's statement sees: the transaction's start, fixed for the whole transaction. */
export type Now = () => bigint

const FUNCTIONS = new Set(['date_trunc', 'date_part', 'age', 'justify_days', 'justify_hours', 'justify_interval', 'make_date', 'make_interval', 'make_timestamp', 'to_timestamp', 'isfinite'])

export function isDatetimeFunction(name: string): boolean {
  return FUNCTIONS.has(name)
}

/** The datetime functions; NULL in, NULL out. */
export function datetimeFunction(name: string, args: unknown[], now: Now): unknown {
  if (args.some((a) => a === null)) return null
  switch (name) {
    case 'date_trunc': {
      const [u, v] = args
      const x = datetimeArg(v)
      if (x instanceof D.PgInterval) return D.truncInterval(unit(u), x)
      if (!x.finite) return x instanceof D.PgDate ? D.toTimestamp(x, true) : x
      return D.truncTimestamp(unit(u), x instanceof D.PgDate ? D.toTimestamp(x, true) : x)
    }
    case 'date_part': {
      const [u, v] = args
      const x = datetimeArg(v)
      const inf = infinitePart(unit(u), x)
      if (inf !== undefined) return inf === 0 ? null : new V.Float8(inf * Number.POSITIVE_INFINITY)
      const r = D.extractField(unit(u), x)
      return new V.Float8(Number(r.text))
    }
    case 'age': {
      const [a, b] = args
      const x = datetimeArg(a, OID.timestamp)
      if (x instanceof D.PgInterval) throw new SqlError('42883', 'function age(interval) does not exist')
      // age(x) counts from midnight of today.
      const today = new D.PgTimestamp((now() / D.US_PER_DAY) * D.US_PER_DAY, false)
      const y = b === undefined ? today : datetimeArg(b, OID.timestamp)
      if (y instanceof D.PgInterval) throw new SqlError('42883', 'function age(interval) does not exist')
      if (!x.finite || !y.finite) throw new SqlError('22008', 'timestamp out of range')
      return b === undefined ? D.age(today, D.toTimestamp(x, false)) : D.age(D.toTimestamp(x, false), D.toTimestamp(y, false))
    }
    case 'justify_days':
    case 'justify_hours':
    case 'justify_interval': {
      const iv = datetimeArg(args[0], OID.interval)
      if (!(iv instanceof D.PgInterval)) throw new SqlError('42883', `function ${name}(${V.typeNameOf(iv)}) does not exist`)
      return name === 'justify_days' ? D.justifyDays(iv) : name === 'justify_hours' ? D.justifyHours(iv) : D.justifyInterval(iv)
    }
    case 'make_date': {
      const [y, m, d] = args.map((a) => Number(V.toNumber(a)))
      const text = `${String(y).padStart(4, '0')}-${m}-${d}`
      try {
        return D.parseDate(text)
      } catch {
        throw new SqlError('22008', `date field value out of range: ${y}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`)
      }
    }
    case 'make_timestamp': {
      const [y, mo, d, h, mi] = args.slice(0, 5).map((a) => Number(V.toNumber(a)))
      const sec = V.toNumber(args[5])
      const day = D.parseDate(`${String(y).padStart(4, '0')}-${mo}-${d}`)
      return new D.PgTimestamp(BigInt(day.days) * D.US_PER_DAY + BigInt(h) * 3_600_000_000n + BigInt(mi) * 60_000_000n + BigInt(Math.round(sec * 1e6)), false)
    }
    case 'make_interval': {
      const [years = 0, months = 0, weeks = 0, days = 0, hours = 0, mins = 0] = args.slice(0, 6).map((a) => Number(V.toNumber(a)))
      const secs = args[6] === undefined ? 0 : V.toNumber(args[6])
      return new D.PgInterval(years * 12 + months, weeks * 7 + days, BigInt(hours) * 3_600_000_000n + BigInt(mins) * 60_000_000n + BigInt(Math.round(secs * 1e6)))
    }
    case 'to_timestamp': {
      if (args.length !== 1) throw new SqlError('0A000', 'Unsupported SQL statement', {detail: 'to_timestamp(text, format) is not supported'})
      const secs = V.toNumber(typeof args[0] === 'string' ? V.parseFloat8(args[0]) : args[0])
      if (!Number.isFinite(secs)) throw new SqlError('22008', 'timestamp out of range')
      return new D.PgTimestamp(BigInt(Math.round(secs * 1e6)), true)
    }
    case 'isfinite': {
      const x = datetimeArg(args[0])
      return x instanceof D.PgInterval || x.finite
    }
    default: {
      return undefined
    }
  }
}
