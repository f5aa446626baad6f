/**
 * Known differences between svc and PostgreSQL 15 in the differential suite: statement -> reason.
 * Every reason is explained in docs/svc-sql.md ("Known differences from PostgreSQL"); the suite
 * fails on a difference not listed here and on a listed statement that no longer differs.
 */
export const REASONS: Record<string, string> = {
  'no-subqueries': 'subqueries and VALUES in FROM are outside the subset (0A000)',
  'server-version': 'svc reports PostgreSQL 15.0, the peer its own minor release',
  'storage-size': 'tables are documents in Git: \\dt+ shows the access method git and the number of documents as Size, \\di+ no size',
}

export const KNOWN: Record<string, string> = {
  'SELECT VALUES_TEST FROM (VALUES (1)) AS t(VALUES_TEST)': 'no-subqueries',
  "SELECT string_agg(name, ',') FROM (SELECT name FROM people ORDER BY id) s": 'no-subqueries',
  'SHOW server_version_num': 'server-version',
  'psql: \\dt+': 'storage-size',
  'psql: \\di+': 'storage-size',
}
