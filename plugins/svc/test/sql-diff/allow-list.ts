/**
 * Known differences between svc and PostgreSQL 15 in the differential suite: statement -> reason.
 * Every reason is explained in docs/svc-sql.md ("Known differences from PostgreSQL"); the suite
 * fails on a difference not listed here and on a listed statement that no longer differs.
 */
export const REASONS: Record<string, string> = {
  'values-in-expression': 'the SQL parser (pgsql-ast-parser) has no grammar for VALUES as a subquery inside an expression (42601)',
  'server-version': 'svc reports PostgreSQL 15.0, the peer its own minor release',
  'select-list-records': 'a set-returning function of several columns (jsonb_each) in the select list returns a record; svc has no record type and answers 0A000',
  'nested-set-functions': 'a set-returning call inside the arguments of another in the select list is 0A000 in svc',
  'infinite-age': "age() of an infinite timestamp: PostgreSQL 15 computes calendar fields of its sentinel value (292253 years ...); svc answers 22008 timestamp out of range",
  'time-types': 'the time and timetz types are not implemented: casts to them and columns of them are 0A000',
  'storage-size': 'tables are documents in Git, not relation files: \\dt+ and \\di+ show no Size (pg_table_size is NULL)',
}

export const KNOWN: Record<string, string> = {
  'SELECT id FROM people WHERE id IN (VALUES (1), (3)) ORDER BY id': 'values-in-expression',
  'SELECT (VALUES (7))': 'values-in-expression',
  'SHOW server_version_num': 'server-version',
  "SELECT jsonb_each('{\"a\": 1}')": 'select-list-records',
  'SELECT generate_series(1, generate_series(1, 2))': 'nested-set-functions',
  "SELECT age('infinity'::timestamp, timestamp '2024-01-01')": 'infinite-age',
  "SELECT '1:2'::time": 'time-types',
  'SELECT now()::time IS NOT NULL': 'time-types',
  "SELECT time with time zone '10:00+02'": 'time-types',
  'psql: \\dt+': 'storage-size',
  'psql: \\di+': 'storage-size',
}
