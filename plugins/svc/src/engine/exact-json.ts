/**
 * JSON text that svc can store exactly as written: bounded in nesting depth, and with every number
 * a 64-bit float holds exactly. Every protocol that takes JSON text from a client (REST bodies, the
 * embedded protocol of the language bindings) checks it here, so none of them can store a number
 * other than the one it acknowledged.
 *
 * Why refuse rather than keep the literal: documents are JSON values of JavaScript everywhere
 * below the adapters (the write-ahead log, Git blobs, SQL, indexes, Redis), so a number a double
 * cannot hold would come back as a different number (12345678901234567890 as
 * 12345678901234567000, 1e400 as null). Refusing names the field so the client can send it as
 * a string.
 */
import {EngineError} from './errors.js'

export const DEFAULT_MAX_DEPTH = 128

/**
 * One pass over text already known to be valid JSON: throws EngineError `too_deep` past
 * `maxDepth` levels, `inexact_number` for a number literal a double would not read back as written.
 */
export function checkExactJson(text: string, maxDepth = DEFAULT_MAX_DEPTH): void {
  checkShape(text, maxDepth)
}

interface Frame {
  array: boolean
  index: number
  /** Start and end of the current key's quoted text (objects). */
  keyStart: number
  keyEnd: number
}

/**
 * One pass over text already known to be valid JSON: nesting depth, and every number literal
 * that is not plainly exact. Strings are skipped with indexOf, so the cost stays linear and small.
 */
function checkShape(text: string, maxDepth: number): void {
  const stack: Frame[] = []
  // In an object, the next string is a key when the last structural character was `{` or `,`.
  let expectKey = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22) {
      const start = i
      i = stringEnd(text, i)
      const top = stack.at(-1)
      if (expectKey && top && !top.array) {
        top.keyStart = start
        top.keyEnd = i + 1
        expectKey = false
      }
    } else if (c === 0x7b || c === 0x5b) {
      if (stack.length >= maxDepth) {
        throw new EngineError('too_deep', `JSON nesting deeper than ${maxDepth} levels (at ${pathOf(text, stack)}); svc accepts at most ${maxDepth} levels of objects and arrays`)
      }
      stack.push({array: c === 0x5b, index: 0, keyEnd: 0, keyStart: 0})
      expectKey = c === 0x7b
    } else if (c === 0x7d || c === 0x5d) {
      stack.pop()
      expectKey = false
    } else if (c === 0x2c) {
      const top = stack.at(-1)
      if (top?.array) top.index++
      else expectKey = true
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      let j = i + 1
      while (j < text.length && isNumberChar(text.charCodeAt(j))) j++
      const literal = text.slice(i, j)
      const problem = inexact(literal)
      if (problem) {
        throw new EngineError('inexact_number', `field ${pathOf(text, stack)} holds ${literal.length > 40 ? `${literal.slice(0, 40)}...` : literal}, which ${problem}; svc stores numbers as 64-bit floats (integers exactly up to 9007199254740992, about 15 significant digits): send it as a string to keep it exactly`)
      }
      i = j - 1
    }
  }
}

function isNumberChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === 0x2d
}

/** Index of the closing quote of the string opening at `start`. */
function stringEnd(text: string, start: number): number {
  let i = start
  for (;;) {
    i = text.indexOf('"', i + 1)
    let backslashes = 0
    while (text.charCodeAt(i - 1 - backslashes) === 0x5c) backslashes++
    if (backslashes % 2 === 0) return i
  }
}

/** `a.b[2].c` for the position the scanner is at. */
function pathOf(text: string, stack: Frame[]): string {
  if (stack.length === 0) return '(the top-level value)'
  let out = ''
  for (const f of stack) {
    if (f.array) out += `[${f.index}]`
    else {
      const key = JSON.parse(text.slice(f.keyStart, f.keyEnd)) as string
      out += /^[A-Za-z_$][\w$]*$/.test(key) ? (out === '' ? key : `.${key}`) : `[${JSON.stringify(key)}]`
    }
  }
  return out
}

/** Why a JSON number literal would not read back as written, or undefined when it would. */
export function inexact(literal: string): string | undefined {
  // Up to 15 significant digits without an exponent always round-trips through a double.
  if (literal.length <= 15 && !/[eE]/.test(literal)) return undefined
  const n = Number(literal)
  if (!Number.isFinite(n)) return 'is beyond the range of a 64-bit float'
  if (decimal(literal) === decimal(String(n))) return undefined
  return n === 0 ? 'is too small for a 64-bit float (it would read back as 0)' : `would read back as ${String(n)}`
}

/** A canonical decimal form `digits@exponent` (value = 0.digits x 10^exponent), sign included. */
function decimal(literal: string): string {
  const m = /^(-?)(\d*)\.?(\d*)(?:[eE]([+-]?\d+))?$/.exec(literal)
  if (!m) return literal
  const [, sign, int, frac, exp] = m
  let digits = int + frac
  let e = int.length + Number(exp ?? 0)
  const lead = digits.length - digits.replace(/^0+/, '').length
  digits = digits.slice(lead).replace(/0+$/, '')
  e -= lead
  return digits === '' ? '0' : `${sign}${digits}@${e}`
}
