/**
 * jsonb input that keeps every number as PostgreSQL does: jsonb numbers are `numeric`, so
 * `'1.50'::jsonb` prints `1.50` and `12345678901234567890` keeps its digits. A number whose
 * JavaScript form would print differently becomes a Numeric; the rest stay plain JSON values.
 */
import {Numeric} from './values.js'

/** Parses JSON text already known to be valid (JSON.parse accepted it). */
export function parseJsonbExact(text: string): unknown {
  let i = 0
  const ws = (): void => {
    while (i < text.length && ' \t\n\r'.includes(text[i])) i++
  }
  const value = (): unknown => {
    ws()
    const c = text[i]
    if (c === '{') {
      i++
      const o: Record<string, unknown> = {}
      ws()
      if (text[i] === '}') {
        i++
        return o
      }
      for (;;) {
        ws()
        const k = string()
        ws()
        i++ // ':'
        o[k] = value()
        ws()
        if (text[i++] === '}') return o
      }
    }
    if (c === '[') {
      i++
      const a: unknown[] = []
      ws()
      if (text[i] === ']') {
        i++
        return a
      }
      for (;;) {
        a.push(value())
        ws()
        if (text[i++] === ']') return a
      }
    }
    if (c === '"') return string()
    const m = /^(?:true|false|null|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(i, i + 400))
    const tok = m ? m[0] : ''
    i += tok.length
    if (tok === 'true') return true
    if (tok === 'false') return false
    if (tok === 'null') return null
    const n = Number(tok)
    return String(n) === tok ? n : Numeric.parse(tok)
  }
  const string = (): string => {
    const start = i
    i++
    while (text[i] !== '"') i += text[i] === '\\' ? 2 : 1
    i++
    return JSON.parse(text.slice(start, i)) as string
  }
  return value()
}
