/**
 * Known differences between svc and PostgreSQL 15 in the differential suite: statement -> reason.
 * Every reason is explained in docs/svc-sql.md ("Known differences from PostgreSQL"); the suite
 * fails on a difference not listed here and on a listed statement that no longer differs.
 */
export const REASONS: Record<string, string> = {
  'datetime-as-text': 'date and timestamptz values are normalised text inside svc: pg_typeof says text',
  'grouping-not-checked': 'ungrouped columns (42803) and ambiguous unqualified names (42702) are not refused',
  'is-distinct-from': 'IS [NOT] DISTINCT FROM is not parsed by pgsql-ast-parser (42601)',
  'jsonb-number-text': 'jsonb numbers are JSON numbers: 1.50 prints 1.5',
  'no-subqueries': 'subqueries and VALUES in FROM are outside the subset (0A000)',
  'null-literal-type': 'a NULL computed from untyped literals reports text where PostgreSQL infers the type',
  'server-version': 'svc reports PostgreSQL 15.0, the peer its own minor release',
  'show-column-name': 'SHOW names its column in lower case',
}

export const KNOWN: Record<string, string> = {
  "SELECT nullif(1, 1)": 'null-literal-type',
  'SELECT pg_typeof(now())': 'datetime-as-text',
  'SELECT pg_typeof(current_date)': 'datetime-as-text',
  "SELECT pg_typeof('2024-01-02'::date)": 'datetime-as-text',
  'SELECT NULL IS DISTINCT FROM NULL': 'is-distinct-from',
  'SELECT 1 IS DISTINCT FROM NULL': 'is-distinct-from',
  'SELECT 1 IS NOT DISTINCT FROM 1': 'is-distinct-from',
  'SELECT NULL IS NOT DISTINCT FROM NULL': 'is-distinct-from',
  "SELECT id FROM people WHERE city IS DISTINCT FROM 'Paris' ORDER BY id": 'is-distinct-from',
  'SELECT VALUES_TEST FROM (VALUES (1)) AS t(VALUES_TEST)': 'no-subqueries',
  "SELECT string_agg(name, ',') FROM (SELECT name FROM people ORDER BY id) s": 'no-subqueries',
  'SELECT name, count(*) FROM people': 'grouping-not-checked',
  'SELECT city, name FROM people GROUP BY city': 'grouping-not-checked',
  'SELECT id FROM people JOIN orders ON orders.person_id = people.id': 'grouping-not-checked',
  "SELECT '1.50'::jsonb": 'jsonb-number-text',
  'SHOW server_version_num': 'server-version',
  'SHOW DateStyle': 'show-column-name',
}
