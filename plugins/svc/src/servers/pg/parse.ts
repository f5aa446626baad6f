/**
 * SQL text -> AST with a plan cache. Parsing with pgsql-ast-parser costs ~0.5 ms, more than the
 * whole point select, so literals are lifted into parameters first (like pg_stat_statements'
 * normalisation) and the AST of the normalised text is parsed once and reused.
 */
import type {Statement} from 'pgsql-ast-parser'

import {SqlError, unsupported} from './errors.js'

/** Valid PostgreSQL commands outside svc's subset: 0A000, not a syntax error. */
const UNSUPPORTED_START =
  /^\s*(copy|grant|revoke|vacuum|analyze|cluster|listen|notify|unlisten|lock|reindex|checkpoint|comment|security|refresh|import|call|declare|fetch|move|close|prepare|execute|deallocate|load|reassign|merge|alter|create(?!\s+(?:table|schema|index|unique\s+index)\b)|drop(?!\s+(?:table|index)\b)|do|savepoint|release|set\s+(?:local\s+)?transaction|set\s+role|set\s+session)\b/i

export interface Parsed {
  /** Values of the literals lifted out of the text, appended after the query's own parameters. */
  lifted: unknown[]
  statements: Statement[]
}

let parseFn: ((sql: string) => Statement[]) | undefined

async function parser(): Promise<(sql: string) => Statement[]> {
  if (!parseFn) {
    const mod = await import('pgsql-ast-parser')
    parseFn = (sql) => mod.parse(sql, {locationTracking: false})
  }
  return parseFn
}

const CACHE_MAX = 2000
const cache = new Map<string, Statement[]>()

function remember(key: string, st: Statement[]): void {
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value as string)
  cache.set(key, st)
}

export async function parseSql(sql: string): Promise<Parsed> {
  const hit = cache.get(sql)
  if (hit) return {lifted: [], statements: hit}
  const norm = normalize(sql)
  if (norm) {
    const nhit = cache.get(norm.text)
    if (nhit) return {lifted: norm.values, statements: nhit}
  }
  const parse = await parser()
  if (norm) {
    try {
      const st = parse(norm.text)
      remember(norm.text, st)
      return {lifted: norm.values, statements: st}
    } catch {
      // Some literals cannot be parameters (type names, interval units, ...): parse the text as is.
    }
  }
  let st: Statement[]
  try {
    st = parse(sql)
  } catch (error) {
    const kw = UNSUPPORTED_START.exec(sql)
    if (kw) throw unsupported(`${kw[1].toUpperCase()} statements are not supported`)
    throw syntaxError(sql, error)
  }
  remember(sql, st)
  return {lifted: [], statements: st}
}

function syntaxError(sql: string, error: unknown): SqlError {
  const msg = error instanceof Error ? error.message : String(error)
  // pgsql-ast-parser messages start with "Syntax error at line L col C:" followed by a long grammar dump.
  const m = /line (\d+) col (\d+)/.exec(msg)
  const tok = /Unexpected \w+ token: "([^"]*)"/.exec(msg)
  let position: number | undefined
  if (m) {
    const lines = sql.split('\n')
    position = lines.slice(0, Number(m[1]) - 1).reduce((n, l) => n + l.length + 1, 0) + Number(m[2])
  }
  const near = tok ? `at or near "${tok[1]}"` : position ? `at position ${position}` : 'in statement'
  return new SqlError('42601', `syntax error ${near}`, {position})
}

const LIFTABLE_START = /^\s*(select|insert|update|delete|with)\b/i
const TYPE_WORDS = new Set(['date', 'interval', 'time', 'timestamp', 'timestamptz', 'uuid', 'json', 'jsonb', 'inet', 'numeric', 'decimal', 'varchar', 'char', 'bit', 'float', 'double', 'precision'])

/**
 * Replaces numeric and string literals by $n placeholders. Returns undefined when the text is not
 * a DML statement or uses syntax the lexer does not model (E'' strings, dollar quoting, ...).
 */
export function normalize(sql: string): undefined | {text: string; values: unknown[]} {
  if (!LIFTABLE_START.test(sql)) return undefined
  let maxParam = 0
  for (const m of sql.matchAll(/\$(\d+)/g)) maxParam = Math.max(maxParam, Number(m[1]))
  const values: unknown[] = []
  let out = ''
  let i = 0
  const n = sql.length
  let prevWord = ''
  let byContext = false
  let lifted = false
  while (i < n) {
    const c = sql[i]
    if (c === '-' && sql[i + 1] === '-') {
      const e = sql.indexOf('\n', i)
      i = e < 0 ? n : e
      continue
    }
    if (c === '/' && sql[i + 1] === '*') {
      const e = sql.indexOf('*/', i + 2)
      if (e < 0) return undefined
      i = e + 2
      out += ' '
      continue
    }
    if (c === "'") {
      let j = i + 1
      let s = ''
      for (;;) {
        if (j >= n) return undefined
        if (sql[j] === "'") {
          if (sql[j + 1] === "'") {
            s += "'"
            j += 2
            continue
          }
          break
        }
        s += sql[j++]
      }
      if (TYPE_WORDS.has(prevWord) || byContext) {
        out += sql.slice(i, j + 1)
      } else {
        values.push(s)
        out += `$${maxParam + values.length}`
        lifted = true
      }
      i = j + 1
      prevWord = ''
      continue
    }
    if (c === '"') {
      const e = sql.indexOf('"', i + 1)
      if (e < 0) return undefined
      out += sql.slice(i, e + 1)
      i = e + 1
      prevWord = ''
      continue
    }
    if (c === '$') {
      if (!/\d/.test(sql[i + 1] ?? '')) return undefined // dollar quoting
      let j = i + 1
      while (j < n && /\d/.test(sql[j])) j++
      out += sql.slice(i, j)
      i = j
      prevWord = ''
      continue
    }
    if (/[A-Za-z_]/.test(c)) {
      let j = i + 1
      while (j < n && /[\w$]/.test(sql[j])) j++
      const word = sql.slice(i, j)
      const lw = word.toLowerCase()
      if ((lw === 'e' || lw === 'b' || lw === 'x' || lw === 'u') && sql[j] === "'") return undefined
      if (lw === 'by') byContext = prevWord === 'order' || prevWord === 'group' || prevWord === 'partition'
      else if (['limit', 'offset', 'having', 'from', 'where', 'union', 'returning', 'for'].includes(lw)) byContext = false
      out += word
      prevWord = lw
      i = j
      continue
    }
    if (/\d/.test(c) || (c === '.' && /\d/.test(sql[i + 1] ?? ''))) {
      const m = /^(\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)/.exec(sql.slice(i, i + 64))
      const lit = m ? m[1] : c
      const prev = out.at(-1) ?? ' '
      if (byContext || /[\w$]/.test(prev) || prev === ':') {
        // Positions in ORDER BY/GROUP BY, parts of identifiers and type modifiers stay literal.
        out += lit
      } else {
        const v = Number(lit)
        values.push(/^\d+$/.test(lit) && !Number.isSafeInteger(v) ? lit : v)
        out += `$${maxParam + values.length}`
        lifted = true
      }
      i += lit.length
      prevWord = ''
      continue
    }
    if (c === '(' && TYPE_WORDS.has(prevWord)) {
      // varchar(255), numeric(10,2): type modifiers must stay literal.
      const e = sql.indexOf(')', i)
      if (e < 0) return undefined
      out += sql.slice(i, e + 1)
      i = e + 1
      continue
    }
    if (c === ':' && sql[i + 1] === ':') {
      out += '::'
      i += 2
      continue
    }
    if (!/\s/.test(c)) prevWord = c === ',' ? prevWord : ''
    out += c
    i++
  }
  if (!lifted) return undefined
  return {text: out, values}
}
