/**
 * Opening the SQLite files of derived data (the full-text index, the history index). Git holds the
 * documents, so these files may lose their last transactions in a crash but never their
 * consistency: WAL journal with synchronous=NORMAL, and the catch-up against the branch's ref at
 * the next start redoes what is missing.
 */
import {mkdirSync} from 'node:fs'
import {dirname} from 'node:path'

import Database from 'better-sqlite3'

export interface DerivedSqliteOptions {
  /** Page cache in KiB (SQLite's default is 2 MB). */
  cacheKiB?: number
  /** The `code` of the error thrown for a file of another format. */
  formatCode: string
  /** This version's format, kept in the `meta` table's `format` row. */
  formatVersion: string
  /** Whether a file with no format row is new (and gets this version's) rather than foreign. */
  isNew?: (db: Database.Database) => boolean
  /** `CREATE ... IF NOT EXISTS` statements; must create `meta(key TEXT PRIMARY KEY, value TEXT)`. */
  schema: string
  /** What the file is, for the error message ("index", "history index"). */
  what: string
}

/**
 * Opens the file (creating it and its folder when missing), applies the schema and checks the
 * format; then `prepare` runs on the open database. Whatever throws on the way closes the file
 * before the error reaches the caller, who rebuilds the index from Git.
 */
export function openDerivedSqlite<T>(file: string, o: DerivedSqliteOptions, prepare: (db: Database.Database) => T): {db: Database.Database; prepared: T} {
  mkdirSync(dirname(file), {recursive: true})
  const db = new Database(file)
  try {
    db.pragma('journal_mode = WAL')
    db.pragma('synchronous = NORMAL')
    if (o.cacheKiB !== undefined) db.pragma(`cache_size = -${o.cacheKiB}`)
    db.exec(o.schema)
    const format = db.prepare(`SELECT value FROM meta WHERE key = 'format'`).pluck().get() as string | undefined
    if (format === undefined && (o.isNew?.(db) ?? true)) db.prepare(`INSERT OR REPLACE INTO meta(key, value) VALUES ('format', ?)`).run(o.formatVersion)
    else if (format !== o.formatVersion) throw Object.assign(new Error(`${o.what} format ${format}, this version reads ${o.formatVersion}`), {code: o.formatCode})
    return {db, prepared: prepare(db)}
  } catch (error) {
    db.close()
    throw error
  }
}
