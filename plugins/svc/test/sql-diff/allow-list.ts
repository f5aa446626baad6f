/**
 * Known differences between svc and PostgreSQL 15 in the differential suite: statement -> reason.
 * Every reason is explained in docs/svc-sql.md ("Known differences from PostgreSQL"); the suite
 * fails on a difference not listed here and on a listed statement that no longer differs.
 */
export const REASONS: Record<string, string> = {
  'values-in-expression': 'the SQL parser (pgsql-ast-parser) has no grammar for VALUES as a subquery inside an expression (42601)',
  'server-version': 'svc reports PostgreSQL 15.0, the peer its own minor release',
  'storage-size': 'tables are documents in Git: \\dt+ shows the access method git and the number of documents as Size, \\di+ no size',
}

export const KNOWN: Record<string, string> = {
  'SELECT id FROM people WHERE id IN (VALUES (1), (3)) ORDER BY id': 'values-in-expression',
  'SELECT (VALUES (7))': 'values-in-expression',
  'SHOW server_version_num': 'server-version',
  'psql: \\dt+': 'storage-size',
  'psql: \\di+': 'storage-size',
}
