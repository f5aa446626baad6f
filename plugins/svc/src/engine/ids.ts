import {hash} from 'node:crypto'

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

/**
 * `isCanonicalId` of the string these bytes spell, for ASCII bytes; false for any other byte
 * (false means "ask parseId"). A protocol server asks before it makes a string of a key.
 */
export function isCanonicalIdBytes(b: Uint8Array, start: number, end: number): boolean {
  // A loop, not Buffer#indexOf: a call into C++ per key cost more than the walk over a short table name.
  let colon = start
  while (colon < end && colon - start <= 64 && b[colon] !== 0x3a) colon++
  if (colon === start || colon >= end - 1 || colon - start > 64 || (end - colon - 1) * 3 > MAX_KEY_BYTES) return false
  for (let i = start; i < colon; i++) {
    const c = b[i]
    const word = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95
    if (!word && (i === start || (c !== 46 && c !== 45))) return false
  }
  for (let i = colon + 1; i < end; i++) {
    const c = b[i]
    if (c < 32 || c >= 127) return false
  }
  return true
}

export function canonicalId(raw: unknown): string {
  return parseId(raw).id
}

/**
 * Why Git would refuse `name` as a branch (`git check-ref-format --branch` rules), or undefined.
 * Kept beside svc's own narrower pattern so a message names the rule that was broken.
 */
export function refFormatProblem(name: string): string | undefined {
  if (name === '') return 'it is empty'
  if (name === 'HEAD' || name === '@') return `"${name}" is reserved by git`
  if (name.startsWith('-')) return 'it starts with "-"'
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0020\u007f]/.test(name)) return 'it contains a space or a control character'
  const bad = /[~^:?*[\\]/.exec(name)
  if (bad) return `it contains "${bad[0]}"`
  if (name.includes('..')) return 'it contains ".."'
  if (name.includes('@{')) return 'it contains "@{"'
  if (name.startsWith('/') || name.endsWith('/') || name.includes('//')) return 'it has an empty path component'
  if (name.endsWith('.')) return 'it ends with "."'
  for (const part of name.split('/')) {
    if (part.startsWith('.')) return 'a component starts with "."'
    if (part.endsWith('.lock')) return 'a component ends with ".lock"'
  }
  return undefined
}

/**
 * A branch name both Git (`check-ref-format`) and svc accept: svc keeps to a subset without `/`,
 * so a branch maps to one ref and one index directory. Every protocol gets this same error.
 */
export function validateBranch(name: unknown): string {
  if (typeof name !== 'string') throw new EngineError('invalid_argument', `invalid branch name ${JSON.stringify(name)}: a branch name is a string`)
  const problem = refFormatProblem(name) ?? (BRANCH_RE.test(name) ? undefined : 'use letters, digits, _ . - (at most 100, not starting with . or -)')
  if (problem) throw new EngineError('invalid_argument', `invalid branch name ${JSON.stringify(name)}: ${problem}`)
  return name
}

/** Tables whose name starts with `_` hold svc's own data (the SQL catalog, ...). */
export function isReservedTable(table: string): boolean {
  return table.startsWith('_')
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
 * Longest file name svc writes for a document. Most filesystems cap a name at 255 bytes; the
 * margin leaves room for the expiry marker's suffix (see expiryPath).
 */
export const MAX_FILE_NAME = 200
/** Names of documents whose encoded key is too long: `~<sha1 of the id>.json`, the id inside the document. */
const HASHED_NAME = /^~[0-9a-f]{40}\.json$/

/**
 * Where a document lives in the tree: `<table>/<a>/<b>/<c>/<d>/<key>.json`, a-d the first four hex
 * digits of sha1(id), one directory level each. Every commit rewrites the trees on its document's
 * path, so the cost of a commit is the size of those trees: four levels of 16 entries cost
 * `git fast-import` 40% less CPU per commit than the two levels of 256 (`<ab>/<cd>`) that
 * repositories written before used (see legacyDocPath), and the 65,536 leaf trees still hold
 * about 15 documents each at a million (docs/svc.md, "Layout"). A key whose encoded name would pass
 * MAX_FILE_NAME is stored as `~<sha1(id)>.json`, so a clone checks out on any filesystem; its id
 * is read from the document (which always starts with it).
 */
export function docPath(p: ParsedId): string {
  // crypto.hash, not a Hash object: a third of the cost for a short id (0.34 against 0.93 us), on every put.
  const h = hash('sha1', p.id, 'hex')
  return `${p.table}/${h[0]}/${h[1]}/${h[2]}/${h[3]}/${fileName(p, h)}.json`
}

/**
 * Where repositories written before the four-level layout keep a document:
 * `<table>/<ab>/<cd>/<key>.json`. Such documents stay where they are when rewritten (the engine
 * marks their entries `legacy`); documents created later go to docPath.
 */
export function legacyDocPath(p: ParsedId): string {
  const h = hash('sha1', p.id, 'hex')
  return `${p.table}/${h.slice(0, 2)}/${h.slice(2, 4)}/${fileName(p, h)}.json`
}

/** True for a path in the two-level layout of legacyDocPath. */
export function isLegacyPath(path: string): boolean {
  return LEGACY_DIRS.test(path)
}

function fileName(p: ParsedId, sha: string): string {
  const name = encodeKey(p.key)
  return name.length + 5 > MAX_FILE_NAME ? `~${sha}` : name
}

const LEGACY_DIRS = /^[^/]+\/[0-9a-f]{2}\/[0-9a-f]{2}\/[^/]+$/
/** `<table>/<dirs>/<name>` in either layout. */
const DOC_PATH = /^([^/]+)\/(?:[0-9a-f]\/[0-9a-f]\/[0-9a-f]\/[0-9a-f]|[0-9a-f]{2}\/[0-9a-f]{2})\/([^/]+)$/

/** The marker file beside a document that says it expires at `at` (epoch ms): `<doc path>.expires-<at>`. */
export function expiryPath(docFile: string, at: number): string {
  return `${docFile}.expires-${at}`
}

export type TreePath =
  | {at: number; docPath: string; kind: 'expiry'}
  | {id: string; kind: 'doc'}
  /** A document stored under a hashed name: its id is in its body. */
  | {kind: 'hashed'}

/** What a tree path the engine wrote holds (in either layout), or undefined for anything else. */
export function classifyPath(path: string): TreePath | undefined {
  const m = DOC_PATH.exec(path)
  if (!m) return undefined
  const name = m[2]
  const exp = /^(.+\.json)\.expires-(\d{1,16})$/.exec(name)
  if (exp) return {at: Number(exp[2]), docPath: path.slice(0, path.length - name.length) + exp[1], kind: 'expiry'}
  if (!name.endsWith('.json')) return undefined
  if (HASHED_NAME.test(name)) return {kind: 'hashed'}
  try {
    return {id: `${m[1]}:${decodeURIComponent(name.slice(0, -5))}`, kind: 'doc'}
  } catch {
    return undefined
  }
}

/** The id stored at a tree path, or undefined for a path that does not name its id (see classifyPath). */
export function idFromPath(path: string): string | undefined {
  const c = classifyPath(path)
  return c?.kind === 'doc' ? c.id : undefined
}

/** The id a stored document body starts with (`{\n  "id": "..."`), for documents under hashed names. */
export function idFromBody(body: Buffer): string | undefined {
  try {
    const id = (JSON.parse(body.toString('utf8')) as {id?: unknown}).id
    return typeof id === 'string' ? id : undefined
  } catch {
    return undefined
  }
}

export function tableOf(id: string): string {
  return id.slice(0, id.indexOf(':'))
}
