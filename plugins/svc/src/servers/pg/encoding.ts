/** Result and parameter encoding of the PostgreSQL wire protocol (text and binary formats). */
import {coerce, OID} from '../../query/types.js'
import {floatText, Int8, textOf} from '../../query/values.js'
import {arrayFromBinary, arrayToBinary, datetimeFromBinary, datetimeToBinary, elementOfArray, numericFromBinary, numericToBinary, regtypeToBinary, uuidFromBinary, uuidToBinary} from './binary.js'

/** Text-format rendering of a value for a column of type `oid`. */
export function toText(v: unknown, oid: number): Buffer | null {
  const s = textValue(v, oid)
  return s === null ? null : Buffer.from(s)
}

/**
 * The text format as a string, encoded once into its DataRow (wire.ts dataRowText): a
 * 2,000-row scan made a Buffer per value and per message, garbage the loop then collected.
 */
export function textValue(v: unknown, oid: number): null | string {
  if (v === null || v === undefined) return null
  if (typeof v === 'boolean') return oid === OID.bool ? (v ? 't' : 'f') : String(v)
  if (typeof v === 'number') {
    if (oid === OID.bool) return v ? 't' : 'f'
    return Number.isInteger(v) ? String(v) : floatText(v)
  }
  if (typeof v === 'string') return v
  if (Buffer.isBuffer(v)) return '\\x' + v.toString('hex')
  // Arrays print as {1,2}, numerics with their scale, json as built, jsonb as PostgreSQL formats it.
  return textOf(v)
}

/** Binary-format rendering (only requested by drivers that ask for it explicitly). */
export function toBinary(v: unknown, oid: number): Buffer | null {
  if (v === null || v === undefined) return null
  switch (oid) {
    case OID.bool: {
      return Buffer.from([v ? 1 : 0])
    }
    case OID.int2: {
      const b = Buffer.alloc(2)
      b.writeInt16BE(Number(v))
      return b
    }
    case OID.int4:
    case OID.oid: {
      const b = Buffer.alloc(4)
      b.writeInt32BE(Number(v))
      return b
    }
    case OID.int8: {
      const b = Buffer.alloc(8)
      b.writeBigInt64BE(v instanceof Int8 ? v.v : typeof v === 'string' && /^-?\d+$/.test(v) ? BigInt(v) : BigInt(Math.trunc(Number(v))))
      return b
    }
    case OID.float4: {
      const b = Buffer.alloc(4)
      b.writeFloatBE(Number(v))
      return b
    }
    case OID.float8: {
      const b = Buffer.alloc(8)
      b.writeDoubleBE(Number(v))
      return b
    }
    case OID.jsonb: {
      return Buffer.concat([Buffer.from([1]), toText(v, oid) as Buffer])
    }
    case OID.numeric: {
      return numericToBinary(v)
    }
    case OID.date:
    case OID.timestamp:
    case OID.timestamptz:
    case OID.interval: {
      return datetimeToBinary(v, oid)
    }
    case OID.uuid: {
      return uuidToBinary(v)
    }
    case OID.regtype: {
      return regtypeToBinary(v)
    }
    case OID.bytea: {
      return Buffer.isBuffer(v) ? v : Buffer.from(textOf(v))
    }
    default: {
      const element = elementOfArray(oid)
      if (element !== undefined) return arrayToBinary(v, element, (x, o) => toBinary(x, o))
      // text, varchar, char(n), name, json and the rest: the binary form is the text's bytes.
      return toText(v, oid)
    }
  }
}

/** Decodes a Bind parameter. Text parameters of unspecified type stay strings. */
export function decodeParam(raw: Buffer | null, oid: number, format: number): unknown {
  if (raw === null) return null
  if (format === 1) {
    switch (oid) {
      case OID.bool: {
        return raw[0] !== 0
      }
      case OID.int2: {
        return raw.readInt16BE(0)
      }
      case OID.int4: {
        return raw.readInt32BE(0)
      }
      case OID.int8: {
        const b = raw.readBigInt64BE(0)
        // Beyond 2^53 a double would round: keep the exact digits.
        return Number.isSafeInteger(Number(b)) ? Number(b) : b.toString()
      }
      case OID.float4: {
        return raw.readFloatBE(0)
      }
      case OID.float8: {
        return raw.readDoubleBE(0)
      }
      case OID.jsonb: {
        return JSON.parse(raw.subarray(1).toString('utf8'))
      }
      case OID.numeric: {
        return numericFromBinary(raw)
      }
      case OID.date:
      case OID.timestamp:
      case OID.timestamptz:
      case OID.interval: {
        return datetimeFromBinary(raw, oid)
      }
      case OID.uuid: {
        return uuidFromBinary(raw)
      }
      default: {
        if (elementOfArray(oid) !== undefined) return arrayFromBinary(raw, (x, o) => decodeParam(x, o, 1))
        return raw.toString('utf8')
      }
    }
  }
  const s = raw.toString('utf8')
  if (oid === 0 || oid === OID.text || oid === OID.varchar || oid === OID.unknown) return s
  return coerce(s, oid)
}
