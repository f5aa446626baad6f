/** Turns a user's search words into an FTS5 MATCH expression with svc's search semantics. */

/** The words of a text as the index sees them: runs of letters and digits, lower-cased. */
export function tokenize(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []
}

/** The token standing for a table in the `tbl` column: hex keeps any table name one token. */
export function tableToken(table: string): string {
  return `t${Buffer.from(table, 'utf8').toString('hex')}`
}

/** A search as FTS5 phrases: what matchExpression writes, kept apart for the store's scoring (store.ts). */
export interface MatchQuery {
  /** The MATCH expression of the whole search. */
  full: string
  /** Per word, its phrases: `"w"`, or `"w"` and `"w"*` for the last word (OR-ed). */
  groups: string[][]
  /** The table's token phrase (column `tbl`), when the search is limited to a table. */
  table?: string
}

/**
 * Every word must match; the last word, if 3+ characters, also matches as a prefix (typeahead).
 * The exact word is OR-ed beside its prefix so a document holding the word itself scores both
 * phrases and ranks above one that only holds a longer word. Words are quoted: each is a run of
 * letters and digits, so a quoted word can never be read as FTS5 syntax. Undefined when the
 * query has no words.
 */
export function parseMatch(query: string, table?: string): MatchQuery | undefined {
  const words = [...new Set(tokenize(query))].slice(0, 32)
  if (words.length === 0) return undefined
  const groups = words.map((w, i) => (i === words.length - 1 && w.length >= 3 ? [`"${w}"`, `"${w}"*`] : [`"${w}"`]))
  const tbl = table === undefined ? undefined : `"${tableToken(table)}"`
  return {full: groupsExpression(groups, tbl), groups, table: tbl}
}

/** The MATCH expression of `groups` (every group must match, any phrase of a group), within `table` when given. */
export function groupsExpression(groups: string[][], table?: string): string {
  const body = `body : (${groups.map((g) => (g.length === 1 ? g[0] : `(${g.join(' OR ')})`)).join(' AND ')})`
  return table === undefined ? body : `tbl : ${table} AND ${body}`
}

/** parseMatch's expression alone. */
export function matchExpression(query: string, table?: string): string | undefined {
  return parseMatch(query, table)?.full
}
