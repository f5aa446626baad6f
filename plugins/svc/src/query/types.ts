/** PostgreSQL type OIDs svc reports, value <-> wire text conversion, and declared-type coercion. */
import {parseArrayText} from './array-text.js'
import {isDatetime, parseDate, parseInterval, parseTimestamp, PgDate, PgInterval, PgTimestamp, toDate, toTimestamp} from './datetime.js'
import {SqlError} from './errors.js'
import {BpChar, Float8, Int8, Jsonb, JsonText, Numeric, numKind, parseFloat8, PgArray, RegType, toIntegerValue, toNumber, typeNameOf} from './values.js'

export const OID = {
  bool: 16,
  bpchar: 1042,
  bytea: 17,
  char: 18,
  date: 1082,
  float4: 700,
  float8: 701,
  int2: 21,
  int4: 23,
  int8: 20,
  interval: 1186,
  json: 114,
  jsonb: 3802,
  name: 19,
  numeric: 1700,
  oid: 26,
  regtype: 2206,
  text: 25,
  timestamp: 1114,
  timestamptz: 1184,
  unknown: 705,
  uuid: 2950,
  varchar: 1043,
} as const

const NAMES: Record<number, string> = {
  16: 'boolean',
  17: 'bytea',
  18: '"char"',
  19: 'name',
  20: 'bigint',
  21: 'smallint',
  23: 'integer',
  25: 'text',
  26: 'oid',
  114: 'json',
  700: 'real',
  701: 'double precision',
  1042: 'character',
  1043: 'character varying',
  1082: 'date',
  1114: 'timestamp without time zone',
  1184: 'timestamp with time zone',
  1186: 'interval',
  1700: 'numeric',
  2206: 'regtype',
  2950: 'uuid',
  3802: 'jsonb',
}

export function typeName(oid: number): string {
  const element = ARRAY_ELEMENT[oid]
  return element === undefined ? (NAMES[oid] ?? 'text') : `${NAMES[element] ?? 'text'}[]`
}

/** A declared SQL type name (CREATE TABLE, casts) to its OID. */
export function oidOfTypeName(name: string): number {
  const n = name.toLowerCase().replace(/^pg_catalog\./, '')
  // A declared array column's type is recorded as `int[]` (one dimension, as svc supports).
  if (n.endsWith('[]')) return arrayOid(oidOfTypeName(n.replace(/(\[\])+$/, '')))
  switch (n) {
    case 'int':
    case 'integer':
    case 'int4':
    case 'serial':
    case 'serial4': {
      return OID.int4
    }
    case 'bigint':
    case 'int8':
    case 'bigserial':
    case 'serial8': {
      return OID.int8
    }
    case 'smallint':
    case 'int2':
    case 'smallserial': {
      return OID.int2
    }
    case 'real':
    case 'float4': {
      return OID.float4
    }
    case 'float':
    case 'float8':
    case 'double precision':
    case 'double': {
      return OID.float8
    }
    case 'numeric':
    case 'decimal': {
      return OID.numeric
    }
    case 'bool':
    case 'boolean': {
      return OID.bool
    }
    case 'json': {
      return OID.json
    }
    case 'jsonb': {
      return OID.jsonb
    }
    case 'varchar':
    case 'character varying': {
      return OID.varchar
    }
    case 'char':
    case 'character':
    case 'bpchar': {
      return OID.bpchar
    }
    case 'regtype': {
      return OID.regtype
    }
    case 'uuid': {
      return OID.uuid
    }
    case 'timestamptz':
    case 'timestamp with time zone': {
      return OID.timestamptz
    }
    case 'timestamp':
    case 'timestamp without time zone': {
      return OID.timestamp
    }
    case 'date': {
      return OID.date
    }
    case 'interval': {
      return OID.interval
    }
    case 'name': {
      return OID.name
    }
    case 'oid':
    case 'regclass':
    case 'regnamespace': {
      return OID.oid
    }
    default: {
      return OID.text
    }
  }
}

const INT_OIDS = new Set<number>([OID.int2, OID.int4, OID.int8])
const FLOAT_OIDS = new Set<number>([OID.float4, OID.float8, OID.numeric])

/** Converts a value to a declared column type, raising PostgreSQL's errors on bad input. */
export function coerce(v: unknown, oid: number): unknown {
  if (v === null || v === undefined) return null
  const element = ARRAY_ELEMENT[oid]
  if (element !== undefined) return coerceArray(v, element)
  if (INT_OIDS.has(oid)) {
    if (v instanceof Numeric || v instanceof Float8 || v instanceof Int8 || (typeof v === 'number' && !Number.isInteger(v))) {
      // numeric rounds half away from zero, float8 half to even (3.7::int is 4), as PostgreSQL casts.
      return checkRange(toIntegerValue(v, oid === OID.int2 ? 16 : oid === OID.int4 ? 32 : 64, typeName(oid)), oid)
    }
    if (typeof v === 'number' && Number.isInteger(v)) return checkRange(v, oid)
    if (typeof v === 'bigint') return checkRange(v, oid)
    if (typeof v === 'string' && /^\s*[+-]?\d+\s*$/.test(v)) return checkRange(v.trim(), oid)
    if (typeof v === 'boolean' && oid === OID.int4) return v ? 1 : 0
    throw new SqlError('22P02', `invalid input syntax for type ${typeName(oid)}: "${display(v)}"`)
  }
  if (oid === OID.numeric) {
    // Stored as the exact decimal text, so the scale (1.50) and every digit survive.
    if (v instanceof Numeric) return v.toString()
    if (numKind(v)) return v instanceof Float8 ? Numeric.parse(String(v.v)).toString() : String(v)
    if (typeof v === 'string') return Numeric.parse(v).toString()
    throw new SqlError('22P02', `invalid input syntax for type numeric: "${display(v)}"`)
  }
  if (FLOAT_OIDS.has(oid)) {
    // NaN and the infinities are stored as their text: JSON has no number for them.
    const n = numKind(v) ? toNumber(v) : typeof v === 'string' ? parseFloat8(v) : Number.NaN
    if ((v instanceof Numeric || v instanceof Int8) && !Number.isFinite(n) && !v.toString().includes('NaN')) {
      throw new SqlError('22003', `"${v.toString()}" is out of range for type ${typeName(oid)}`)
    }
    if (!numKind(v) && typeof v !== 'string') throw new SqlError('22P02', `invalid input syntax for type ${typeName(oid)}: "${display(v)}"`)
    return Number.isFinite(n) ? n : n > 0 ? 'Infinity' : n < 0 ? '-Infinity' : 'NaN'
  }
  if (oid === OID.bool) {
    if (typeof v === 'boolean') return v
    const s = String(v).trim().toLowerCase()
    if (['t', 'true', 'yes', 'on', '1', 'y'].includes(s)) return true
    if (['f', 'false', 'no', 'off', '0', 'n'].includes(s)) return false
    throw new SqlError('22P02', `invalid input syntax for type boolean: "${display(v)}"`)
  }
  if (oid === OID.json || oid === OID.jsonb) {
    if (v instanceof Jsonb || v instanceof JsonText) return v.value
    if (typeof v === 'string') {
      try {
        return JSON.parse(v)
      } catch {
        throw new SqlError('22P02', `invalid input syntax for type json`, {detail: `Token in "${v.slice(0, 40)}" is invalid.`})
      }
    }
    return v
  }
  // Dates, timestamps and intervals are stored as PostgreSQL prints them, whatever the input
  // form (a node-postgres Date parameter arrives as ISO text with a T and milliseconds).
  if (DATETIME_OIDS.has(oid)) return toDatetime(v, oid).toString()
  if (oid === OID.uuid && typeof v === 'string' && !/^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i.test(v)) {
    throw new SqlError('22P02', `invalid input syntax for type uuid: "${v}"`)
  }
  if (v instanceof BpChar) return v.text
  if (isDatetime(v)) return v.toString()
  if (typeof v === 'object') return v instanceof Numeric || v instanceof Int8 || v instanceof Float8 || v instanceof JsonText || v instanceof RegType || v instanceof PgArray || v instanceof Jsonb ? v.toString() : JSON.stringify(v)
  return String(v)
}

/**
 * An array column's value as a JSON array of its elements' stored forms: from PostgreSQL's text
 * form (`'{1,"a b",NULL}'`, what node-postgres sends for a JS array), an ARRAY[...] or a JSON array.
 */
function coerceArray(v: unknown, element: number): unknown[] {
  let items: unknown[]
  if (v instanceof PgArray) items = v.items
  else if (Array.isArray(v)) items = v
  else if (typeof v === 'string') items = parseArrayText(v)
  else if (v instanceof BpChar) items = parseArrayText(v.text)
  else throw new SqlError('42804', `column is of type ${typeName(arrayOid(element))} but expression is of type ${typeNameOf(v)}`, {hint: 'You will need to rewrite or cast the expression.'})
  return items.map((x) => (x === null || x === undefined ? null : coerce(x, element)))
}

/**
 * A stored value read as a value of its declared type: bigint as Int8, numeric as Numeric,
 * float8 as Float8 (so an integral float8 still divides as a float).
 */
export function typed(v: unknown, oid: number): unknown {
  if (v === null || v === undefined) return null
  const element = ARRAY_ELEMENT[oid]
  if (element !== undefined) return Array.isArray(v) ? new PgArray(v.map((x) => (x === null || x === undefined ? null : typed(x, element))), element) : v
  switch (oid) {
    case OID.int8: {
      if (v instanceof Int8) return v
      if (typeof v === 'number' && Number.isInteger(v)) return new Int8(BigInt(v))
      if (typeof v === 'string' && /^-?\d+$/.test(v)) return new Int8(BigInt(v))
      return v
    }
    case OID.numeric: {
      if (v instanceof Numeric) return v
      if (typeof v === 'number') return Numeric.parse(String(v))
      if (typeof v === 'string') {
        try {
          return Numeric.parse(v)
        } catch {
          return v
        }
      }
      return v
    }
    case OID.float4:
    case OID.float8: {
      if (v instanceof Float8) return v
      if (typeof v === 'number') return new Float8(v)
      if (typeof v === 'string' && /^-?(nan|infinity)$/i.test(v)) return new Float8(parseFloat8(v))
      return v
    }
    case OID.date:
    case OID.interval:
    case OID.timestamptz:
    case OID.timestamp: {
      // Stored as text (rows written before timestamps were normalised hold ISO text with a T).
      if (typeof v !== 'string' && !isDatetime(v)) return v
      try {
        return toDatetime(v, oid)
      } catch {
        return v
      }
    }
    default: {
      return v
    }
  }
}

/** Declared types whose stored form needs `typed` when read. */
export function needsTyping(oid: number): boolean {
  return oid === OID.int8 || oid === OID.numeric || oid === OID.float8 || oid === OID.float4 || DATETIME_OIDS.has(oid) || ARRAY_ELEMENT[oid] !== undefined
}

const DATETIME_OIDS = new Set<number>([OID.date, OID.timestamp, OID.timestamptz, OID.interval])

/** A value as a date, timestamp, timestamptz or interval (text parsed; date and timestamps convert into each other). */
export function toDatetime(v: unknown, oid: number): PgDate | PgInterval | PgTimestamp {
  if (oid === OID.interval) {
    if (v instanceof PgInterval) return v
    if (typeof v === 'string') return parseInterval(v)
  } else if (v instanceof PgDate || v instanceof PgTimestamp) {
    return oid === OID.date ? toDate(v) : toTimestamp(v, oid === OID.timestamptz)
  } else if (typeof v === 'string' || v instanceof BpChar) {
    const t = v instanceof BpChar ? v.text : v
    return oid === OID.date ? parseDate(t) : parseTimestamp(t, oid === OID.timestamptz)
  }
  throw new SqlError('42846', `cannot cast type ${valueTypeName(v)} to ${typeName(oid)}`)
}

function valueTypeName(v: unknown): string {
  return typeName(inferOid([v]))
}

/** The storable (JSON) form of a value computed by SQL. */
export function stored(v: unknown): unknown {
  if (v instanceof Int8 || v instanceof Numeric || v instanceof Float8 || v instanceof JsonText || v instanceof RegType || v instanceof PgArray || v instanceof Jsonb || v instanceof BpChar || isDatetime(v)) return v.toJSON()
  return v
}

/** The name PostgreSQL gives a cast's output column (`'1'::int` is `int4`). */
export function castColumnName(name: string): string {
  const n = name.toLowerCase().replace(/^pg_catalog\./, '')
  const canonical: Record<string, string> = {
    bigint: 'int8',
    bool: 'bool',
    boolean: 'bool',
    char: 'bpchar',
    character: 'bpchar',
    'character varying': 'varchar',
    decimal: 'numeric',
    double: 'float8',
    'double precision': 'float8',
    float: 'float8',
    int: 'int4',
    integer: 'int4',
    real: 'float4',
    smallint: 'int2',
    'timestamp with time zone': 'timestamptz',
    'timestamp without time zone': 'timestamp',
  }
  return canonical[n] ?? n
}

const INT_MAX: Record<number, bigint> = {[OID.int2]: 32_767n, [OID.int4]: 2_147_483_647n, [OID.int8]: 9_223_372_036_854_775_807n}

/**
 * An integer of the column's range. bigint takes the whole signed 64-bit range: values a double
 * cannot hold exactly stay a decimal string (so they are stored and returned digit for digit).
 */
function checkRange(n: bigint | number | string, oid: number): number | string {
  const lim = INT_MAX[oid] ?? INT_MAX[OID.int8]
  if (typeof n === 'number') {
    if (n > Number(lim) || n < -Number(lim) - 1) throw new SqlError('22003', `value "${n}" is out of range for type ${typeName(oid)}`)
    return n
  }
  let b: bigint
  try {
    b = typeof n === 'bigint' ? n : BigInt(typeof n === 'string' ? n.replace(/^\+/, '') : n)
  } catch {
    throw new SqlError('22P02', `invalid input syntax for type ${typeName(oid)}: "${String(n)}"`)
  }
  if (b > lim || b < -lim - 1n) throw new SqlError('22003', `value "${String(n)}" is out of range for type ${typeName(oid)}`)
  const asNumber = Number(b)
  return Number.isSafeInteger(asNumber) ? asNumber : b.toString()
}

function display(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v)
}

/** The OID that best describes the values of one result column. */
export function inferOid(values: Iterable<unknown>, fallback: number = OID.text): number {
  let oid: number | undefined
  for (const v of values) {
    if (v === null || v === undefined) continue
    let t: number
    if (typeof v === 'boolean') t = OID.bool
    else if (v instanceof Int8) t = OID.int8
    else if (v instanceof Numeric) t = OID.numeric
    else if (v instanceof Float8) t = OID.float8
    else if (v instanceof PgArray) t = arrayOid(v.elementOid)
    else if (v instanceof JsonText) t = OID.json
    else if (v instanceof RegType) t = OID.regtype
    else if (v instanceof Jsonb) t = OID.jsonb
    else if (v instanceof BpChar) t = OID.bpchar
    else if (v instanceof PgDate) t = OID.date
    else if (v instanceof PgInterval) t = OID.interval
    else if (v instanceof PgTimestamp) t = v.zone ? OID.timestamptz : OID.timestamp
    else if (typeof v === 'number') t = Number.isInteger(v) ? (Math.abs(v) <= 2_147_483_647 ? OID.int4 : OID.int8) : OID.float8
    else if (typeof v === 'string') t = OID.text
    else t = OID.jsonb
    if (oid === undefined) oid = t
    else if (oid !== t) {
      if (NUMERIC_RANK[oid] !== undefined && NUMERIC_RANK[t] !== undefined) {
        oid = NUMERIC_RANK[oid] >= NUMERIC_RANK[t] ? oid : t
      } else return OID.text
    }
  }
  return oid ?? fallback
}


const NUMERIC_RANK: Record<number, number> = {[OID.int4]: 0, [OID.int8]: 1, [OID.numeric]: 2, [OID.float8]: 3}

/** The array type of an element type (int4 -> int4[] 1007, text -> text[] 1009, ...). */
export function arrayOid(element: number): number {
  return ARRAY_OF[element] ?? 1009
}

const ARRAY_OF: Record<number, number> = {16: 1000, 20: 1016, 21: 1005, 23: 1007, 25: 1009, 700: 1021, 701: 1022, 1043: 1015, 1082: 1182, 1114: 1115, 1184: 1185, 1186: 1187, 1700: 1231, 2950: 2951, 3802: 3807, 114: 199}

/** The element type of an array type (1007 int4[] -> 23 int4); undefined for other types. */
export const ARRAY_ELEMENT: Record<number, number> = Object.fromEntries(Object.entries(ARRAY_OF).map(([e, a]) => [a, Number(e)]))
