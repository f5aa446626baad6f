/**
 * SQL text -> AST with a plan cache. Parsing with pgsql-ast-parser costs ~0.5 ms, more than the
 * whole point select, so literals are lifted into parameters first (like pg_stat_statements'
 * normalisation) and the AST of the normalised text is parsed once and reused.
 *
 * pgsql-ast-parser is an Earley parser whose time grows faster than linearly with the statement
 * (2,000 `OR` terms: ~2 s). So no client can stall the others: a long IN list of literals is
 * lifted as ONE parameter (parsing stays O(1) in the list length), short texts are parsed inline,
 * and longer ones in a worker thread with a time and heap budget (54001 when exceeded); texts
 * over `maxStatementBytes` are refused with 54000 before any work.
 */
import type {Statement} from 'pgsql-ast-parser'

import {createRequire} from 'node:module'
import {Worker} from 'node:worker_threads'

import {SqlError, unsupported} from './errors.js'
import {type Cancellable, pause} from './slices.js'
import {Int8, Numeric} from './values.js'

export interface ParseLimits {
  /** Longest SQL text accepted, in bytes (default 16 MiB): longer is 54000. */
  maxStatementBytes?: number
  /** Time budget of one parse in the worker (default 30 s): longer is 54001. */
  parseTimeoutMs?: number
  /** Most literals one `IN (...)` list may hold (default 100,000): more is 54001 (issue 24: bounds the work of one statement). */
  maxInValues?: number
}

export const DEFAULT_MAX_IN_VALUES = 100_000

/** 54001 for a value list (IN or an `= ANY` array) over `:max-in-values`. */
export function tooManyValues(max: number, what = 'an IN list'): SqlError {
  return new SqlError('54001', `statement is too complex: ${what} holds more than ${max} values`, {hint: 'send long value lists as one array parameter or in several statements (:max-in-values raises the limit)'})
}

const DEFAULT_MAX_BYTES = 16 * 1024 * 1024
const DEFAULT_PARSE_TIMEOUT = 30_000
/** Normalised texts up to this length parse inline (well under a millisecond); longer ones in the worker. */
const INLINE_MAX = 2048
/** Texts longer than this are not cached (a cache of huge keys would hold their memory). */
const CACHE_KEY_MAX = 16_384
/** Texts longer than this are lifted in slices of the event loop (a short one takes well under a slice). */
const SLICED_LIFT_MIN = 32_768
/** IN lists of at least this many literals become one parameter. */
const LIST_MIN = 8

/** The values of an `IN (...)` literal list lifted as one parameter; `list` expressions spread it. */
export class LiftedList {
  /**
   * @param numbers the values as a set when all are finite numbers, @param strings when all are
   * strings: built while the list is lifted, a slice at a time, so evaluating `IN` does not build
   * a 100,000-entry set in one turn of the event loop (issue 24).
   */
  constructor(
    readonly values: unknown[],
    readonly numbers?: Set<number>,
    readonly strings?: Set<string>,
  ) {}
}

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
  if (key.length > CACHE_KEY_MAX) return
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value as string)
  cache.set(key, st)
}

/** `session`, when given, is looked at between the slices of a long text's lifting (57014 once it is cancelled). */
export async function parseSql(sql: string, limits: ParseLimits = {}, session?: Cancellable): Promise<Parsed> {
  const hit = cache.get(sql)
  if (hit) return {lifted: [], statements: hit}
  const max = limits.maxStatementBytes ?? DEFAULT_MAX_BYTES
  if (sql.length > max || (sql.length * 3 > max && Buffer.byteLength(sql) > max)) {
    throw new SqlError('54000', `statement is too long: ${Buffer.byteLength(sql)} bytes, the limit is ${max}`, {hint: 'send long value lists as one array parameter, or in several statements'})
  }
  if (DISTINCT_FROM.test(sql)) sql = rewriteDistinctFrom(sql)
  const maxIn = limits.maxInValues ?? DEFAULT_MAX_IN_VALUES
  const norm = sql.length > SLICED_LIFT_MIN ? await normalizeSliced(sql, maxIn, session) : normalize(sql, maxIn)
  if (norm) {
    const nhit = cache.get(norm.text)
    if (nhit) return {lifted: norm.values, statements: nhit}
  }
  if (norm) {
    try {
      const st = await parseText(norm.text, limits)
      remember(norm.text, st)
      return {lifted: norm.values, statements: st}
    } catch (error) {
      if (error instanceof SqlError) throw error
      // Some literals cannot be parameters (type names, interval units, ...): parse the text as is.
    }
  }
  let st: Statement[]
  try {
    st = await parseText(sql, limits)
  } catch (error) {
    if (error instanceof SqlError) throw error
    const kw = UNSUPPORTED_START.exec(sql)
    if (kw) throw unsupported(`${kw[1].toUpperCase()} statements are not supported`)
    throw syntaxError(sql, error)
  }
  remember(sql, st)
  return {lifted: [], statements: st}
}

/**
 * What `parseSql` answers from its cache, found without parsing, pausing or a promise (a simple
 * Query of a text seen before with other literals); undefined when `parseSql` must run. Throws
 * what `parseSql` throws for the text (54001 for an IN list over the limit).
 */
export function parseCached(sql: string, limits: ParseLimits = {}): Parsed | undefined {
  const hit = cache.get(sql)
  if (hit) return {lifted: [], statements: hit}
  // Texts that might be over the byte limit, or long enough to lift in slices, go the long way.
  if (sql.length > SLICED_LIFT_MIN || sql.length * 3 > (limits.maxStatementBytes ?? DEFAULT_MAX_BYTES)) return undefined
  const norm = normalize(DISTINCT_FROM.test(sql) ? rewriteDistinctFrom(sql) : sql, limits.maxInValues ?? DEFAULT_MAX_IN_VALUES)
  const nhit = norm && cache.get(norm.text)
  return nhit ? {lifted: norm.values, statements: nhit} : undefined
}

/** Parses inline when the text is short, else in the parse worker. Parser errors are plain Errors. */
async function parseText(text: string, limits: ParseLimits): Promise<Statement[]> {
  if (text.length <= INLINE_MAX) return (await parser())(text)
  return parseInWorker(text, limits.parseTimeoutMs ?? DEFAULT_PARSE_TIMEOUT)
}

// The worker runs plain CommonJS so it needs no TypeScript loader; the parser's path is resolved here.
// The parser nests a chain of AND or OR one level per term; copying such a tree thousands of
// levels deep to the main thread never finishes, so chains are rebuilt as balanced trees first
// (same terms, same left-to-right order, depth log2(n)), without recursing along the chain.
const WORKER_SOURCE = `
const {parentPort, workerData} = require('node:worker_threads')
const {parse} = require(workerData.parser)
function chain(node, op) {
  const leaves = []
  const stack = [node]
  while (stack.length > 0) {
    const x = stack.pop()
    if (x && x.type === 'binary' && x.op === op) stack.push(x.right, x.left)
    else leaves.push(x)
  }
  return leaves
}
function balanced(leaves, op, lo, hi) {
  if (hi - lo === 1) return leaves[lo]
  const mid = (lo + hi) >> 1
  return {type: 'binary', op, left: balanced(leaves, op, lo, mid), right: balanced(leaves, op, mid, hi)}
}
function shape(x) {
  if (Array.isArray(x)) return x.map(shape)
  if (!x || typeof x !== 'object') return x
  if (x.type === 'binary' && (x.op === 'OR' || x.op === 'AND')) {
    const leaves = chain(x, x.op).map(shape)
    return balanced(leaves, x.op, 0, leaves.length)
  }
  const out = {}
  for (const k of Object.keys(x)) out[k] = shape(x[k])
  return out
}
parentPort.on('message', ({id, text}) => {
  try {
    parentPort.postMessage({id, statements: shape(parse(text, {locationTracking: false}))})
  } catch (error) {
    parentPort.postMessage({id, error: error instanceof Error ? error.message : String(error)})
  }
})
`

interface Job {
  id: number
  reject: (e: Error) => void
  resolve: (st: Statement[]) => void
  text: string
  timeoutMs: number
}

let worker: undefined | Worker
let running: Job | undefined
let nextJobId = 1
const queue: Job[] = []

function startWorker(): Worker {
  const parserPath = createRequire(import.meta.url).resolve('pgsql-ast-parser')
  const w = new Worker(WORKER_SOURCE, {eval: true, resourceLimits: {maxOldGenerationSizeMb: 256, stackSizeMb: 16}, workerData: {parser: parserPath}})
  // An idle parser must not keep the process alive.
  w.unref()
  w.on('message', (m: {error?: string; id: number; statements?: Statement[]}) => {
    const job = running
    if (!job || job.id !== m.id) return
    finish()
    if (m.error === undefined) job.resolve(m.statements ?? [])
    else job.reject(new Error(m.error))
  })
  w.on('error', (error) => {
    const job = running
    worker = undefined
    finish()
    // ERR_WORKER_OUT_OF_MEMORY and stack exhaustion end only the worker, never the server.
    job?.reject(new SqlError('54001', 'statement is too complex: parsing it needs more memory than allowed', {detail: error.message}))
  })
  w.on('exit', () => {
    if (worker === w) worker = undefined
  })
  return w
}

let timer: NodeJS.Timeout | undefined

function finish(): void {
  if (timer) clearTimeout(timer)
  timer = undefined
  running = undefined
  pump()
}

function pump(): void {
  if (running || queue.length === 0) return
  const job = queue.shift() as Job
  running = job
  worker ??= startWorker()
  worker.ref()
  const w = worker
  timer = setTimeout(() => {
    if (running !== job) return
    // The parse cannot be interrupted inside the worker: end the worker, start a fresh one for the next job.
    worker = undefined
    void w.terminate()
    finish()
    job.reject(new SqlError('54001', `statement is too complex: parsing took longer than ${job.timeoutMs} ms`, {hint: 'use fewer terms, or send long value lists as one array parameter'}))
  }, job.timeoutMs)
  w.postMessage({id: job.id, text: job.text})
}

function parseInWorker(text: string, timeoutMs: number): Promise<Statement[]> {
  return new Promise<Statement[]>((resolve, reject) => {
    queue.push({id: nextJobId++, reject, resolve: (st) => {
      if (queue.length === 0 && !running) worker?.unref()
      resolve(st)
    }, text, timeoutMs})
    pump()
  })
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

const DISTINCT_FROM = /\bdistinct\s+from\b/i
/** The operator schemas `IS [NOT] DISTINCT FROM` is rewritten to (eval.ts evaluates them). */
export const DISTINCT_SCHEMA = 'svc_distinct'
export const NOT_DISTINCT_SCHEMA = 'svc_not_distinct'

/**
 * pgsql-ast-parser has no grammar for `a IS [NOT] DISTINCT FROM b`. Outside quotes and comments
 * it becomes `a OPERATOR(svc_[not_]distinct.<>) b`, which parses as a comparison (the same
 * precedence) and which the evaluator answers with NULLs compared as values.
 */
export function rewriteDistinctFrom(sql: string): string {
  let out = ''
  let i = 0
  while (i < sql.length) {
    const c = sql[i]
    if (c === "'" || c === '"') {
      let j = i + 1
      while (j < sql.length && !(sql[j] === c && sql[j + 1] !== c)) j += sql[j] === c ? 2 : 1
      out += sql.slice(i, j + 1)
      i = j + 1
      continue
    }
    if (c === '-' && sql[i + 1] === '-') {
      const e = sql.indexOf('\n', i)
      const end = e < 0 ? sql.length : e
      out += sql.slice(i, end)
      i = end
      continue
    }
    const m = (c === 'i' || c === 'I') && !/[\w$]/.test(sql[i - 1] ?? ' ') ? /^is\s+(not\s+)?distinct\s+from\b/i.exec(sql.slice(i, i + 40)) : null
    if (m) {
      out += ` OPERATOR(${m[1] ? NOT_DISTINCT_SCHEMA : DISTINCT_SCHEMA}.<>) `
      i += m[0].length
      continue
    }
    out += c
    i++
  }
  return out
}

/** Words that end an ORDER BY / GROUP BY / PARTITION BY context. */
const CLAUSE_WORDS = new Set(['limit', 'offset', 'having', 'from', 'where', 'union', 'returning', 'for'])

// Character classes of the lexer as code-unit tests: a regular expression per character was a
// quarter of a simple Query's point select. Each is exactly its regex (\d and \w are ASCII-only
// without the u flag; \s is not, so a non-ASCII unit still asks the regex).
const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39
const isWordStart = (c: number): boolean => (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c === 0x5f
const isWordOrDollar = (c: number): boolean => isWordStart(c) || isDigit(c) || c === 0x24
const isSpace = (c: number, ch: string): boolean => c === 0x20 || (c >= 0x09 && c <= 0x0d) || (c >= 0x80 && /\s/.test(ch))

const LIFTABLE_START = /^\s*(select|insert|update|delete|with)\b/i
const TYPE_WORDS = new Set(['date', 'interval', 'time', 'timestamp', 'timestamptz', 'uuid', 'json', 'jsonb', 'inet', 'numeric', 'decimal', 'varchar', 'char', 'bit', 'float', 'double', 'precision'])

/**
 * Replaces numeric and string literals by $n placeholders. Returns undefined when the text is not
 * a DML statement or uses syntax the lexer does not model (E'' strings, dollar quoting, ...).
 */
export function normalize(sql: string, maxInValues = DEFAULT_MAX_IN_VALUES): undefined | {text: string; values: unknown[]} {
  const steps = normalizeSteps(sql, maxInValues)
  let r = steps.next()
  while (!r.done) r = steps.next()
  return r.value
}

/**
 * `normalize` for the server: a statement of 100,000 literals takes 15-50 ms to lift (more before
 * the lexer is optimised), so the lifting pauses at the event loop's shared slice
 * (engine/loop-turns.ts) and other clients are served between its pieces (issue 24). The first
 * pause comes before any work, so the slice's clock counts all of it.
 */
async function normalizeSliced(sql: string, maxInValues: number, session?: Cancellable): Promise<undefined | {text: string; values: unknown[]}> {
  const steps = normalizeSteps(sql, maxInValues)
  await pause(session)
  let r = steps.next()
  while (!r.done) {
    await pause(session)
    r = steps.next()
  }
  return r.value
}

/**
 * List values, or other tokens, lexed between two looks at the slice. 2,048 values ran 20-26 ms
 * on the loop in the noisy-neighbour bench (the lexer unoptimised, or a collection inside); 256
 * keep a slice near its 4 ms.
 */
const LIFT_STEP = 256

/** The lexer of `normalize`; it yields every LIFT_STEP tokens or list values so a caller can pause there. */
function* normalizeSteps(sql: string, maxInValues: number): Generator<void, undefined | {text: string; values: unknown[]}> {
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
  let tokens = 0
  while (i < n) {
    if (++tokens % LIFT_STEP === 0) yield
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
      if (!isDigit(sql.charCodeAt(i + 1))) return undefined // dollar quoting
      let j = i + 1
      while (j < n && isDigit(sql.charCodeAt(j))) j++
      out += sql.slice(i, j)
      i = j
      prevWord = ''
      continue
    }
    const code = sql.charCodeAt(i)
    if (isWordStart(code)) {
      let j = i + 1
      while (j < n && isWordOrDollar(sql.charCodeAt(j))) j++
      const word = sql.slice(i, j)
      const lw = word.toLowerCase()
      if ((lw === 'e' || lw === 'b' || lw === 'x' || lw === 'u') && sql[j] === "'") return undefined
      if (lw === 'by') byContext = prevWord === 'order' || prevWord === 'group' || prevWord === 'partition'
      else if (CLAUSE_WORDS.has(lw)) byContext = false
      out += word
      prevWord = lw
      i = j
      continue
    }
    if (isDigit(code) || (c === '.' && isDigit(sql.charCodeAt(i + 1)))) {
      const m = /^(\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)/.exec(sql.slice(i, i + 64))
      const lit = m ? m[1] : c
      const prev = out.at(-1) ?? ' '
      if (byContext || isWordOrDollar(prev.charCodeAt(0)) || prev === ':') {
        // Positions in ORDER BY/GROUP BY, parts of identifiers and type modifiers stay literal.
        out += lit
      } else {
        values.push(literalValue(lit))
        out += `$${maxParam + values.length}`
        lifted = true
      }
      i += lit.length
      prevWord = ''
      continue
    }
    if (c === '(' && prevWord === 'in' && !byContext) {
      const list = yield* literalList(sql, i, maxInValues)
      if (list && list.values.length >= LIST_MIN) {
        values.push(new LiftedList(list.values, list.numbers, list.strings))
        out += `($${maxParam + values.length})`
        lifted = true
        prevWord = ''
        i = list.end
        continue
      }
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
    if (!isSpace(code, c)) prevWord = c === ',' ? prevWord : ''
    out += c
    i++
  }
  if (!lifted) return undefined
  return {text: out, values}
}

/**
 * A numeric literal's value with PostgreSQL's type: an integer is int4 or int8 by size (else
 * numeric), a literal with a point or exponent is an exact numeric (`7.0` keeps scale 1).
 */
function literalValue(lit: string): unknown {
  if (!/^\d+$/.test(lit)) return Numeric.parse(lit)
  const v = Number(lit)
  if (Number.isSafeInteger(v)) return v
  const b = BigInt(lit)
  return b <= 9_223_372_036_854_775_807n ? new Int8(b) : Numeric.parse(lit)
}

/** A character that would make a run of digits something else (a decimal, an exponent, a name). */
function continuesNumber(c: number): boolean {
  return c === 0x2e || c === 0x24 || c === 0x5f || (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a)
}

const NUMBER_AT = /(\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)/y

/** `(lit, lit, ...)` at `start` made only of number and plain string literals: their values and the end. */
function* literalList(sql: string, start: number, max: number): Generator<void, undefined | {end: number; numbers?: Set<number>; strings?: Set<string>; values: unknown[]}> {
  const values: unknown[] = []
  let numbers: Set<number> | undefined = new Set()
  let strings: Set<string> | undefined = new Set()
  const n = sql.length
  let j = start + 1
  const skip = (): void => {
    for (let c = sql.charCodeAt(j); c === 0x20 || c === 0x0a || c === 0x09 || c === 0x0d; c = sql.charCodeAt(++j));
  }
  for (;;) {
    skip()
    if (sql[j] === "'") {
      let k = j + 1
      let s = ''
      for (;;) {
        if (k >= n) return undefined
        if (sql[k] === "'") {
          if (sql[k + 1] === "'") {
            s += "'"
            k += 2
            continue
          }
          break
        }
        const e = sql.indexOf("'", k)
        if (e < 0) return undefined
        s += sql.slice(k, e)
        k = e
      }
      values.push(s)
      strings?.add(s)
      numbers = undefined
      j = k + 1
    } else {
      let sign = ''
      if (sql[j] === '-' || sql[j] === '+') {
        sign = sql[j] === '-' ? '-' : ''
        j++
      }
      // The common case, up to 15 plain digits, is read in place (exact in a double): 100,000
      // values are lifted without a string or a regex match per value (issue 24).
      let k = j
      let digits = 0
      for (let c = sql.charCodeAt(k); c >= 0x30 && c <= 0x39 && k - j < 16; c = sql.charCodeAt(++k)) digits = digits * 10 + (c - 0x30)
      if (k > j && k - j <= 15 && !continuesNumber(sql.charCodeAt(k))) {
        const value = sign === '-' ? -digits : digits
        values.push(value)
        numbers?.add(value)
        strings = undefined
        j = k
      } else {
        // A sticky regex at j: no slice per value.
        NUMBER_AT.lastIndex = j
        const m = NUMBER_AT.exec(sql)
        if (!m) return undefined
        const lit = m[1]
        const v = Number(sign + lit)
        const value = Number.isSafeInteger(v) || !/^\d+$/.test(lit) ? v : sign + lit
        values.push(value)
        if (typeof value === 'number' && Number.isFinite(value)) {
          numbers?.add(value)
          strings = undefined
        } else if (typeof value === 'string') {
          strings?.add(value)
          numbers = undefined
        } else {
          numbers = undefined
          strings = undefined
        }
        j += lit.length
        if (/[\w.$]/.test(sql[j] ?? '')) return undefined
      }
    }
    skip()
    if (sql[j] === ',') {
      if (values.length >= max) throw tooManyValues(max)
      if (values.length % LIFT_STEP === 0) yield
      j++
      continue
    }
    if (sql[j] === ')') return {end: j + 1, numbers, strings, values}
    return undefined
  }
}
