/**
 * The catalog of one statement: every schema (the branches), relation (tables and their
 * indexes), column and constraint, with the oids the system tables and the catalog functions
 * share. Built once per statement from the engine (tables, declared or inferred columns, NOT
 * NULL, secondary indexes) and kept on the session, so the system tables a statement joins and
 * the functions it calls (`pg_get_indexdef`, `pg_table_is_visible`, ...) see the same picture.
 */
import {branchOf, currentSchema, type PgSession, tableColumns, tableDef, tableNames} from './executor.js'

/** The bootstrap superuser's oid: svc's one role, the session's user. */
export const ROLE_OID = 10
/** pg_database_owner, owner of `public` in a new PostgreSQL 15 database. */
export const DATABASE_OWNER_OID = 6171
export const PUBLIC_OID = 2200
export const PG_CATALOG_OID = 11
export const INFORMATION_SCHEMA_OID = 13_182
export const DATABASE_OID = 16_384
/** pg_am: heap for tables (psql's `\d+` prints it), btree for indexes. */
export const HEAP_AM = 2
export const BTREE_AM = 403

export interface CatalogSchema {
  branch?: string
  name: string
  oid: number
  owner: number
}

export interface CatalogColumn {
  name: string
  notNull: boolean
  type: number
}

export interface CatalogTable {
  columns: CatalogColumn[]
  documents: number
  kind: 'r'
  name: string
  oid: number
  schema: CatalogSchema
}

export interface CatalogIndex {
  /** The primary key's constraint (pg_constraint.oid); undefined for a plain index. */
  constraintOid?: number
  field: string
  kind: 'i'
  name: string
  oid: number
  primary: boolean
  schema: CatalogSchema
  table: CatalogTable
}

export type CatalogRelation = CatalogIndex | CatalogTable

export interface CatalogSnapshot {
  /** The statement it was built for (PgSession.statementAt). */
  at: bigint | undefined
  byOid: Map<number, CatalogRelation>
  indexes: CatalogIndex[]
  /** The schema unqualified names resolve to (search_path): its relations are "visible". */
  visibleSchema: string
  schemas: CatalogSchema[]
  tables: CatalogTable[]
  user: string
}

/** A stable oid for a relation (or another catalog object) of a branch, above PostgreSQL's reserved range. */
export function oidOf(branch: string, name: string): number {
  let h = 0x81_1c_9d_c5
  for (const ch of `${branch}.${name}`) {
    h ^= ch.codePointAt(0) as number
    h = Math.imul(h, 0x01_00_01_93) >>> 0
  }
  return 16_384 + (h % 1_000_000_000)
}

/** Columns that are NOT NULL: the id (the primary key) and those CREATE TABLE declared NOT NULL. */
async function notNullColumns(s: PgSession, branch: string, table: string): Promise<Set<string>> {
  const def = await tableDef(s, branch, table).catch(() => undefined)
  return new Set(['id', ...(def?.columns ?? []).filter((c) => c.notNull).map((c) => c.name)])
}

async function schemasOf(s: PgSession): Promise<CatalogSchema[]> {
  const out: CatalogSchema[] = [{branch: 'main', name: 'public', oid: PUBLIC_OID, owner: DATABASE_OWNER_OID}]
  for (const b of await s.engine.branches()) if (b.name !== 'main') out.push({branch: b.name, name: b.name, oid: oidOf('', b.name), owner: ROLE_OID})
  out.push({name: 'pg_catalog', oid: PG_CATALOG_OID, owner: ROLE_OID}, {name: 'information_schema', oid: INFORMATION_SCHEMA_OID, owner: ROLE_OID})
  return out
}

async function build(s: PgSession): Promise<CatalogSnapshot> {
  const schemas = await schemasOf(s)
  const tables: CatalogTable[] = []
  const indexes: CatalogIndex[] = []
  for (const schema of schemas) {
    if (!schema.branch) continue
    const branch = branchOf(s, schema.name)
    for (const name of await tableNames(s, branch)) {
      const notNull = await notNullColumns(s, branch, name)
      const columns = (await tableColumns(s, branch, name)).map((c) => ({name: c.name, notNull: notNull.has(c.name), type: c.oid}))
      const documents = await s.engine.count({branch, table: name}).catch(() => 0)
      const table: CatalogTable = {columns, documents, kind: 'r', name, oid: oidOf(branch, name), schema}
      tables.push(table)
      const pkey = `${name}_pkey`
      indexes.push({constraintOid: oidOf(branch, `${pkey}#constraint`), field: 'id', kind: 'i', name: pkey, oid: oidOf(branch, pkey), primary: true, schema, table})
      for (const ix of await s.engine.indexes({branch, table: name}).catch(() => [])) {
        indexes.push({field: ix.field, kind: 'i', name: ix.name, oid: oidOf(branch, ix.name), primary: false, schema, table})
      }
    }
  }
  const byOid = new Map<number, CatalogRelation>()
  for (const r of [...tables, ...indexes]) byOid.set(r.oid, r)
  return {at: s.statementAt, byOid, indexes, schemas, tables, user: s.user, visibleSchema: currentSchema(s)}
}

const snapshots = new WeakMap<PgSession, CatalogSnapshot>()

/** The catalog for the session's running statement (built on first use, shared by its reads). */
export async function catalogSnapshot(s: PgSession): Promise<CatalogSnapshot> {
  const have = snapshots.get(s)
  if (have && have.at !== undefined && have.at === s.statementAt && have.visibleSchema === currentSchema(s)) return have
  const snap = await build(s)
  snapshots.set(s, snap)
  return snap
}

/** The snapshot a running statement already built, for the synchronous catalog functions. */
export function builtSnapshot(s: PgSession): CatalogSnapshot | undefined {
  const have = snapshots.get(s)
  return have && have.at !== undefined && have.at === s.statementAt ? have : undefined
}

/** `CREATE [UNIQUE] INDEX ...` as pg_get_indexdef prints it. */
export function indexDef(ix: CatalogIndex): string {
  return `CREATE ${ix.primary ? 'UNIQUE ' : ''}INDEX ${ix.name} ON ${ix.schema.name}.${ix.table.name} USING btree (${ix.field})`
}
