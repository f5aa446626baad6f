/**
 * The system tables statements read: `pg_catalog.*` and the `information_schema` views, generated
 * from the statement's catalog snapshot (catalog-snapshot.ts). The executor reads them like any
 * table, so psql's backslash commands, drivers' and tools' introspection queries are parsed,
 * joined, filtered and sorted by the ordinary engine. Each table declares its columns with
 * PostgreSQL's types; columns svc has no notion of hold PostgreSQL's value for an ordinary heap
 * table (no rules, no triggers, no row security). Catalogs of features svc lacks (policies,
 * inheritance, publications, extended statistics) are present and empty, so the queries psql
 * sends for them answer "none".
 */
import type {RowObj} from './eval.js'
import type {Column, PgSession, Source} from './executor.js'

import {
  BTREE_AM,
  type CatalogSnapshot,
  catalogSnapshot,
  DATABASE_OID,
  DATABASE_OWNER_OID,
  HEAP_AM,
  indexDef,
  ROLE_OID,
} from './catalog-snapshot.js'
import {SqlError} from './errors.js'
import {settingsOf} from './executor.js'
import {OID, typeName} from './types.js'
import {PgArray} from './values.js'

type Columns = Record<string, number>

interface SystemTable {
  columns: Columns
  rows(snap: CatalogSnapshot, s: PgSession): RowObj[]
}

const TEXT_ARRAY = 1009
const OID_ARRAY = 1028
const INT2_ARRAY = 1005

/** A column type's TOAST storage as PostgreSQL declares it (pg_type.typstorage): plain, main (numeric) or extended. */
function storageOf(oid: number): string {
  if (oid === OID.numeric) return 'm'
  const plain = new Set<number>([OID.bool, OID.int2, OID.int4, OID.int8, OID.float4, OID.float8, OID.date, OID.timestamp, OID.timestamptz, OID.interval, OID.uuid, OID.oid, OID.name, OID.char])
  return plain.has(oid) ? 'p' : 'x'
}

/** Types whose values sort by a collation (pg_type.typcollation is "default", 100). */
function collatable(oid: number): boolean {
  return oid === OID.text || oid === OID.varchar || oid === OID.bpchar || oid === OID.name
}

const empty = (columns: Columns): SystemTable => ({columns, rows: () => []})

const PG_CATALOG: Record<string, SystemTable> = {
  pg_am: {
    columns: {amhandler: OID.text, amname: OID.name, amtype: OID.char, oid: OID.oid},
    rows: () => [
      {amhandler: 'heap_tableam_handler', amname: 'heap', amtype: 't', oid: HEAP_AM},
      {amhandler: 'bthandler', amname: 'btree', amtype: 'i', oid: BTREE_AM},
    ],
  },
  pg_attrdef: empty({adbin: OID.text, adnum: OID.int2, adrelid: OID.oid, oid: OID.oid}),
  pg_attribute: {
    columns: {
      attacl: TEXT_ARRAY,
      attcollation: OID.oid,
      attcompression: OID.char,
      attgenerated: OID.char,
      atthasdef: OID.bool,
      attidentity: OID.char,
      attisdropped: OID.bool,
      attlen: OID.int2,
      attname: OID.name,
      attndims: OID.int4,
      attnotnull: OID.bool,
      attnum: OID.int2,
      attrelid: OID.oid,
      attstattarget: OID.int4,
      attstorage: OID.char,
      atttypid: OID.oid,
      atttypmod: OID.int4,
    },
    rows(snap) {
      const rows: RowObj[] = []
      const add = (attrelid: number, attnum: number, c: {name: string; notNull: boolean; type: number}): void => {
        rows.push({
          attacl: null,
          attcollation: collatable(c.type) ? 100 : 0,
          attcompression: '',
          attgenerated: '',
          atthasdef: false,
          attidentity: '',
          attisdropped: false,
          attlen: -1,
          attname: c.name,
          attndims: 0,
          attnotnull: c.notNull,
          attnum,
          attrelid,
          attstattarget: -1,
          attstorage: storageOf(c.type),
          atttypid: c.type,
          atttypmod: -1,
        })
      }
      for (const t of snap.tables) for (const [i, c] of t.columns.entries()) add(t.oid, i + 1, c)
      for (const ix of snap.indexes) {
        const c = ix.table.columns.find((x) => x.name === ix.field)
        add(ix.oid, 1, {name: ix.field, notNull: false, type: c?.type ?? OID.text})
      }
      return rows
    },
  },
  pg_class: {
    columns: {
      oid: OID.oid,
      relacl: TEXT_ARRAY,
      relallvisible: OID.int4,
      relam: OID.oid,
      relchecks: OID.int2,
      relfilenode: OID.oid,
      relforcerowsecurity: OID.bool,
      relhasindex: OID.bool,
      relhasrules: OID.bool,
      relhassubclass: OID.bool,
      relhastriggers: OID.bool,
      relispartition: OID.bool,
      relispopulated: OID.bool,
      relisshared: OID.bool,
      relkind: OID.char,
      relname: OID.name,
      relnamespace: OID.oid,
      relnatts: OID.int2,
      reloftype: OID.oid,
      reloptions: TEXT_ARRAY,
      relowner: OID.oid,
      relpages: OID.int4,
      relpartbound: OID.text,
      relpersistence: OID.char,
      relreplident: OID.char,
      relrowsecurity: OID.bool,
      reltablespace: OID.oid,
      reltoastrelid: OID.oid,
      reltuples: OID.float4,
      reltype: OID.oid,
    },
    rows(snap) {
      const base = {
        relacl: null,
        relallvisible: 0,
        relchecks: 0,
        relforcerowsecurity: false,
        relhasrules: false,
        relhassubclass: false,
        relhastriggers: false,
        relispartition: false,
        relispopulated: true,
        relisshared: false,
        reloftype: 0,
        reloptions: null,
        relowner: ROLE_OID,
        relpages: 0,
        relpartbound: null,
        relpersistence: 'p',
        relrowsecurity: false,
        reltablespace: 0,
        reltoastrelid: 0,
        reltype: 0,
      }
      const rows: RowObj[] = []
      for (const t of snap.tables) {
        rows.push({...base, oid: t.oid, relam: HEAP_AM, relfilenode: t.oid, relhasindex: true, relkind: 'r', relname: t.name, relnamespace: t.schema.oid, relnatts: t.columns.length, relreplident: 'd', reltuples: t.documents})
      }
      for (const ix of snap.indexes) {
        rows.push({...base, oid: ix.oid, relam: BTREE_AM, relfilenode: ix.oid, relhasindex: false, relkind: 'i', relname: ix.name, relnamespace: ix.schema.oid, relnatts: 1, relreplident: 'n', reltuples: ix.table.documents})
      }
      return rows
    },
  },
  pg_collation: {
    columns: {collcollate: OID.text, collctype: OID.text, collname: OID.name, collnamespace: OID.oid, collprovider: OID.char, oid: OID.oid},
    rows: () => [
      {collcollate: null, collctype: null, collname: 'default', collnamespace: 11, collprovider: 'd', oid: 100},
      {collcollate: 'C', collctype: 'C', collname: 'C', collnamespace: 11, collprovider: 'c', oid: 950},
    ],
  },
  pg_constraint: {
    columns: {
      condeferrable: OID.bool,
      condeferred: OID.bool,
      conindid: OID.oid,
      conkey: INT2_ARRAY,
      conname: OID.name,
      connamespace: OID.oid,
      conrelid: OID.oid,
      contype: OID.char,
      convalidated: OID.bool,
      oid: OID.oid,
    },
    rows(snap) {
      return snap.indexes
        .filter((ix) => ix.constraintOid !== undefined)
        .map((ix) => ({condeferrable: false, condeferred: false, conindid: ix.oid, conkey: null, conname: ix.name, connamespace: ix.schema.oid, conrelid: ix.table.oid, contype: 'p', convalidated: true, oid: ix.constraintOid}))
    },
  },
  pg_database: {
    columns: {
      datacl: TEXT_ARRAY,
      datallowconn: OID.bool,
      datcollate: OID.text,
      datctype: OID.text,
      datdba: OID.oid,
      daticulocale: OID.text,
      datistemplate: OID.bool,
      datlocprovider: OID.char,
      datname: OID.name,
      encoding: OID.int4,
      oid: OID.oid,
    },
    rows: (_snap, s) => [
      {datacl: null, datallowconn: true, datcollate: 'C.UTF-8', datctype: 'C.UTF-8', datdba: ROLE_OID, daticulocale: null, datistemplate: false, datlocprovider: 'c', datname: s.database, encoding: 6, oid: DATABASE_OID},
    ],
  },
  pg_description: empty({classoid: OID.oid, description: OID.text, objoid: OID.oid, objsubid: OID.int4}),
  pg_index: {
    columns: {
      indexrelid: OID.oid,
      indimmediate: OID.bool,
      indisclustered: OID.bool,
      indisexclusion: OID.bool,
      indislive: OID.bool,
      indisprimary: OID.bool,
      indisready: OID.bool,
      indisreplident: OID.bool,
      indisunique: OID.bool,
      indisvalid: OID.bool,
      // int2vector in PostgreSQL; an int2[] here, so `attnum = ANY(indkey)` works (text form {1}, not 1).
      indkey: INT2_ARRAY,
      indnatts: OID.int2,
      indnkeyatts: OID.int2,
      indnullsnotdistinct: OID.bool,
      indpred: OID.text,
      indrelid: OID.oid,
    },
    rows(snap) {
      return snap.indexes.map((ix) => ({
        indexrelid: ix.oid,
        indimmediate: true,
        indisclustered: false,
        indisexclusion: false,
        indislive: true,
        indisprimary: ix.primary,
        indisready: true,
        indisreplident: false,
        indisunique: ix.primary,
        indisvalid: true,
        indkey: new PgArray([ix.table.columns.findIndex((c) => c.name === ix.field) + 1], OID.int2),
        indnatts: 1,
        indnkeyatts: 1,
        indnullsnotdistinct: false,
        indpred: null,
        indrelid: ix.table.oid,
      }))
    },
  },
  pg_indexes: {
    columns: {indexdef: OID.text, indexname: OID.name, schemaname: OID.name, tablename: OID.name, tablespace: OID.name},
    rows: (snap) => snap.indexes.map((ix) => ({indexdef: indexDef(ix), indexname: ix.name, schemaname: ix.schema.name, tablename: ix.table.name, tablespace: null})),
  },
  pg_inherits: empty({inhdetachpending: OID.bool, inhparent: OID.oid, inhrelid: OID.oid, inhseqno: OID.int4}),
  pg_namespace: {
    columns: {nspacl: TEXT_ARRAY, nspname: OID.name, nspowner: OID.oid, oid: OID.oid},
    rows: (snap) => snap.schemas.map((n) => ({nspacl: null, nspname: n.name, nspowner: n.owner, oid: n.oid})),
  },
  pg_policy: empty({oid: OID.oid, polcmd: OID.char, polname: OID.name, polpermissive: OID.bool, polqual: OID.text, polrelid: OID.oid, polroles: OID_ARRAY, polwithcheck: OID.text}),
  pg_publication: empty({oid: OID.oid, puballtables: OID.bool, pubname: OID.name}),
  pg_publication_namespace: empty({oid: OID.oid, pnnspid: OID.oid, pnpubid: OID.oid}),
  pg_publication_rel: empty({oid: OID.oid, prattrs: OID.text, prpubid: OID.oid, prqual: OID.text, prrelid: OID.oid}),
  pg_roles: {
    columns: {
      oid: OID.oid,
      rolbypassrls: OID.bool,
      rolcanlogin: OID.bool,
      rolconfig: TEXT_ARRAY,
      rolconnlimit: OID.int4,
      rolcreatedb: OID.bool,
      rolcreaterole: OID.bool,
      rolinherit: OID.bool,
      rolname: OID.name,
      rolreplication: OID.bool,
      rolsuper: OID.bool,
      rolvaliduntil: OID.timestamptz,
    },
    rows: (snap) => [
      {
        oid: ROLE_OID,
        rolbypassrls: true,
        rolcanlogin: true,
        rolconfig: null,
        rolconnlimit: -1,
        rolcreatedb: true,
        rolcreaterole: true,
        rolinherit: true,
        rolname: snap.user,
        rolreplication: true,
        rolsuper: true,
        rolvaliduntil: null,
      },
    ],
  },
  pg_rewrite: empty({ev_class: OID.oid, oid: OID.oid, rulename: OID.name}),
  pg_settings: {
    columns: {context: OID.text, name: OID.text, setting: OID.text, short_desc: OID.text, source: OID.text, unit: OID.text, vartype: OID.text},
    rows: (_snap, s) => [...settingsOf(s)].map(([name, setting]) => ({context: 'user', name, setting, short_desc: null, source: 'default', unit: null, vartype: 'string'})),
  },
  pg_statistic_ext: empty({oid: OID.oid, stxkind: TEXT_ARRAY, stxname: OID.name, stxnamespace: OID.oid, stxrelid: OID.oid, stxstattarget: OID.int4}),
  pg_tables: {
    columns: {hasindexes: OID.bool, hasrules: OID.bool, hastriggers: OID.bool, rowsecurity: OID.bool, schemaname: OID.name, tablename: OID.name, tableowner: OID.name, tablespace: OID.name},
    rows: (snap) =>
      snap.tables.map((t) => ({hasindexes: true, hasrules: false, hastriggers: false, rowsecurity: false, schemaname: t.schema.name, tablename: t.name, tableowner: snap.user, tablespace: null})),
  },
  pg_trigger: empty({oid: OID.oid, tgenabled: OID.char, tgisinternal: OID.bool, tgname: OID.name, tgrelid: OID.oid}),
  pg_type: {
    columns: {oid: OID.oid, typarray: OID.oid, typbasetype: OID.oid, typcollation: OID.oid, typelem: OID.oid, typname: OID.name, typnamespace: OID.oid, typnotnull: OID.bool, typowner: OID.oid, typrelid: OID.oid, typtype: OID.char},
    rows: () =>
      Object.entries(OID).map(([typname, oid]) => ({
        oid,
        typarray: 0,
        typbasetype: 0,
        typcollation: collatable(oid) ? 100 : 0,
        typelem: 0,
        typname,
        typnamespace: 11,
        typnotnull: false,
        typowner: ROLE_OID,
        typrelid: 0,
        typtype: 'b',
      })),
  },
  pg_user: {
    columns: {usecreatedb: OID.bool, usename: OID.name, usesuper: OID.bool, usesysid: OID.oid},
    rows: (snap) => [{usecreatedb: true, usename: snap.user, usesuper: true, usesysid: ROLE_OID}],
  },
}

/** information_schema's character data is varchar; its identifiers are `sql_identifier` (name). */
const INFORMATION_SCHEMA: Record<string, SystemTable> = {
  columns: {
    columns: {
      character_maximum_length: OID.int4,
      column_default: OID.varchar,
      column_name: OID.name,
      data_type: OID.varchar,
      is_nullable: OID.varchar,
      ordinal_position: OID.int4,
      table_catalog: OID.name,
      table_name: OID.name,
      table_schema: OID.name,
      udt_name: OID.name,
    },
    rows(snap, s) {
      const rows: RowObj[] = []
      for (const t of snap.tables) {
        for (const [i, c] of t.columns.entries()) {
          rows.push({
            character_maximum_length: null,
            column_default: null,
            column_name: c.name,
            data_type: typeName(c.type),
            is_nullable: c.notNull ? 'NO' : 'YES',
            ordinal_position: i + 1,
            table_catalog: s.database,
            table_name: t.name,
            table_schema: t.schema.name,
            udt_name: Object.entries(OID).find(([, o]) => o === c.type)?.[0] ?? 'text',
          })
        }
      }
      return rows
    },
  },
  key_column_usage: {
    columns: {column_name: OID.name, constraint_name: OID.name, constraint_schema: OID.name, ordinal_position: OID.int4, table_name: OID.name, table_schema: OID.name},
    rows: (snap) =>
      snap.indexes
        .filter((ix) => ix.primary)
        .map((ix) => ({column_name: ix.field, constraint_name: ix.name, constraint_schema: ix.schema.name, ordinal_position: 1, table_name: ix.table.name, table_schema: ix.schema.name})),
  },
  schemata: {
    columns: {catalog_name: OID.name, schema_name: OID.name, schema_owner: OID.name},
    rows: (snap, s) => snap.schemas.map((n) => ({catalog_name: s.database, schema_name: n.name, schema_owner: n.owner === DATABASE_OWNER_OID ? 'pg_database_owner' : snap.user})),
  },
  table_constraints: {
    columns: {constraint_name: OID.name, constraint_schema: OID.name, constraint_type: OID.varchar, table_name: OID.name, table_schema: OID.name},
    rows: (snap) =>
      snap.indexes
        .filter((ix) => ix.primary)
        .map((ix) => ({constraint_name: ix.name, constraint_schema: ix.schema.name, constraint_type: 'PRIMARY KEY', table_name: ix.table.name, table_schema: ix.schema.name})),
  },
  tables: {
    columns: {table_catalog: OID.name, table_name: OID.name, table_schema: OID.name, table_type: OID.varchar},
    rows: (snap, s) => snap.tables.map((t) => ({table_catalog: s.database, table_name: t.name, table_schema: t.schema.name, table_type: 'BASE TABLE'})),
  },
}

/**
 * Catalogs of objects svc never has (functions, extensions, tablespaces, operators, text search
 * configurations, foreign servers, subscriptions, ...): always empty, and without a fixed column
 * list, so each psql command over them (`\df`, `\dx`, `\db`, `\dL`, ...) lists nothing.
 */
const ALWAYS_EMPTY = new Set([
  'pg_amop',
  'pg_amproc',
  'pg_auth_members',
  'pg_cast',
  'pg_conversion',
  'pg_db_role_setting',
  'pg_default_acl',
  'pg_enum',
  'pg_event_trigger',
  'pg_extension',
  'pg_foreign_data_wrapper',
  'pg_foreign_server',
  'pg_foreign_table',
  'pg_init_privs',
  'pg_language',
  'pg_largeobject_metadata',
  'pg_matviews',
  'pg_opclass',
  'pg_operator',
  'pg_opfamily',
  'pg_partitioned_table',
  'pg_proc',
  'pg_range',
  'pg_seclabel',
  'pg_sequence',
  'pg_sequences',
  'pg_shdescription',
  'pg_subscription',
  'pg_tablespace',
  'pg_ts_config',
  'pg_ts_dict',
  'pg_ts_parser',
  'pg_ts_template',
  'pg_user_mappings',
  'pg_views',
])

const SCHEMAS: Record<string, Record<string, SystemTable>> = {information_schema: INFORMATION_SCHEMA, pg_catalog: PG_CATALOG}

/** Whether an unqualified name is a system table (pg_catalog is searched first, as in PostgreSQL). */
export function isSystemTable(name: string): boolean {
  return name in PG_CATALOG || name in INFORMATION_SCHEMA || ALWAYS_EMPTY.has(name)
}

/** Reads a system table: `schema` is pg_catalog or information_schema, or undefined for an unqualified name. */
export async function systemTable(s: PgSession, schema: string | undefined, table: string, alias: string): Promise<Source> {
  if (ALWAYS_EMPTY.has(table) && schema !== 'information_schema') return {alias, rows: []}
  const def = schema ? SCHEMAS[schema]?.[table] : (PG_CATALOG[table] ?? INFORMATION_SCHEMA[table])
  if (!def) throw new SqlError('42P01', `relation "${schema ? `${schema}.` : ''}${table}" does not exist`)
  const snap = await catalogSnapshot(s)
  const columns: Column[] = Object.entries(def.columns).map(([name, oid]) => ({name, oid}))
  return {alias, columns, declared: columns.map((c) => c.name), rows: def.rows(snap, s)}
}
