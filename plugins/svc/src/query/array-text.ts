/** PostgreSQL's one-dimensional array text form (`{1,"b c",NULL}`): parsing with array_in's errors. */
import {SqlError, unsupported} from './errors.js'
import {type Cancellable, pause} from './slices.js'

function malformed(s: string, detail: string): SqlError {
  return new SqlError('22P02', `malformed array literal: "${s}"`, {detail})
}

/** Texts at least this long are parsed in slices by `parseArrayTextSliced` and remembered. */
const LONG = 32_768
/** Elements parsed between two looks at the event loop's slice. */
const STEP = 256

/**
 * The last long array text parsed: a 100,000-element `= ANY($1)` parameter is read by the planner
 * and again by the row filter, 30-100 ms each time in one turn (issue 24). Callers never change
 * the items they are given.
 */
let memo: undefined | {items: Array<null | string>; text: string}

/** The element texts of an array literal, NULL as null; 22P02 with PostgreSQL's DETAIL when malformed. */
export function parseArrayText(s: string): Array<null | string> {
  if (memo && s.length === memo.text.length && s === memo.text) return memo.items
  const steps = arraySteps(s)
  let r = steps.next()
  while (!r.done) r = steps.next()
  if (s.length >= LONG) memo = {items: r.value, text: s}
  return r.value
}

/** `parseArrayText` in slices of the event loop for a long text; the next `parseArrayText` of it is free. */
export async function parseArrayTextSliced(s: string, cancel?: Cancellable): Promise<Array<null | string>> {
  if (s.length < LONG || (memo && s === memo.text)) return parseArrayText(s)
  const steps = arraySteps(s)
  await pause(cancel)
  let r = steps.next()
  while (!r.done) {
    await pause(cancel)
    r = steps.next()
  }
  memo = {items: r.value, text: s}
  return r.value
}

/** The parser; it yields every STEP elements so a caller can pause there. */
function* arraySteps(s: string): Generator<void, Array<null | string>> {
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
      if (out.length % STEP === 0) yield
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
