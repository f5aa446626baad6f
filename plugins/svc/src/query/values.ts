/**
 * SQL values whose PostgreSQL type a plain JavaScript value cannot carry: bigint (int8), exact
 * numeric with its scale, float8 (an integral float8 is not an integer), arrays, json text and
 * regtype. Plain values keep their meaning: a safe integer in int4 range is int4, another
 * integer int8, a non-integral number float8, a string text, an object jsonb.
 *
 * Arithmetic follows PostgreSQL's rules: the result type is float8 if either side is, else
 * numeric, else int8, else int4; integer results out of their type's range are 22003; numeric
 * division uses PostgreSQL's select_div_scale (at least 16 significant digits).
 */
import BigNumber from 'bignumber.js'

import {isDatetime, parseDate, parseTimestamp, PgDate, PgInterval, PgTimestamp} from './datetime.js'
import {SqlError} from './errors.js'

/** Exact decimals; ROUND_HALF_UP is half away from zero, PostgreSQL's numeric rounding. */
export const Dec = BigNumber.clone({DECIMAL_PLACES: 20, EXPONENTIAL_AT: 1e9, RANGE: 1e9, ROUNDING_MODE: BigNumber.ROUND_HALF_UP})
type Dec = BigNumber

const INT4_MIN = -2_147_483_648
const INT4_MAX = 2_147_483_647
const INT8_MIN = -9_223_372_036_854_775_808n
const INT8_MAX = 9_223_372_036_854_775_807n

export class Int8 {
  constructor(readonly v: bigint) {}
  toJSON(): number | string {
    const n = Number(this.v)
    return Number.isSafeInteger(n) ? n : this.v.toString()
  }
  toString(): string {
    return this.v.toString()
  }
}

export class Numeric {
  constructor(
    readonly v: Dec,
    readonly scale: number,
  ) {}
  /** PostgreSQL's numeric input: `1.50` keeps scale 2, `1e3` is 1000 with scale 0, `NaN`. */
  static parse(text: string): Numeric {
    const s = text.trim()
    if (/^[+-]?nan$/i.test(s)) return new Numeric(new Dec(Number.NaN), 0)
    const m = /^([+-]?)(\d+\.?\d*|\.\d+)(?:e([+-]?\d+))?$/i.exec(s)
    if (!m) throw new SqlError('22P02', `invalid input syntax for type numeric: "${text}"`)
    const frac = m[2].includes('.') ? m[2].length - m[2].indexOf('.') - 1 : 0
    return new Numeric(new Dec(s), Math.max(0, frac - Number(m[3] ?? 0)))
  }
  static of(v: Dec | number | string, scale?: number): Numeric {
    const d = new Dec(v)
    return new Numeric(d, scale ?? Math.max(0, d.decimalPlaces() ?? 0))
  }
  /** A JSON number when it holds the value exactly (the scale is not kept), else the decimal text. */
  toJSON(): number | string {
    const n = this.v.toNumber()
    return Number.isFinite(n) && new Dec(n).eq(this.v) ? n : this.toString()
  }
  toString(): string {
    return this.v.isNaN() ? 'NaN' : this.v.toFixed(this.scale)
  }
}

export class Float8 {
  constructor(readonly v: number) {}
  toJSON(): number | string {
    return Number.isFinite(this.v) ? this.v : floatText(this.v)
  }
  toString(): string {
    return floatText(this.v)
  }
}

/** An array value; `elementOid` names its element type (int4 for `{1,2}`, text for `{a,b}`). */
export class PgArray {
  constructor(
    readonly items: unknown[],
    readonly elementOid: number,
  ) {}
  toJSON(): unknown[] {
    return this.items
  }
  toString(): string {
    return `{${this.items.map(arrayItem).join(',')}}`
  }
}

/** A `json` (not jsonb) value: PostgreSQL keeps and prints its text as written or built. */
export class JsonText {
  constructor(
    readonly text: string,
    readonly value: unknown,
  ) {}
  toJSON(): unknown {
    return this.value
  }
  toString(): string {
    return this.text
  }
}

/** A `character(n)` value: printed blank-padded, but the padding is not part of its text (`||`, length). */
export class BpChar {
  constructor(
    readonly text: string,
    readonly padded: string,
  ) {}
  toJSON(): string {
    return this.text
  }
  toString(): string {
    return this.padded
  }
}

/** A jsonb scalar (`'"x"'::jsonb`, `j -> 'a'`): a string prints with its quotes, null as `null`. */
export class Jsonb {
  constructor(readonly value: unknown) {}
  toJSON(): unknown {
    return this.value
  }
  toString(): string {
    return jsonbText(this.value)
  }
}

/** A `regtype` value (what `pg_typeof` returns): prints as the type's name. */
export class RegType {
  constructor(readonly name: string) {}
  toJSON(): string {
    return this.name
  }
  toString(): string {
    return this.name
  }
}

function arrayItem(v: unknown): string {
  if (v === null || v === undefined) return 'NULL'
  if (typeof v === 'boolean') return v ? 't' : 'f'
  const s = textOf(v)
  if (s === '' || /^null$/i.test(s) || /[{}",\\\s]/.test(s)) return `"${s.replaceAll(/["\\]/g, '\\$&')}"`
  return s
}

/** float8 as PostgreSQL prints it (shortest exact form, two-digit exponents, -0, NaN, Infinity). */
export function floatText(n: number): string {
  if (Number.isNaN(n)) return 'NaN'
  if (!Number.isFinite(n)) return n > 0 ? 'Infinity' : '-Infinity'
  if (Object.is(n, -0)) return '-0'
  // PostgreSQL switches to an exponent below 1e-4 and from 1e15, with at least two exponent digits.
  const [mant, exp] = n.toExponential().split('e')
  const e = Number(exp)
  if (e < -4 || e >= 15) return `${mant}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`
  return String(n)
}

/** jsonb's text form: `{"a": 1, "b": [1, 2]}`, keys shorter-first then bytewise, as PostgreSQL stores them. */
export function jsonbText(v: unknown): string {
  if (v === null || v === undefined) return 'null'
  if (v instanceof JsonText || v instanceof Jsonb) return jsonbText(v.value)
  if (v instanceof BpChar) return JSON.stringify(v.text)
  if (v instanceof Numeric || v instanceof Int8) return v.toString()
  if (v instanceof Float8) return Number.isFinite(v.v) ? floatText(v.v) : JSON.stringify(floatText(v.v))
  if (v instanceof PgArray) return jsonbText(v.items)
  if (isDatetime(v)) return JSON.stringify(datetimeJson(v))
  if (Array.isArray(v)) return `[${v.map(jsonbText).join(', ')}]`
  if (typeof v === 'object') {
    const keys = Object.keys(v).sort((a, b) => {
      const la = Buffer.byteLength(a)
      const lb = Buffer.byteLength(b)
      return la === lb ? Buffer.compare(Buffer.from(a), Buffer.from(b)) : la - lb
    })
    return `{${keys.map((k) => `${JSON.stringify(k)}: ${jsonbText((v as Record<string, unknown>)[k])}`).join(', ')}}`
  }
  if (typeof v === 'number') return floatText(v)
  return JSON.stringify(v)
}

/** A date or timestamp inside json: ISO 8601 with a T (`2024-01-02T03:04:05+00:00`), as PostgreSQL's to_json writes it. */
export function datetimeJson(v: PgDate | PgInterval | PgTimestamp): string {
  if (!(v instanceof PgTimestamp)) return v.toString()
  const t = v.toString()
  return `${t.slice(0, 10)}T${t.slice(11).replace(/\+00$/, '+00:00')}`
}

/** A value inside a json value built by json_build_object / json_agg: json text as PostgreSQL writes it. */
export function jsonText(v: unknown): string {
  if (v instanceof JsonText) return v.text
  return jsonbText(v)
}

/** The text form of any value, as PostgreSQL's output functions print it. */
export function textOf(v: unknown): string {
  if (typeof v === 'string') return v
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : floatText(v)
  if (typeof v === 'boolean') return v ? 'true' : 'false'
  if (v instanceof Int8 || v instanceof Numeric || v instanceof Float8 || v instanceof PgArray || v instanceof JsonText || v instanceof RegType || v instanceof Jsonb || v instanceof BpChar || isDatetime(v)) {
    return v.toString()
  }
  return jsonbText(v)
}

export type NumKind = 'float8' | 'int4' | 'int8' | 'numeric'

export function numKind(v: unknown): NumKind | undefined {
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) return 'float8'
    return v >= INT4_MIN && v <= INT4_MAX ? 'int4' : 'int8'
  }
  if (v instanceof Int8) return 'int8'
  if (v instanceof Numeric) return 'numeric'
  if (v instanceof Float8) return 'float8'
  return undefined
}

export function isNumeric(v: unknown): boolean {
  return numKind(v) !== undefined
}

/** A numeric value as a JavaScript number (float8 arithmetic, array indexes, LIMIT). */
export function toNumber(v: unknown): number {
  if (typeof v === 'number') return v
  if (v instanceof Int8) return Number(v.v)
  if (v instanceof Numeric) return v.v.toNumber()
  if (v instanceof Float8) return v.v
  return Number(v)
}

function toDec(v: unknown): Dec {
  if (v instanceof Numeric) return v.v
  if (v instanceof Int8) return new Dec(v.v.toString())
  return new Dec(toNumber(v))
}

function scaleOf(v: unknown): number {
  return v instanceof Numeric ? v.scale : 0
}

function toBig(v: unknown): bigint {
  return v instanceof Int8 ? v.v : BigInt(toNumber(v))
}

const RANK: Record<NumKind, number> = {float8: 3, int4: 0, int8: 1, numeric: 2}

/** An unknown-typed operand (a string literal or text parameter) read as the other side's type. */
function asKind(v: unknown, kind: NumKind, typeName: string): unknown {
  if (numKind(v) !== undefined) return v
  if (typeof v === 'string') {
    const s = v.trim()
    if (kind === 'numeric') return Numeric.parse(s)
    if (kind === 'float8') {
      const f = parseFloat8(s)
      return new Float8(f)
    }
    if (/^[+-]?\d+$/.test(s)) {
      const b = BigInt(s)
      if (kind === 'int4' && b >= BigInt(INT4_MIN) && b <= BigInt(INT4_MAX)) return Number(b)
      if (b < INT8_MIN || b > INT8_MAX) throw new SqlError('22003', `value "${s}" is out of range for type bigint`)
      return kind === 'int4' ? new Int8(b) : new Int8(b)
    }
    if (/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(s)) return Numeric.parse(s)
  }
  if (typeof v === 'boolean') throw new SqlError('42883', `operator does not exist: boolean and ${typeName}`)
  throw new SqlError('22P02', `invalid input syntax for type ${typeName}: "${typeof v === 'string' ? v : JSON.stringify(v)}"`)
}

const KIND_NAME: Record<NumKind, string> = {float8: 'double precision', int4: 'integer', int8: 'bigint', numeric: 'numeric'}

/** float8 input: numbers, NaN, [+-]Infinity / inf; out of range is 22003. */
export function parseFloat8(s: string): number {
  const t = s.trim().toLowerCase()
  if (t === 'nan') return Number.NaN
  if (t === 'infinity' || t === '+infinity' || t === 'inf' || t === '+inf') return Number.POSITIVE_INFINITY
  if (t === '-infinity' || t === '-inf') return Number.NEGATIVE_INFINITY
  if (t === '' || !/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/.test(t)) throw new SqlError('22P02', `invalid input syntax for type double precision: "${s}"`)
  const n = Number(t)
  if (!Number.isFinite(n)) throw new SqlError('22003', `"${s}" is out of range for type double precision`)
  return n
}

/** Both operands of an arithmetic operator in their common type, or undefined when neither is a number. */
export function promote(a: unknown, b: unknown): undefined | {a: unknown; b: unknown; kind: NumKind} {
  let ka = numKind(a)
  let kb = numKind(b)
  if (ka === undefined && kb === undefined) return undefined
  if (ka === undefined) {
    a = asKind(a, kb as NumKind, KIND_NAME[kb as NumKind])
    ka = numKind(a)
  }
  if (kb === undefined) {
    b = asKind(b, ka as NumKind, KIND_NAME[ka as NumKind])
    kb = numKind(b)
  }
  const kind = RANK[ka as NumKind] >= RANK[kb as NumKind] ? (ka as NumKind) : (kb as NumKind)
  return {a, b, kind}
}

function int4(n: number): number {
  if (n < INT4_MIN || n > INT4_MAX) throw new SqlError('22003', 'integer out of range')
  return n
}

function int8(n: bigint): Int8 {
  if (n < INT8_MIN || n > INT8_MAX) throw new SqlError('22003', 'bigint out of range')
  return new Int8(n)
}

function float8(n: number, a: number, b: number): Float8 {
  if (!Number.isFinite(n) && Number.isFinite(a) && Number.isFinite(b)) throw new SqlError('22003', 'value out of range: overflow')
  return new Float8(n)
}

/** PostgreSQL's select_div_scale: enough digits for 16 significant ones, never fewer than either operand's scale. */
function divScale(x: Numeric, y: Numeric): number {
  const lead = (d: Dec): {first: number; weight: number} => {
    if (d.isZero()) return {first: 0, weight: 0}
    const a = d.abs()
    const e = a.e ?? 0
    const weight = Math.floor(e / 4)
    const first = a.shiftedBy(-4 * weight).integerValue(BigNumber.ROUND_FLOOR).toNumber()
    return {first, weight}
  }
  const l1 = lead(x.v)
  const l2 = lead(y.v)
  let qweight = l1.weight - l2.weight
  if (l1.first <= l2.first) qweight--
  return Math.min(1000, Math.max(16 - qweight * 4, x.scale, y.scale, 0))
}

export function numericDiv(x: Numeric, y: Numeric): Numeric {
  if (y.v.isZero()) throw new SqlError('22012', 'division by zero')
  const scale = divScale(x, y)
  return new Numeric(new Dec(precise(x.v, y.v, scale)), scale)
}

/** a / b rounded once, half away from zero, to `scale` decimals. */
function precise(a: Dec, b: Dec, scale: number): Dec {
  const D = Dec.clone({DECIMAL_PLACES: scale})
  return new D(a).div(new D(b))
}

export function arith(op: string, l: unknown, r: unknown): unknown {
  const p = promote(l, r)
  if (!p) throw new SqlError('42883', `operator does not exist: ${typeof l} ${op} ${typeof r}`)
  const {a, b, kind} = p
  if (op === '%' && kind === 'float8') throw new SqlError('42883', 'operator does not exist: double precision % double precision')
  if ((op === '/' || op === '%') && kind !== 'float8' && toDec(b).isZero()) throw new SqlError('22012', 'division by zero')
  switch (kind) {
    case 'int4': {
      const x = a as number
      const y = b as number
      switch (op) {
        case '+': {
          return int4(x + y)
        }
        case '-': {
          return int4(x - y)
        }
        case '*': {
          const m = x * y
          return int4(Number.isSafeInteger(m) ? m : Number(BigInt(x) * BigInt(y)))
        }
        case '/': {
          return int4(Math.trunc(x / y))
        }
        default: {
          return x % y
        }
      }
    }
    case 'int8': {
      const x = toBig(a)
      const y = toBig(b)
      switch (op) {
        case '+': {
          return int8(x + y)
        }
        case '-': {
          return int8(x - y)
        }
        case '*': {
          return int8(x * y)
        }
        case '/': {
          return int8(x / y)
        }
        default: {
          return int8(x % y)
        }
      }
    }
    case 'numeric': {
      const x = a instanceof Numeric ? a : new Numeric(toDec(a), 0)
      const y = b instanceof Numeric ? b : new Numeric(toDec(b), 0)
      switch (op) {
        case '+': {
          return new Numeric(x.v.plus(y.v), Math.max(x.scale, y.scale))
        }
        case '-': {
          return new Numeric(x.v.minus(y.v), Math.max(x.scale, y.scale))
        }
        case '*': {
          return new Numeric(x.v.times(y.v), x.scale + y.scale)
        }
        case '/': {
          return numericDiv(x, y)
        }
        default: {
          // Truncated division's remainder, with the dividend's sign, as PostgreSQL's numeric %.
          return new Numeric(x.v.mod(y.v), Math.max(x.scale, y.scale))
        }
      }
    }
    default: {
      const x = toNumber(a)
      const y = toNumber(b)
      switch (op) {
        case '+': {
          return float8(x + y, x, y)
        }
        case '-': {
          return float8(x - y, x, y)
        }
        case '*': {
          return float8(x * y, x, y)
        }
        case '/': {
          if (y === 0) throw new SqlError('22012', 'division by zero')
          return float8(x / y, x, y)
        }
        default: {
          if (y === 0) throw new SqlError('22012', 'division by zero')
          return new Float8(x % y)
        }
      }
    }
  }
}

export function negate(v: unknown): unknown {
  if (typeof v === 'number') return Number.isInteger(v) && v === INT4_MIN ? new Int8(2_147_483_648n) : -v
  if (v instanceof Int8) return int8(-v.v)
  if (v instanceof Numeric) return new Numeric(v.v.negated(), v.scale)
  if (v instanceof Float8) return new Float8(-v.v)
  return arith('-', 0, v)
}

/** Orders two numbers of any kind (NaN above everything, as PostgreSQL sorts it). */
export function compareNumeric(a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number' && !Number.isNaN(a) && !Number.isNaN(b)) return a < b ? -1 : a > b ? 1 : 0
  const x = toDec(a)
  const y = toDec(b)
  if (x.isNaN() || y.isNaN()) return x.isNaN() && y.isNaN() ? 0 : x.isNaN() ? 1 : -1
  return x.comparedTo(y) ?? 0
}

/** Half to even, PostgreSQL's float8 rounding (rint). */
export function rint(n: number): number {
  const r = Math.round(n)
  return Math.abs(n % 1) === 0.5 && r % 2 !== 0 ? r - 1 : Object.is(r, 0) && n < 0 ? -0 : r
}

/** round(v [, s]): numeric rounds half away from zero keeping scale s; float8 rounds half to even. */
export function round(v: unknown, digits?: number): unknown {
  const k = numKind(v)
  if (k === 'float8' && digits === undefined) return new Float8(rint(toNumber(v)))
  if (k === 'int4' && digits === undefined) return new Float8(toNumber(v))
  if (k === 'int8' && digits === undefined) return new Float8(toNumber(v))
  const d = toDec(v)
  const s = digits ?? 0
  const rounded = d.decimalPlaces(Math.max(s, 0), BigNumber.ROUND_HALF_UP)
  return new Numeric(s < 0 ? rounded.shiftedBy(s).decimalPlaces(0, BigNumber.ROUND_HALF_UP).shiftedBy(-s) : rounded, Math.max(s, 0))
}

export function floorCeil(v: unknown, ceil: boolean): unknown {
  const k = numKind(v)
  if (k === 'numeric') return new Numeric(toDec(v).integerValue(ceil ? BigNumber.ROUND_CEIL : BigNumber.ROUND_FLOOR), 0)
  const n = toNumber(v)
  return new Float8(ceil ? Math.ceil(n) : Math.floor(n))
}

export function abs(v: unknown): unknown {
  if (typeof v === 'number') return v === INT4_MIN ? int4(-v) : Math.abs(v)
  if (v instanceof Int8) return int8(v.v < 0n ? -v.v : v.v)
  if (v instanceof Numeric) return new Numeric(v.v.abs(), v.scale)
  return new Float8(Math.abs(toNumber(v)))
}

/** sum() of one group: int4 sums as int8, int8 and numeric as numeric, float8 as float8. */
export function sum(vals: unknown[]): unknown {
  if (vals.length === 0) return null
  const kinds = new Set(vals.map((v) => numKind(v) ?? 'numeric'))
  if (kinds.has('float8')) return new Float8(vals.reduce((s: number, v) => s + toNumber(v), 0))
  if (kinds.has('numeric') || kinds.has('int8')) {
    let total = new Dec(0)
    let scale = 0
    for (const v of vals) {
      const n = v instanceof Numeric || numKind(v) ? v : Numeric.parse(String(v))
      total = total.plus(toDec(n))
      scale = Math.max(scale, scaleOf(n))
    }
    return new Numeric(total, scale)
  }
  let total = 0n
  for (const v of vals) total += BigInt(v as number)
  return int8(total)
}

/** avg(): numeric for integers and numerics (select_div_scale digits), float8 for floats. */
export function avg(vals: unknown[]): unknown {
  if (vals.length === 0) return null
  const s = sum(vals)
  if (s instanceof Float8) return new Float8(s.v / vals.length)
  const total = s instanceof Numeric ? s : new Numeric(toDec(s), 0)
  return numericDiv(total, new Numeric(new Dec(vals.length), 0))
}

/** Integer casts: numeric rounds half away from zero, float8 half to even; range checked. */
export function toIntegerValue(v: unknown, bits: 16 | 32 | 64, typeName: string): bigint {
  let b: bigint
  if (v instanceof Numeric) {
    if (v.v.isNaN()) throw new SqlError('0A000', `cannot convert NaN to ${typeName}`)
    b = BigInt(v.v.integerValue(BigNumber.ROUND_HALF_UP).toFixed(0))
  } else if (v instanceof Int8) b = v.v
  else {
    const n = toNumber(v)
    if (!Number.isFinite(n)) throw new SqlError('22003', `${typeName} out of range`)
    b = BigInt(rint(n))
  }
  const lim = bits === 16 ? 32_767n : bits === 32 ? 2_147_483_647n : INT8_MAX
  if (b > lim || b < -lim - 1n) throw new SqlError('22003', `${typeName} out of range`)
  return b
}

/** The PostgreSQL type name of a value, for pg_typeof. */
export function typeNameOf(v: unknown): string {
  if (v === null || v === undefined) return 'unknown'
  const k = numKind(v)
  if (k) return KIND_NAME[k]
  if (typeof v === 'boolean') return 'boolean'
  if (typeof v === 'string') return 'text'
  if (v instanceof PgArray) return `${ELEMENT_NAME[v.elementOid] ?? 'text'}[]`
  if (v instanceof JsonText) return 'json'
  if (v instanceof Jsonb) return 'jsonb'
  if (v instanceof BpChar) return 'character'
  if (v instanceof RegType) return 'regtype'
  if (v instanceof PgDate) return 'date'
  if (v instanceof PgInterval) return 'interval'
  if (v instanceof PgTimestamp) return v.zone ? 'timestamp with time zone' : 'timestamp without time zone'
  return 'jsonb'
}

const ELEMENT_NAME: Record<number, string> = {16: 'boolean', 20: 'bigint', 23: 'integer', 25: 'text', 701: 'double precision', 1082: 'date', 1114: 'timestamp without time zone', 1184: 'timestamp with time zone', 1186: 'interval', 1700: 'numeric', 3802: 'jsonb'}

/** A date as PostgreSQL prints it; impossible dates are 22008. */
export function dateValue(s: string): string {
  return parseDate(s).toString()
}

/** timestamptz / timestamp input printed as PostgreSQL does (ISO style, UTC, `+00`). */
export function timestampValue(s: string, withZone: boolean): string {
  return parseTimestamp(s, withZone).toString()
}
