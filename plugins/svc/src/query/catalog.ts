/**
 * svc's system catalog, in one place: the information_schema and pg_catalog tables that
 * statements read (`virtualTable`), and the catalog queries psql sends for `\d`, `\dt`, `\d table` (and similar client
 * introspection). svc has no relational catalog, so these queries are recognised by shape and
 * answered from the engine's tables and their declared or inferred columns. Any other catalog
 * query that the executor cannot run gets an empty result with the columns it asked for, so
 * clients degrade to "nothing found" instead of failing.
 */
import type {RowObj} from './eval.js'
import {branchOf, currentSchema, type PgSession, type QueryResult, type Source, tableColumns, tableDef, tableNames} from './executor.js'
import {SqlError} from './errors.js'
import {OID, typeName} from './types.js'

export function oidOf(branch: string, table: string): number {
  let h = 0x81_1c_9d_c5
  for (const ch of `${branch}.${table}`) {
    h ^= ch.codePointAt(0) as number
    h = Math.imul(h, 0x01_00_01_93) >>> 0
  }
  return 16_384 + (h % 1_000_000_000)
}

async function schemasToSearch(s: PgSession, sql: string): Promise<string[]> {
  const m = /n\.nspname OPERATOR\(pg_catalog\.~\) '([^']*)'/.exec(sql)
  if (!m) return [currentSchema(s)]
  const re = toRegExp(m[1])
  const all = ['public', ...(await s.engine.branches()).map((b) => b.name).filter((n) => n !== 'main')]
  return all.filter((n) => re.test(n))
}

function toRegExp(pgRe: string): RegExp {
  try {
    return new RegExp(pgRe.replaceAll("''", "'"))
  } catch {
    return /^$/
  }
}

function relnameFilter(sql: string): RegExp | undefined {
  const m = /c\.relname OPERATOR\(pg_catalog\.~\) '([^']*)'/.exec(sql)
  return m ? toRegExp(m[1]) : undefined
}

/** Splits the top-level select list of a query into its items. */
export function selectItems(sql: string): string[] {
  const items: string[] = []
  let depth = 0
  let cur = ''
  let started = false
  let i = 0
  const lower = sql.toLowerCase()
  while (i < sql.length) {
    const c = sql[i]
    if (c === "'") {
      const e = sql.indexOf("'", i + 1)
      const end = e < 0 ? sql.length : e + 1
      cur += sql.slice(i, end)
      i = end
      continue
    }
    if (c === '"') {
      const e = sql.indexOf('"', i + 1)
      const end = e < 0 ? sql.length : e + 1
      cur += sql.slice(i, end)
      i = end
      continue
    }
    if (depth === 0 && /\s|^/.test(sql[i - 1] ?? ' ')) {
      if (!started && lower.startsWith('select', i)) {
        started = true
        i += 6
        continue
      }
      if (started && lower.startsWith('from', i) && /\s/.test(sql[i + 4] ?? ' ')) break
    }
    if (c === '(') depth++
    if (c === ')') depth--
    if (c === ',' && depth === 0 && started) {
      items.push(cur.trim())
      cur = ''
    } else if (started) cur += c
    i++
  }
  if (cur.trim()) items.push(cur.trim())
  return items
}

export function itemName(item: string): string {
  const quoted = /\bas\s+"([^"]+)"\s*$/i.exec(item)
  if (quoted) return quoted[1]
  const plain = /\bas\s+(\w+)\s*$/i.exec(item)
  if (plain) return plain[1]
  const ref = /(?:^|\.)(\w+)\s*$/.exec(item)
  if (ref) return ref[1]
  const fn = /(\w+)\s*\(/.exec(item)
  return fn ? fn[1] : '?column?'
}

function result(names: string[], rows: unknown[][]): QueryResult {
  return {columns: names.map((name) => ({name, oid: OID.text})), rows, tag: `SELECT ${rows.length}`}
}

async function findTable(s: PgSession, oid: number): Promise<undefined | {branch: string; schema: string; table: string}> {
  const schemas = ['public', ...(await s.engine.branches()).map((b) => b.name).filter((n) => n !== 'main')]
  for (const schema of schemas) {
    const branch = branchOf(s, schema)
    for (const t of await tableNames(s, branch)) if (oidOf(branch, t) === oid) return {branch, schema, table: t}
  }
  return undefined
}

export async function catalogQuery(s: PgSession, sql: string): Promise<QueryResult | undefined> {
  if (!/pg_catalog\.|information_schema\.|\bpg_class\b/i.test(sql)) return undefined
  const items = selectItems(sql)
  const names = items.map(itemName)

  // \dt, \d, \dt+ : the list of relations.
  if (/FROM pg_catalog\.pg_class c\s+LEFT JOIN pg_catalog\.pg_namespace n ON n\.oid = c\.relnamespace/.test(sql) && /as "Name"/i.test(sql)) {
    const kinds = /c\.relkind IN \(([^)]*)\)/.exec(sql)?.[1] ?? "'r'"
    const re = relnameFilter(sql)
    const rows: unknown[][] = []
    if (kinds.includes("'i'")) rows.push(...(await indexRows(s, sql, names, re)))
    if (!kinds.includes("'r'")) {
      rows.sort((a, b) => String(a[0]).localeCompare(String(b[0])) || String(a[1]).localeCompare(String(b[1])))
      return result(names, rows)
    }
    for (const schema of await schemasToSearch(s, sql)) {
      const branch = branchOf(s, schema)
      for (const t of await tableNames(s, branch)) {
        if (re && !re.test(t)) continue
        const n = await s.engine.count({branch, table: t})
        rows.push(
          names.map((col) => {
            switch (col) {
              case 'Schema': {
                return schema
              }
              case 'Name': {
                return t
              }
              case 'Type': {
                return 'table'
              }
              case 'Owner': {
                return s.user
              }
              case 'Persistence': {
                return 'permanent'
              }
              case 'Access method': {
                return 'git'
              }
              case 'Size': {
                return `${n} documents`
              }
              case 'Description': {
                return null
              }
              default: {
                return null
              }
            }
          }),
        )
      }
    }
    rows.sort((a, b) => String(a[0]).localeCompare(String(b[0])) || String(a[1]).localeCompare(String(b[1])))
    return result(names, rows)
  }

  // \l: the list of databases (any name reaches the same data; show the one in use).
  if (/FROM pg_catalog\.pg_database d/.test(sql) && /as "Name"/i.test(sql)) {
    const values: Record<string, unknown> = {
      Collate: 'C.UTF-8',
      Ctype: 'C.UTF-8',
      Encoding: 'UTF8',
      'Locale Provider': 'libc',
      Name: s.database,
      Owner: s.user,
    }
    return result(names, [names.map((n) => values[n] ?? null)])
  }

  // \d name: find the relation's oid.
  if (/^\s*SELECT c\.oid,\s*n\.nspname,\s*c\.relname\s+FROM pg_catalog\.pg_class c/i.test(sql)) {
    const re = relnameFilter(sql)
    const rows: unknown[][] = []
    for (const schema of await schemasToSearch(s, sql)) {
      const branch = branchOf(s, schema)
      for (const t of await tableNames(s, branch)) if (!re || re.test(t)) rows.push([String(oidOf(branch, t)), schema, t])
    }
    return result(names, rows)
  }

  const oidMatch = /(?:c\.oid|a\.attrelid|attrelid|indrelid|conrelid|polrelid|stxrelid|inhrelid|inhparent|pc\.oid|prrelid)\s*=\s*'(\d+)'/.exec(sql)
  const target = oidMatch ? await findTable(s, Number(oidMatch[1])) : undefined

  // \d name: the relation's properties.
  if (/SELECT c\.relchecks, c\.relkind/.test(sql)) {
    if (!target) return result(names, [])
    return result(names, [
      items.map((it) => {
        if (/relkind/.test(it)) return 'r'
        if (/relhasindex/.test(it)) return 't'
        if (/relchecks|reltablespace/.test(it)) return '0'
        if (/relpersistence/.test(it)) return 'p'
        if (/relreplident/.test(it)) return 'd'
        if (/amname/.test(it)) return 'heap'
        if (/^''$|reloftype|reloptions/.test(it)) return ''
        return 'f'
      }),
    ])
  }

  // \d name: the columns.
  if (/FROM pg_catalog\.pg_attribute a\s+WHERE a\.attrelid = '\d+' AND a\.attnum > 0/.test(sql)) {
    if (!target) return result(names, [])
    const cols = await tableColumns(s, target.branch, target.table)
    const notNull = await notNullColumns(s, target.branch, target.table)
    return result(
      names,
      cols.map((c) =>
        items.map((it) => {
          if (/^a\.attname$/.test(it)) return c.name
          if (/format_type/.test(it)) return typeName(c.oid)
          if (/attnotnull/.test(it)) return notNull.has(c.name) ? 't' : 'f'
          if (/attidentity|attgenerated|attcompression/.test(it)) return ''
          if (/attstorage/.test(it)) return storageOf(c.oid)
          // psql 15 shows the default statistics target (-1) as an empty cell.
          if (/attstattarget/.test(it)) return /CASE WHEN/i.test(it) ? null : '-1'
          return null
        }),
      ),
    )
  }

  // \d name: indexes (the id is the primary key).
  if (/FROM pg_catalog\.pg_class c, pg_catalog\.pg_class c2, pg_catalog\.pg_index i/.test(sql)) {
    if (!target) return result(names, [])
    const t = target.table
    return result(names, [
      items.map((it) => {
        if (/c2\.relname/.test(it)) return `${t}_pkey`
        if (/indisprimary|indisunique|indisvalid/.test(it)) return 't'
        if (/pg_get_indexdef/.test(it)) return `CREATE UNIQUE INDEX ${t}_pkey ON ${target.schema}.${t} USING btree (id)`
        if (/pg_get_constraintdef/.test(it)) return 'PRIMARY KEY (id)'
        if (/^contype$/.test(it)) return 'p'
        if (/reltablespace/.test(it)) return '0'
        return 'f'
      }),
      // Secondary indexes: plain (non-constraint) btree indexes to psql.
      ...(await s.engine.indexes({branch: target.branch, table: t}).catch(() => [])).map((ix) =>
        items.map((it) => {
          if (/c2\.relname/.test(it)) return ix.name
          if (/indisvalid/.test(it)) return 't'
          if (/pg_get_indexdef/.test(it)) return `CREATE INDEX ${ix.name} ON ${target.schema}.${t} USING btree (${ix.field})`
          if (/pg_get_constraintdef|^contype$/.test(it)) return null
          if (/reltablespace/.test(it)) return '0'
          return 'f'
        }),
      ),
    ])
  }
  return undefined
}

/** Columns that are NOT NULL: the id (the primary key) and those CREATE TABLE declared NOT NULL. */
async function notNullColumns(s: PgSession, branch: string, table: string): Promise<Set<string>> {
  const def = await tableDef(s, branch, table).catch(() => undefined)
  return new Set(['id', ...(def?.columns ?? []).filter((c) => c.notNull).map((c) => c.name)])
}

/** The indexes of every table: `<table>_pkey` on the id, and the secondary indexes. */
async function allIndexes(s: PgSession, branch: string): Promise<Array<{field: string; name: string; primary: boolean; table: string}>> {
  const out: Array<{field: string; name: string; primary: boolean; table: string}> = []
  for (const t of await tableNames(s, branch)) {
    out.push({field: 'id', name: `${t}_pkey`, primary: true, table: t})
    for (const ix of await s.engine.indexes({branch, table: t}).catch(() => [])) out.push({field: ix.field, name: ix.name, primary: false, table: t})
  }
  return out
}

/** psql's \di rows. */
async function indexRows(s: PgSession, sql: string, names: string[], re: RegExp | undefined): Promise<unknown[][]> {
  const rows: unknown[][] = []
  for (const schema of await schemasToSearch(s, sql)) {
    for (const ix of await allIndexes(s, branchOf(s, schema))) {
      if (re && !re.test(ix.name)) continue
      const values: Record<string, unknown> = {'Access method': 'btree', Name: ix.name, Owner: s.user, Persistence: 'permanent', Schema: schema, Table: ix.table, Type: 'index'}
      rows.push(names.map((n) => values[n] ?? null))
    }
  }
  return rows
}

/** The empty answer for a catalog query nothing else could run. */
export function emptyCatalogResult(sql: string): QueryResult | undefined {
  if (!/pg_catalog\.|information_schema\.|\bpg_\w+\b/i.test(sql) || !/^\s*select\b/i.test(sql)) return undefined
  return result(selectItems(sql).map(itemName), [])
}

// ---------------------------------------------------------------------------------------
// information_schema and pg_catalog tables read by ordinary statements

const VIRTUAL = new Set(['tables', 'columns', 'pg_tables', 'pg_namespace', 'pg_database', 'schemata', 'pg_settings', 'pg_type', 'pg_roles', 'pg_user', 'pg_class', 'pg_attribute', 'pg_index', 'pg_indexes'])

/** Column types of the catalog tables, as PostgreSQL declares them (names are `name`, information_schema text is varchar). */
const CATALOG_OIDS: Record<string, Record<string, number>> = {
  columns: {column_name: OID.name, data_type: OID.varchar, is_nullable: OID.varchar, ordinal_position: OID.int4, table_catalog: OID.name, table_name: OID.name, table_schema: OID.name},
  pg_attribute: {attname: OID.name, attnotnull: OID.bool, attnum: OID.int2, attrelid: OID.oid, atttypid: OID.oid},
  pg_class: {oid: OID.oid, relkind: OID.char, relname: OID.name, relnamespace: OID.oid},
  pg_index: {indexrelid: OID.oid, indisprimary: OID.bool, indisunique: OID.bool, indrelid: OID.oid},
  pg_indexes: {indexdef: OID.text, indexname: OID.name, schemaname: OID.name, tablename: OID.name, tablespace: OID.name},
  pg_namespace: {nspname: OID.name, nspowner: OID.oid, oid: OID.oid, schema_name: OID.name},
  pg_tables: {hasindexes: OID.bool, schemaname: OID.name, tablename: OID.name, tableowner: OID.name},
  pg_type: {oid: OID.oid, typname: OID.name},
  schemata: {nspname: OID.name, oid: OID.oid, schema_name: OID.name},
  tables: {table_catalog: OID.name, table_name: OID.name, table_schema: OID.name, table_type: OID.varchar},
}

export function isVirtualTable(name: string): boolean {
  return VIRTUAL.has(name)
}

/** Rows of an information_schema or pg_catalog table. */
export async function virtualTable(s: PgSession, table: string, alias: string): Promise<Source> {
  const branch = branchOf(s)
  const schema = currentSchema(s)
  const names = await tableNames(s, branch)
  const rows: RowObj[] = []
  switch (table) {
    case 'tables': {
      for (const t of names) rows.push({table_catalog: s.database, table_name: t, table_schema: schema, table_type: 'BASE TABLE'})
      break
    }
    case 'pg_tables': {
      for (const t of names) rows.push({hasindexes: true, schemaname: schema, tablename: t, tableowner: s.user})
      break
    }
    case 'columns': {
      for (const t of names) {
        const notNull = await notNullColumns(s, branch, t)
        for (const [i, c] of (await tableColumns(s, branch, t)).entries()) {
          rows.push({
            column_name: c.name,
            data_type: c.oid === OID.text ? 'text' : typeName(c.oid),
            is_nullable: notNull.has(c.name) ? 'NO' : 'YES',
            ordinal_position: i + 1,
            table_catalog: s.database,
            table_name: t,
            table_schema: schema,
          })
        }
      }
      break
    }
    case 'schemata':
    case 'pg_namespace': {
      const branches = await s.engine.branches()
      // public belongs to pg_database_owner (oid 6171), as in a new PostgreSQL 15 database.
      rows.push({nspname: 'public', nspowner: 6171, oid: 2200, schema_name: 'public'})
      for (const b of branches) if (b.name !== 'main') rows.push({nspname: b.name, nspowner: 10, oid: 0, schema_name: b.name})
      rows.push({nspname: 'pg_catalog', oid: 11, schema_name: 'pg_catalog'}, {nspname: 'information_schema', oid: 13, schema_name: 'information_schema'})
      break
    }
    case 'pg_database': {
      rows.push({datname: s.database, oid: 16_384})
      break
    }
    case 'pg_roles':
    case 'pg_user': {
      rows.push({rolname: s.user, rolsuper: true, usename: s.user})
      break
    }
    case 'pg_settings': {
      for (const [name, setting] of s.settings) rows.push({name, setting})
      break
    }
    case 'pg_type': {
      for (const [typname, oid] of Object.entries(OID)) rows.push({oid, typname})
      break
    }
    case 'pg_class': {
      for (const t of names) rows.push({oid: oidOf(branch, t), relkind: 'r', relname: t, relnamespace: 2200})
      for (const ix of await allIndexes(s, branch)) rows.push({oid: oidOf(branch, ix.name), relkind: 'i', relname: ix.name, relnamespace: 2200})
      break
    }
    case 'pg_attribute': {
      for (const t of names) {
        const notNull = await notNullColumns(s, branch, t)
        for (const [i, c] of (await tableColumns(s, branch, t)).entries()) {
          rows.push({attname: c.name, attnotnull: notNull.has(c.name), attnum: i + 1, attrelid: oidOf(branch, t), atttypid: c.oid})
        }
      }
      break
    }
    case 'pg_index': {
      for (const ix of await allIndexes(s, branch)) {
        rows.push({indexrelid: oidOf(branch, ix.name), indisprimary: ix.primary, indisunique: ix.primary, indrelid: oidOf(branch, ix.table)})
      }
      break
    }
    case 'pg_indexes': {
      for (const ix of await allIndexes(s, branch)) {
        const indexdef = `CREATE ${ix.primary ? 'UNIQUE ' : ''}INDEX ${ix.name} ON ${schema}.${ix.table} USING btree (${ix.field})`
        rows.push({indexdef, indexname: ix.name, schemaname: schema, tablename: ix.table, tablespace: null})
      }
      break
    }
    default: {
      throw new SqlError('42P01', `relation "${table}" does not exist`)
    }
  }
  const oids = CATALOG_OIDS[table]
  return {alias, columns: oids ? Object.entries(oids).map(([name, oid]) => ({name, oid})) : undefined, rows}
}


/** A column type's TOAST storage as PostgreSQL declares it (pg_type.typstorage): plain, main (numeric) or extended. */
function storageOf(oid: number): string {
  if (oid === OID.numeric) return 'm'
  const plain = new Set<number>([OID.bool, OID.int2, OID.int4, OID.int8, OID.float4, OID.float8, OID.date, OID.timestamp, OID.timestamptz, OID.interval, OID.uuid, OID.oid, OID.name, OID.char])
  return plain.has(oid) ? 'p' : 'x'
}
