/**
 * svc's schema catalog, one home for `pg_catalog` and `information_schema`: the system tables
 * (system-tables.ts) generated from the statement's catalog snapshot (catalog-snapshot.ts), read
 * by the ordinary executor, and the catalog functions psql and drivers call
 * (catalog-functions.ts). No statement is routed by its text: psql's backslash commands are
 * parsed, planned and executed like any query. The one exception is the text rewrite below.
 */
export {oidOf} from './catalog-snapshot.js'
export {isSystemTable, systemTable} from './system-tables.js'

const DEFAULT_COLLATION = /^\s+collate\s+pg_catalog\.(?:default|"default")(?![\w$])/i

/**
 * The last-resort rewrite of SQL text before parsing, for two spellings psql 15's backslash
 * commands send that pgsql-ast-parser does not parse (each a no-op in meaning):
 * - `COLLATE pg_catalog.default`, which psql appends to every name pattern (`\d name`,
 *   `\dt pat*`, `\dn pat`): pgsql-ast-parser parses no COLLATE clause, and the default collation
 *   is what svc compares with anyway. Any other COLLATE still fails to parse.
 * - the empty escape string `E''` (`\dp`), which is `''`.
 * Literals, quoted identifiers and comments are left untouched.
 */
export function rewriteForParser(sql: string): string {
  if (!/collate|e''/i.test(sql)) return sql
  let out = ''
  let i = 0
  let from = 0
  while (i < sql.length) {
    const c = sql[i]
    if (c === "'") {
      const escapes = /[eE]/.test(sql[i - 1] ?? '') && !/[\w$]/.test(sql[i - 2] ?? '')
      if (escapes && sql[i + 1] === "'" && sql[i + 2] !== "'") {
        out += `${sql.slice(from, i - 1)}''`
        i += 2
        from = i
        continue
      }
      i++
      while (i < sql.length) {
        if (escapes && sql[i] === '\\') i += 2
        else if (sql[i] === "'" && sql[i + 1] === "'") i += 2
        else if (sql[i] === "'") break
        else i++
      }
      i++
    } else if (c === '"') {
      const e = sql.indexOf('"', i + 1)
      i = e < 0 ? sql.length : e + 1
    } else if (c === '-' && sql[i + 1] === '-') {
      const e = sql.indexOf('\n', i)
      i = e < 0 ? sql.length : e + 1
    } else if (c === '/' && sql[i + 1] === '*') {
      const e = sql.indexOf('*/', i + 2)
      i = e < 0 ? sql.length : e + 2
    } else if (c === '$' && !/[\w$]/.test(sql[i - 1] ?? '')) {
      const tag = /^\$(?:[A-Za-z_]\w*)?\$/.exec(sql.slice(i))?.[0]
      if (tag) {
        const e = sql.indexOf(tag, i + tag.length)
        i = e < 0 ? sql.length : e + tag.length
      } else i++
    } else if (/\s/.test(c)) {
      const m = DEFAULT_COLLATION.exec(sql.slice(i, i + 64))
      if (m) {
        out += sql.slice(from, i)
        i += m[0].length
        from = i
      } else i++
    } else i++
  }
  return from === 0 ? sql : out + sql.slice(from)
}
