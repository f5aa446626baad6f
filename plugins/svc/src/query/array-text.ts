/** PostgreSQL's one-dimensional array text form (`{1,"b c",NULL}`): parsing with array_in's errors. */
import {SqlError, unsupported} from './errors.js'

function malformed(s: string, detail: string): SqlError {
  return new SqlError('22P02', `malformed array literal: "${s}"`, {detail})
}

/** The element texts of an array literal, NULL as null; 22P02 with PostgreSQL's DETAIL when malformed. */
export function parseArrayText(s: string): Array<null | string> {
  const t = s.trim()
  if (!t.startsWith('{')) throw malformed(s, 'Array value must start with "{" or dimension information.')
  const out: Array<null | string> = []
  let i = 1
  const skipSpace = (): void => {
    while (i < t.length && /\s/.test(t[i])) i++
  }
  skipSpace()
  if (t[i] === '}') {
    i++
  } else {
    for (;;) {
      skipSpace()
      if (i >= t.length) throw malformed(s, 'Unexpected end of input.')
      if (t[i] === '{') throw unsupported('multi-dimensional arrays are not supported')
      if (t[i] === ',' || t[i] === '}') throw malformed(s, `Unexpected "${t[i]}" character.`)
      let item = ''
      let quoted = false
      if (t[i] === '"') {
        quoted = true
        i++
        while (i < t.length && t[i] !== '"') {
          if (t[i] === '\\') i++
          if (i < t.length) item += t[i++]
        }
        if (i >= t.length) throw malformed(s, 'Unexpected end of input.')
        i++
        skipSpace()
      } else {
        // Unquoted: backslash escapes a character; surrounding blanks are not part of the element.
        let trailing = ''
        while (i < t.length && t[i] !== ',' && t[i] !== '}') {
          if (t[i] === '"' || t[i] === '{') throw malformed(s, `Unexpected "${t[i]}" character.`)
          if (/\s/.test(t[i])) {
            trailing += t[i++]
            continue
          }
          if (t[i] === '\\') {
            i++
            if (i >= t.length) throw malformed(s, 'Unexpected end of input.')
          }
          item += (item === '' ? '' : trailing) + t[i++]
          trailing = ''
        }
      }
      if (i >= t.length) throw malformed(s, 'Unexpected end of input.')
      out.push(!quoted && /^null$/i.test(item) ? null : item)
      if (t[i] === '}') {
        i++
        break
      }
      if (t[i] !== ',') throw malformed(s, 'Unexpected array element.')
      i++
    }
  }
  if (i < t.length) throw malformed(s, 'Junk after closing right brace.')
  return out
}
