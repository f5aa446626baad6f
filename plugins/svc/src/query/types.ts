/** PostgreSQL type OIDs svc reports, value <-> wire text conversion, and declared-type coercion. */
import {SqlError} from './errors.js'

export const OID = {
  bool: 16,
  bytea: 17,
  char: 18,
  date: 1082,
  float4: 700,
  float8: 701,
  int2: 21,
  int4: 23,
  int8: 20,
  json: 114,
  jsonb: 3802,
  name: 19,
  numeric: 1700,
  oid: 26,
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
  1043: 'character varying',
  1082: 'date',
  1114: 'timestamp without time zone',
  1184: 'timestamp with time zone',
  1700: 'numeric',
  2950: 'uuid',
  3802: 'jsonb',
}

export function typeName(oid: number): string {
  return NAMES[oid] ?? 'text'
}

/** A declared SQL type name (CREATE TABLE, casts) to its OID. */
export function oidOfTypeName(name: string): number {
  const n = name.toLowerCase().replace(/^pg_catalog\./, '')
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
    case 'name': {
      return OID.name
    }
    case 'oid':
    case 'regclass': {
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
  if (INT_OIDS.has(oid)) {
    if (typeof v === 'number' && Number.isInteger(v)) return checkRange(v, oid)
    if (typeof v === 'bigint') return checkRange(v, oid)
    if (typeof v === 'string' && /^\s*[+-]?\d+\s*$/.test(v)) return checkRange(v.trim(), oid)
    if (typeof v === 'boolean' && oid === OID.int4) return v ? 1 : 0
    throw new SqlError('22P02', `invalid input syntax for type ${typeName(oid)}: "${display(v)}"`)
  }
  if (FLOAT_OIDS.has(oid)) {
    if (typeof v === 'number') return v
    if (typeof v === 'string' && v.trim() !== '' && !Number.isNaN(Number(v))) return Number(v)
    throw new SqlError('22P02', `invalid input syntax for type ${typeName(oid)}: "${display(v)}"`)
  }
  if (oid === OID.bool) {
    if (typeof v === 'boolean') return v
    const s = String(v).trim().toLowerCase()
    if (['t', 'true', 'yes', 'on', '1', 'y'].includes(s)) return true
    if (['f', 'false', 'no', 'off', '0', 'n'].includes(s)) return false
    throw new SqlError('22P02', `invalid input syntax for type boolean: "${display(v)}"`)
  }
  if (oid === OID.json || oid === OID.jsonb) {
    if (typeof v === 'string') {
      try {
        return JSON.parse(v)
      } catch {
        throw new SqlError('22P02', `invalid input syntax for type json`, {detail: `Token in "${v.slice(0, 40)}" is invalid.`})
      }
    }
    return v
  }
  if (oid === OID.uuid && typeof v === 'string' && !/^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i.test(v)) {
    throw new SqlError('22P02', `invalid input syntax for type uuid: "${v}"`)
  }
  if (typeof v === 'object') return JSON.stringify(v)
  return String(v)
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
    else if (typeof v === 'number') t = Number.isInteger(v) ? (Math.abs(v) <= 2_147_483_647 ? OID.int4 : OID.int8) : OID.float8
    else if (typeof v === 'string') t = OID.text
    else t = OID.jsonb
    if (oid === undefined) oid = t
    else if (oid !== t) {
      if ((oid === OID.int4 || oid === OID.int8 || oid === OID.float8) && (t === OID.int4 || t === OID.int8 || t === OID.float8)) {
        oid = oid === OID.float8 || t === OID.float8 ? OID.float8 : OID.int8
      } else return OID.text
    }
  }
  return oid ?? fallback
}

