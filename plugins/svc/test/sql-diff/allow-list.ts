/**
 * Known differences between svc and PostgreSQL 15 in the differential suite: statement -> reason.
 * Every reason is explained in docs/svc-sql.md ("Known differences from PostgreSQL"); the suite
 * fails on a difference not listed here and on a listed statement that no longer differs.
 */
export const REASONS: Record<string, string> = {
  'catalog-types': 'catalog columns are text where PostgreSQL has name / varchar',
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
  'SELECT current_schema()': 'catalog-types',
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
  "SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_name = 'people' ORDER BY ordinal_position": 'catalog-types',
  "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name": 'catalog-types',
  "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = 'public' ORDER BY tablename": 'catalog-types',
  "SELECT a.attname, a.attnotnull FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid WHERE c.relname = 'people' AND a.attnum > 0 ORDER BY a.attnum": 'catalog-types',
  "SELECT nspname FROM pg_namespace WHERE nspname = 'public'": 'catalog-types',
  'SELECT typname FROM pg_type WHERE oid = 23': 'catalog-types',
  'SHOW server_version_num': 'server-version',
  'SHOW DateStyle': 'show-column-name',
  'psql: \\d people': 'catalog-types',
  'psql: \\di': 'catalog-types',
}
