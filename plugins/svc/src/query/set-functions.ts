/**
 * Set-returning functions in FROM, as PostgreSQL names and types their columns: generate_series,
 * unnest, jsonb_array_elements[_text], jsonb_each[_text] and jsonb_object_keys. Each takes the
 * argument values (the executor evaluates them, once or per row of the items before it for a
 * lateral call) and gives rows keyed by column name.
 */
import BigNumber from 'bignumber.js'

import {SqlError, unsupported} from './errors.js'
import type {RowObj} from './eval.js'
import {inferOid, OID} from './types.js'
import {Int8, Jsonb, JsonText, jsonbText, Numeric, PgArray} from './values.js'

/** How many rows one call may return: a typo in generate_series must not exhaust the server. */
export const MAX_SET_ROWS = 1_000_000

interface ColumnType {
  name: string
  oid: number
}

export interface SetResult {
  columns: ColumnType[]
  rows: RowObj[]
}

/** Column names: a scalar function's one column takes the table alias (as in PostgreSQL); named OUT columns keep their names; `AS t(a, b)` renames either. */
function named(columns: ColumnType[], scalar: boolean, alias: string | undefined, columnAliases: string[] | undefined): ColumnType[] {
  if (columnAliases && columnAliases.length > columns.length) {
    throw new SqlError('42601', `a column definition list for this function has ${columnAliases.length} names but it returns ${columns.length} column${columns.length === 1 ? '' : 's'}`)
  }
  return columns.map((c, i) => ({name: columnAliases?.[i] ?? (scalar && alias ? alias : c.name), oid: c.oid}))
}

function tooMany(name: string): SqlError {
  return new SqlError('54000', `${name} would return more than ${MAX_SET_ROWS.toLocaleString('en')} rows`, {hint: 'narrow the range or use a larger step'})
}

function generateSeries(args: unknown[]): {oid: number; values: unknown[]} {
  if (args.length < 2 || args.length > 3) throw new SqlError('42883', 'generate_series(start, stop [, step]) takes two or three numbers')
  if (args.some((a) => a === null || a === undefined)) return {oid: OID.int4, values: []}
  for (const a of args) if (typeof a !== 'number' && typeof a !== 'bigint' && !(a instanceof Int8) && !(a instanceof Numeric)) throw unsupported('generate_series over values other than numbers')
  const big = (a: unknown): BigNumber => (a instanceof Numeric ? a.v : a instanceof Int8 ? new BigNumber(a.v.toString()) : new BigNumber(String(a)))
  const [start, stop, step = new BigNumber(1)] = args.map(big)
  if (step.isZero()) throw new SqlError('22023', 'step size cannot equal zero')
  const count = stop.minus(start).div(step).integerValue(BigNumber.ROUND_FLOOR).plus(1)
  if (count.gt(MAX_SET_ROWS)) throw tooMany('generate_series')
  const n = Math.max(0, count.toNumber())
  if (args.some((a) => a instanceof Numeric || (typeof a === 'number' && !Number.isInteger(a)))) {
    // PostgreSQL's numeric series has the scale of start and step (not of stop).
    const scale = Math.max(...[args[0], args[2]].filter((a) => a !== undefined).map((a) => (a instanceof Numeric ? a.scale : big(a).decimalPlaces() ?? 0)))
    return {oid: OID.numeric, values: Array.from({length: n}, (_, i) => new Numeric(start.plus(step.times(i)), scale))}
  }
  if (args.some((a) => a instanceof Int8 || typeof a === 'bigint' || !Number.isSafeInteger(a) || Math.abs(a as number) > 2_147_483_647)) {
    return {oid: OID.int8, values: Array.from({length: n}, (_, i) => new Int8(BigInt(start.plus(step.times(i)).toFixed())))}
  }
  const first = start.toNumber()
  const by = step.toNumber()
  return {oid: OID.int4, values: Array.from({length: n}, (_, i) => first + by * i)}
}

/** A jsonb argument as its JSON value (text is parsed as jsonb input is). */
function jsonArg(v: unknown): unknown {
  if (v instanceof Jsonb || v instanceof JsonText) return v.value
  if (typeof v === 'string') {
    try {
      return JSON.parse(v)
    } catch {
      throw new SqlError('22P02', 'invalid input syntax for type json')
    }
  }
  return v
}

/** A JSON value as `->` gives it: objects and arrays as they are, scalars as jsonb. */
const asJsonb = (v: unknown): unknown => (v !== null && typeof v === 'object' && !(v instanceof Numeric) ? v : new Jsonb(v))
/** A JSON value as `->>` gives it: strings bare, JSON null as NULL, anything else as its jsonb text. */
const asText = (v: unknown): null | string => (v === null || v === undefined ? null : typeof v === 'string' ? v : jsonbText(v))

function elements(v: unknown): unknown[] {
  const j = jsonArg(v)
  if (Array.isArray(j)) return j
  throw new SqlError('22023', `cannot extract elements from ${j !== null && typeof j === 'object' ? 'an object' : 'a scalar'}`)
}

function entries(name: string, v: unknown): Array<[string, unknown]> {
  const j = jsonArg(v)
  // jsonb keeps an object's keys shorter first, then bytewise: its functions list them in that order.
  if (j !== null && typeof j === 'object' && !Array.isArray(j) && !(j instanceof Numeric)) {
    return Object.entries(j as Record<string, unknown>).sort(([a], [b]) => Buffer.byteLength(a) - Buffer.byteLength(b) || Buffer.compare(Buffer.from(a), Buffer.from(b)))
  }
  if (name === 'jsonb_object_keys') throw new SqlError('22023', `cannot call jsonb_object_keys on ${Array.isArray(j) ? 'an array' : 'a scalar'}`)
  throw new SqlError('22023', `cannot call ${name} on a non-object`)
}

export const SET_FUNCTIONS = new Set(['generate_series', 'unnest', 'jsonb_array_elements', 'jsonb_array_elements_text', 'jsonb_each', 'jsonb_each_text', 'jsonb_object_keys'])

/** The rows of one call of a set-returning function; NULL arguments give no rows, as in PostgreSQL. */
export function callSetFunction(name: string, args: unknown[], alias?: string, columnAliases?: string[]): SetResult {
  const one = (oid: number, values: unknown[]): SetResult => {
    if (values.length > MAX_SET_ROWS) throw tooMany(name)
    const [c] = named([{name, oid}], true, alias, columnAliases)
    return {columns: [c], rows: values.map((v) => ({[c.name]: v}))}
  }
  const arg = args[0]
  const none = arg === null || arg === undefined
  switch (name) {
    case 'generate_series': {
      const {oid, values} = generateSeries(args)
      return one(oid, values)
    }
    case 'unnest': {
      if (args.length !== 1) throw unsupported('unnest of several arrays')
      if (none) return one(OID.text, [])
      // An array column is stored as a JSON array (docs/svc-sql.md): its items, typed by their values.
      if (Array.isArray(arg)) return one(inferOid(arg), arg)
      if (!(arg instanceof PgArray)) throw new SqlError('42883', 'function unnest() needs an array')
      return one(arg.elementOid, arg.items)
    }
    case 'jsonb_object_keys': {
      return one(OID.text, none ? [] : entries(name, arg).map(([k]) => k))
    }
    case 'jsonb_array_elements':
    case 'jsonb_array_elements_text': {
      const text = name.endsWith('_text')
      const [c] = named([{name: 'value', oid: text ? OID.text : OID.jsonb}], false, alias, columnAliases)
      const items = none ? [] : elements(arg)
      if (items.length > MAX_SET_ROWS) throw tooMany(name)
      // The function returns a plain type, so its alias alone also names the value (`t` as well as `t.value`).
      const both = alias !== undefined && alias !== c.name && !columnAliases
      return {
        columns: [c],
        rows: items.map((v) => {
          const value = text ? asText(v) : asJsonb(v)
          return both ? {[alias]: value, [c.name]: value} : {[c.name]: value}
        }),
      }
    }
    case 'jsonb_each':
    case 'jsonb_each_text': {
      const text = name.endsWith('_text')
      const [k, c] = named([{name: 'key', oid: OID.text}, {name: 'value', oid: text ? OID.text : OID.jsonb}], false, alias, columnAliases)
      const pairs = none ? [] : entries(name, arg)
      return {columns: [k, c], rows: pairs.map(([key, v]) => ({[c.name]: text ? asText(v) : asJsonb(v), [k.name]: key}))}
    }
    default: {
      throw new SqlError('42883', `function ${name}() does not exist`)
    }
  }
}
