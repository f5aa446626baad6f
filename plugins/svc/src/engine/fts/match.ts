/** Turns a user's search words into an FTS5 MATCH expression with svc's search semantics. */

/** The words of a text as the index sees them: runs of letters and digits, lower-cased. */
export function tokenize(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []
}

/** The token standing for a table in the `tbl` column: hex keeps any table name one token. */
export function tableToken(table: string): string {
  return `t${Buffer.from(table, 'utf8').toString('hex')}`
}

/**
 * Every word must match; the last word, if 3+ characters, also matches as a prefix (typeahead).
 * The exact word is OR-ed beside its prefix so a document holding the word itself scores both
 * phrases and ranks above one that only holds a longer word. Words are quoted: each is a run of
 * letters and digits, so a quoted word can never be read as FTS5 syntax. Undefined when the
 * query has no words.
 */
export function matchExpression(query: string, table?: string): string | undefined {
  const words = [...new Set(tokenize(query))].slice(0, 32)
  if (words.length === 0) return undefined
  const parts = words.map((w, i) => (i === words.length - 1 && w.length >= 3 ? `("${w}" OR "${w}"*)` : `"${w}"`))
  const body = `body : (${parts.join(' AND ')})`
  return table === undefined ? body : `tbl : "${tableToken(table)}" AND ${body}`
}
