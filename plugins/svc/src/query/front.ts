/**
 * Utility statements the SQL parser (pgsql-ast-parser) has no grammar for: END, ABORT,
 * COMMIT/ROLLBACK WORK, EXPLAIN, DISCARD, RESET. They are recognised from their leading keywords
 * by a small tokenizer (comments and whitespace skipped, one statement only), the way
 * PostgreSQL's own grammar dispatches on the first keyword.
 */

export type Utility =
  | {kind: 'discard'}
  | {kind: 'explain'; statement: string}
  | {kind: 'reset'; name?: string}
  | {kind: 'tx'; op: 'begin' | 'commit' | 'rollback'}

// [A-Za-z_] and \w (ASCII-only) as code-unit tests: every simple Query passes here.
const isWordStart = (c: number): boolean => (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c === 0x5f
const isWord = (c: number): boolean => isWordStart(c) || (c >= 0x30 && c <= 0x39)

/** Words at the start of `sql`, lower-cased, skipping comments; stops at the first non-word. */
function leading(sql: string, max: number): {end: number; words: string[]} {
  const words: string[] = []
  let i = 0
  const n = sql.length
  while (i < n && words.length < max) {
    const c = sql[i]
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++
    } else if (c === '-' && sql[i + 1] === '-') {
      const e = sql.indexOf('\n', i)
      i = e < 0 ? n : e + 1
    } else if (c === '/' && sql[i + 1] === '*') {
      const e = sql.indexOf('*/', i + 2)
      i = e < 0 ? n : e + 2
    } else if (isWordStart(sql.charCodeAt(i))) {
      let j = i + 1
      while (j < n && isWord(sql.charCodeAt(j))) j++
      words.push(sql.slice(i, j).toLowerCase())
      i = j
    } else break
  }
  return {end: i, words}
}

/** True when only whitespace and at most one `;` remain after `from`. */
function onlyEnd(sql: string, from: number): boolean {
  return /^\s*;?\s*$/.test(sql.slice(from))
}

export function utilityStatement(sql: string): undefined | Utility {
  // Only the first few words are read: this never scans a long statement.
  const {end, words} = leading(sql, 3)
  const [w0, w1] = words
  if (w0 === 'explain') {
    // EXPLAIN [ANALYZE] [VERBOSE] [(options)] statement
    let rest = sql.slice(sql.toLowerCase().indexOf('explain') + 7)
    for (;;) {
      const m = /^\s*(analyze|analyse|verbose)\b/i.exec(rest) ?? /^\s*\([^)]*\)/.exec(rest)
      if (!m) break
      rest = rest.slice(m[0].length)
    }
    return {kind: 'explain', statement: rest}
  }
  if (words.length === 0 || words.length > 2 || !onlyEnd(sql, end)) return undefined
  const tail = w1 === undefined || w1 === 'work' || w1 === 'transaction'
  if ((w0 === 'end' || w0 === 'commit') && tail) return {kind: 'tx', op: 'commit'}
  if ((w0 === 'abort' || w0 === 'rollback') && tail) return {kind: 'tx', op: 'rollback'}
  if (w0 === 'discard' && w1 === 'all') return {kind: 'discard'}
  if (w0 === 'reset') return w1 === 'all' ? {kind: 'reset'} : w1 ? {kind: 'reset', name: w1} : undefined
  return undefined
}
