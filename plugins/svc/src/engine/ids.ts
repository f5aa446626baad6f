import {createHash} from 'node:crypto'

import {EngineError} from './errors.js'

/** The table a bare key (an id without `table:`) belongs to. */
export const DEFAULT_TABLE = 'default'
export const DEFAULT_BRANCH = 'main'
export const MAX_KEY_BYTES = 512

const TABLE_RE = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/
// Branch names stay a safe subset of what git allows, so they map to refs and directory names unchanged.
const BRANCH_RE = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$/

export interface ParsedId {
  /** `table:key`, the form stored in the document and returned by every call. */
  id: string
  key: string
  table: string
}

/** Splits and validates an id; a bare key goes to the default table. */
export function parseId(raw: unknown): ParsedId {
  if (typeof raw !== 'string' || raw.length === 0) throw new EngineError('invalid_id', 'document id must be a non-empty string')
  const colon = raw.indexOf(':')
  const table = colon === -1 ? DEFAULT_TABLE : raw.slice(0, colon)
  const key = colon === -1 ? raw : raw.slice(colon + 1)
  if (!TABLE_RE.test(table)) {
    throw new EngineError('invalid_id', `invalid table name "${table}" in id "${raw}": use letters, digits, _ . - (at most 64)`)
  }
  if (key.length === 0) throw new EngineError('invalid_id', `id "${raw}" has an empty key`)
  // A UTF-16 code unit is at most 3 UTF-8 bytes: short keys need no byte count.
  if (key.length * 3 > MAX_KEY_BYTES && Buffer.byteLength(key) > MAX_KEY_BYTES) throw new EngineError('invalid_id', `id key is longer than ${MAX_KEY_BYTES} bytes`)
  // Control characters would break git's line-oriented plumbing and are never meaningful in a key.
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(key)) throw new EngineError('invalid_id', `id "${JSON.stringify(raw)}" contains control characters`)
  // The id as given is already canonical when it names its table; reusing the string keeps map
  // lookups by it from flattening and hashing a new one.
  return {id: colon === -1 ? `${table}:${key}` : raw, key, table}
}

/**
 * True when `raw` is a valid id that names its table, so `parseId(raw).id === raw`; checked
 * without allocating, for the lookups of ids that are not stored. False means "ask parseId".
 */
export function isCanonicalId(raw: string): boolean {
  const colon = raw.indexOf(':')
  if (colon < 1 || colon > 64 || colon === raw.length - 1 || (raw.length - colon - 1) * 3 > MAX_KEY_BYTES) return false
  for (let i = 0; i < colon; i++) {
    const c = raw.charCodeAt(i)
    const word = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95
    if (!word && (i === 0 || (c !== 46 && c !== 45))) return false
  }
  for (let i = colon + 1; i < raw.length; i++) {
    const c = raw.charCodeAt(i)
    if (c < 32 || c === 127) return false
  }
  return true
}

export function canonicalId(raw: unknown): string {
  return parseId(raw).id
}

export function validateBranch(name: unknown): string {
  if (typeof name !== 'string' || !BRANCH_RE.test(name) || name.endsWith('.lock') || name.includes('..')) {
    throw new EngineError('invalid_argument', `invalid branch name ${JSON.stringify(name)}: use letters, digits, _ . - (at most 100)`)
  }
  return name
}

function encodeKey(key: string): string {
  let out = ''
  for (const ch of key) {
    if (/[A-Za-z0-9_-]/.test(ch) || (ch === '.' && out.length > 0)) out += ch
    else for (const b of Buffer.from(ch)) out += `%${b.toString(16).toUpperCase().padStart(2, '0')}`
  }
  return out
}

/**
 * Where a document lives in the tree: `<table>/<h1>/<h2>/<key>.json`, h1 and h2 the first two
 * bytes of sha1(id). Two levels of 256 keep every tree a commit rewrites small, so the cost of a
 * commit does not grow with the number of documents (see docs/svc.md, "Layout").
 */
export function docPath(p: ParsedId): string {
  const h = createHash('sha1').update(p.id).digest('hex')
  return `${p.table}/${h.slice(0, 2)}/${h.slice(2, 4)}/${encodeKey(p.key)}.json`
}

/** The id stored at a tree path, or undefined for a path the engine did not write. */
export function idFromPath(path: string): string | undefined {
  const m = /^([^/]+)\/[0-9a-f]{2}\/[0-9a-f]{2}\/(.+)\.json$/.exec(path)
  if (!m) return undefined
  try {
    return `${m[1]}:${decodeURIComponent(m[2])}`
  } catch {
    return undefined
  }
}

export function tableOf(id: string): string {
  return id.slice(0, id.indexOf(':'))
}
