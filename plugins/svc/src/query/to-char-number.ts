/**
 * to_char(number, format) as PostgreSQL 15 formats it in the C locale: digit positions `9` and
 * `0`, the decimal point (`.`, `D`), group separators (`,`, `G`), the `FM` fill mode, the signs
 * `S`, `MI`, `PL`, `SG` and `PR`, and literal text (quoted, or any character that is not a
 * pattern letter). Other patterns (`L`, `V`, `EEEE`, `RN`, `TH`) are refused with 0A000 rather
 * than answered differently from PostgreSQL.
 */
import BigNumber from 'bignumber.js'

import {SqlError, unsupported} from './errors.js'
import {Float8, Int8, Numeric} from './values.js'

type Sign = 'MI' | 'PL' | 'PR' | 'S' | 'SG'
type Token = {kind: 'digit'; zero: boolean} | {kind: 'group'} | {kind: 'literal'; text: string} | {kind: 'point'} | {kind: 'sign'; sign: Sign}

interface Template {
  fm: boolean
  tokens: Token[]
}

const SIGNS: Sign[] = ['SG', 'MI', 'PL', 'PR', 'S']

function parse(format: string): Template {
  const tokens: Token[] = []
  let fm = false
  let point = false
  for (let i = 0; i < format.length; ) {
    const rest = format.slice(i).toUpperCase()
    const c = format[i]
    if (c === '"') {
      const end = format.indexOf('"', i + 1)
      const text = end === -1 ? format.slice(i + 1) : format.slice(i + 1, end)
      tokens.push({kind: 'literal', text})
      i = end === -1 ? format.length : end + 1
    } else if (rest.startsWith('FM')) {
      fm = true
      i += 2
    } else if (c === '9' || c === '0') {
      tokens.push({kind: 'digit', zero: c === '0'})
      i++
    } else if (c === '.' || rest[0] === 'D') {
      if (point) throw new SqlError('42601', 'multiple decimal points')
      point = true
      tokens.push({kind: 'point'})
      i++
    } else if (c === ',' || rest[0] === 'G') {
      tokens.push({kind: 'group'})
      i++
    } else {
      const sign = SIGNS.find((s) => rest.startsWith(s))
      if (sign) {
        tokens.push({kind: 'sign', sign})
        i += sign.length
      } else if (/[a-z]/i.test(c)) {
        throw unsupported(`to_char number format pattern "${format.slice(i, i + 4)}" (supported: 9 0 . D , G FM S MI PL SG PR and literal text)`)
      } else {
        tokens.push({kind: 'literal', text: c})
        i++
      }
    }
  }
  const pr = tokens.findIndex((t) => t.kind === 'sign' && t.sign === 'PR')
  if (pr !== -1 && tokens.slice(pr + 1).some((t) => t.kind === 'digit')) throw new SqlError('42601', '"9" must be ahead of "PR"')
  return {fm, tokens}
}

/** The value rounded to `post` decimals as digit strings: numeric and integers half away from zero, floats half to even (as printf does). */
function digitsOf(value: unknown, post: number): {frac: string; int: string; negative: boolean} {
  let n: BigNumber
  let mode: BigNumber.RoundingMode = BigNumber.ROUND_HALF_UP
  if (value instanceof Numeric) n = value.v
  else if (value instanceof Int8) n = new BigNumber(value.v.toString())
  else if (typeof value === 'bigint') n = new BigNumber(value.toString())
  else if (value instanceof Float8 || (typeof value === 'number' && !Number.isInteger(value))) {
    const x = value instanceof Float8 ? value.v : value
    if (!Number.isFinite(x)) throw unsupported('to_char of an infinite or NaN float8')
    // The exact binary value decides halves, as printf's rounding does.
    n = new BigNumber(x.toPrecision(40))
    mode = BigNumber.ROUND_HALF_EVEN
    if (n.abs().integerValue(BigNumber.ROUND_DOWN).toFixed().length + post > 15) throw unsupported('to_char of a float8 with more than 15 significant digits')
  } else if (typeof value === 'number') n = new BigNumber(value)
  else throw unsupported('to_char of this type')
  if (!n.isFinite()) throw unsupported('to_char of NaN')
  const fixed = n.abs().toFixed(post, mode)
  const [int, frac = ''] = fixed.split('.')
  return {frac, int, negative: n.isNegative() && /[1-9]/.test(fixed)}
}

interface Piece {
  /** A digit, '#', or the decimal point: where the number starts for an anchored sign. */
  number: boolean
  text: string
}

export function toCharNumber(value: unknown, format: string): string {
  const {fm, tokens} = parse(format)
  const pointAt = tokens.findIndex((t) => t.kind === 'point')
  const digitTokens = tokens.map((t, i) => ({i, t})).filter((x) => x.t.kind === 'digit')
  const pre = digitTokens.filter((x) => pointAt === -1 || x.i < pointAt).length
  const post = digitTokens.length - pre
  const zeroStart = digitTokens.findIndex((x) => x.t.kind === 'digit' && x.t.zero)
  // Without a digit position only the literal text shows (PostgreSQL prints no sign then either).
  if (digitTokens.length === 0) return tokens.map((t) => (t.kind === 'literal' ? t.text : '')).join('')
  const {frac, int, negative} = digitsOf(value, post)
  const overflow = int.length > pre
  const blanks = pre - int.length
  const allZero = /^0*$/.test(int + frac)
  // FM drops the fraction's trailing zeros written with 9 (never those written with 0).
  let keepFrac = post
  if (fm) while (keepFrac > 0 && frac[keepFrac - 1] === '0' && !(digitTokens[pre + keepFrac - 1].t as {zero: boolean}).zero) keepFrac--

  const blank = fm ? '' : ' '
  const pieces: Piece[] = []
  let digit = 0
  let printedInt = false
  for (const t of tokens) {
    if (t.kind === 'digit') {
      const k = digit++
      let text: string
      if (overflow) text = '#'
      else if (k >= pre) text = k - pre < keepFrac ? frac[k - pre] : ''
      else if (k < blanks) text = zeroStart !== -1 && k >= zeroStart ? '0' : blank
      // A zero integer part shows only where the template has no fraction, a 0 forces it, or FM prints a zero value.
      else if (int === '0') text = post === 0 || (zeroStart !== -1 && k >= zeroStart) || (fm && allZero) ? '0' : blank
      else text = int[k - blanks]
      if (k < pre && text !== blank && text !== '') printedInt = true
      pieces.push({number: text !== blank && text !== '', text})
    } else if (t.kind === 'point') {
      pieces.push({number: post > 0, text: post > 0 ? '.' : ''})
    } else if (t.kind === 'group') {
      pieces.push({number: false, text: overflow || printedInt || digit >= pre ? ',' : blank})
    } else if (t.kind === 'literal') {
      pieces.push({number: false, text: t.text})
    } else {
      pieces.push({number: false, text: ''})
    }
  }

  const first = pieces.findIndex((p) => p.number)
  const at = first === -1 ? pieces.length : first
  const anchored: string[] = []
  for (const [i, t] of tokens.entries()) {
    if (t.kind !== 'sign') continue
    const p = pieces[i]
    if (t.sign === 'S') {
      if (i < at) anchored.push(negative ? '-' : '+')
      else p.text = negative ? '-' : '+'
    } else if (t.sign === 'SG') p.text = negative ? '-' : '+'
    else if (t.sign === 'MI') p.text = negative ? '-' : blank
    else if (t.sign === 'PL') p.text = negative ? blank : '+'
    else {
      anchored.push(negative ? '<' : blank)
      p.text = negative ? '>' : blank
    }
  }
  // Without S, MI, SG or PR the number has a sign position of its own: '-', or a blank.
  const explicit = tokens.some((t) => t.kind === 'sign' && t.sign !== 'PL')
  if (!explicit) anchored.push(negative ? '-' : blank)
  const texts = pieces.map((p) => p.text)
  texts.splice(at, 0, anchored.join(''))
  return texts.join('')
}
