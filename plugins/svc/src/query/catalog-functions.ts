/**
 * The catalog functions psql's backslash commands and drivers call (`pg_get_indexdef`,
 * `format_type`, `pg_table_is_visible`, ...), answered from the statement's catalog snapshot —
 * the one the system tables it reads were generated from (catalog-snapshot.ts). Descriptions,
 * defaults and sizes svc does not keep are NULL.
 */
import type {CatalogSnapshot} from './catalog-snapshot.js'

import {DATABASE_OWNER_OID, indexDef, ROLE_OID} from './catalog-snapshot.js'
import {SqlError} from './errors.js'
import {OID, typeName} from './types.js'
import {toNumber} from './values.js'

export interface CatalogFunctionSession {
  /** The snapshot the running statement built, if it read a system table. */
  catalog?: () => CatalogSnapshot | undefined
  user: string
}

/** Returned for a function this module does not define. */
export const NOT_CATALOG = Symbol('not a catalog function')

/** Catalog functions that answer NULL in svc: descriptions (no COMMENT), expressions (no defaults), sizes (no relation files). */
const NULL_FUNCTIONS = new Set([
  'col_description',
  'obj_description',
  'shobj_description',
  'pg_get_expr',
  'pg_get_serial_sequence',
  'pg_get_statisticsobjdef_columns',
  'pg_indexes_size',
  'pg_relation_size',
  'pg_table_size',
  'pg_total_relation_size',
])

const TRUE_FUNCTIONS = new Set(['pg_table_is_visible', 'has_table_privilege', 'has_schema_privilege', 'has_database_privilege', 'has_column_privilege'])

/** Result types PostgreSQL declares for the catalog functions whose type is not text. */
const RESULT_OIDS: Record<string, number> = {
  has_column_privilege: OID.bool,
  has_database_privilege: OID.bool,
  has_schema_privilege: OID.bool,
  has_table_privilege: OID.bool,
  pg_encoding_to_char: OID.name,
  pg_get_userbyid: OID.name,
  pg_indexes_size: OID.int8,
  pg_relation_is_publishable: OID.bool,
  pg_relation_size: OID.int8,
  pg_table_is_visible: OID.bool,
  pg_table_size: OID.int8,
  pg_total_relation_size: OID.int8,
}

/** The result type of a catalog function, undefined for any other function. */
export function catalogFunctionOid(name: string): number | undefined {
  return RESULT_OIDS[name]
}

function oidArg(v: unknown): number | undefined {
  if (v === null || v === undefined) return undefined
  const n = typeof v === 'string' ? Number(v) : toNumber(v)
  return Number.isFinite(n) ? n : undefined
}

/** pg_size_pretty: bytes, kB, MB, GB, TB with PostgreSQL's rounding (halves round up, 10x steps). */
export function sizePretty(bytes: number): string {
  const units = ['bytes', 'kB', 'MB', 'GB', 'TB', 'PB']
  let size = bytes
  let unit = 0
  while (Math.abs(size) >= 10 * 1024 && unit < units.length - 1) {
    size /= 1024
    unit++
  }
  return `${unit === 0 ? size : Math.round(size)} ${units[unit]}`
}

export function catalogFunction(name: string, args: () => unknown[], session: CatalogFunctionSession): unknown {
  if (NULL_FUNCTIONS.has(name)) return null
  if (name === 'pg_table_is_visible') {
    const oid = oidArg(args()[0])
    const snap = session.catalog?.()
    if (oid === undefined) return null
    const rel = snap?.byOid.get(oid)
    return rel ? rel.schema.name === snap?.visibleSchema : true
  }
  if (TRUE_FUNCTIONS.has(name)) return true
  switch (name) {
    case 'pg_get_userbyid': {
      const oid = oidArg(args()[0])
      if (oid === undefined) return null
      if (oid === DATABASE_OWNER_OID) return 'pg_database_owner'
      return oid === ROLE_OID ? session.user : `unknown (OID=${oid})`
    }
    case 'format_type': {
      const oid = oidArg(args()[0])
      return oid === undefined ? null : typeName(oid)
    }
    case 'pg_encoding_to_char': {
      return oidArg(args()[0]) === 6 ? 'UTF8' : ''
    }
    case 'pg_relation_is_publishable': {
      return false
    }
    case 'pg_get_indexdef': {
      const [oidValue, column] = args()
      const oid = oidArg(oidValue)
      const rel = oid === undefined ? undefined : session.catalog?.()?.byOid.get(oid)
      if (rel?.kind !== 'i') return null
      const col = oidArg(column) ?? 0
      if (col === 0) return indexDef(rel)
      return col === 1 ? rel.field : ''
    }
    case 'pg_get_constraintdef': {
      const oid = oidArg(args()[0])
      const ix = oid === undefined ? undefined : session.catalog?.()?.indexes.find((x) => x.constraintOid === oid)
      return ix ? `PRIMARY KEY (${ix.field})` : null
    }
    case 'quote_ident': {
      // psql's tab completion quotes every name it offers. (PostgreSQL also quotes reserved
      // keywords; svc quotes only what is not a plain lower-case identifier.)
      const [v] = args()
      if (v === null || v === undefined) return null
      const id = String(v)
      return /^[a-z_][a-z0-9_$]*$/.test(id) ? id : `"${id.replaceAll('"', '""')}"`
    }
    case 'pg_size_pretty': {
      const n = oidArg(args()[0])
      return n === undefined ? null : sizePretty(n)
    }
    default: {
      return NOT_CATALOG
    }
  }
}

/**
 * `'name'::regclass`: the oid of a table or index, by a name as PostgreSQL reads it (optionally
 * schema-qualified, unquoted parts folded to lower case), in the search_path schema when not
 * qualified. undefined when the statement built no catalog snapshot (it read no system table):
 * the text then stays as it is.
 */
export function regclassOid(name: string, session: CatalogFunctionSession): number | undefined {
  const snap = session.catalog?.()
  if (!snap) return undefined
  const parts = [...name.trim().matchAll(/"((?:[^"]|"")*)"|([^."]+)/g)].map((m) => (m[1] === undefined ? m[2].trim().toLowerCase() : m[1].replaceAll('""', '"')))
  const [schema, rel] = parts.length > 1 ? [parts.at(-2), parts.at(-1)] : [snap.visibleSchema, parts[0]]
  for (const r of snap.byOid.values()) if (r.name === rel && r.schema.name === schema) return r.oid
  throw new SqlError('42P01', `relation "${name}" does not exist`)
}
