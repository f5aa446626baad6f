/**
 * The Redis command table: name -> arity, flags and handler. Every handler translates one
 * command into engine calls; none touches Git or the index.
 */
import type {BatchOp, Doc, Engine, Json} from '../../engine/types.js'

import {getManyParsed, getParsed, getParsedIfCached} from '../../engine/parsed-read.js'

import {
  collectionDoc,
  EXPIRES_FIELD,
  expired,
  fieldText,
  globToRegExp,
  hashFields,
  isHashField,
  listItems,
  publicFields,
  stringDoc,
  stringValue,
  typeOf,
  zsetDoc,
  zsetOrdered,
  zsetScores,
} from './keyspace.js'
import {double, err, map, OK, type Reply, ReplyError, set, status} from './resp.js'

export interface Session {
  branch: string
  /** Commands queued by MULTI; `dirty` when one of them was refused while queueing. */
  multi?: {dirty: boolean; queue: Buffer[][]}
  id: number
  name?: string
  /** Set by QUIT: close after the reply is written. */
  quit: boolean
  resp3: boolean
}

export interface Shared {
  clients(): number
  expiries: ExpiryQueue
  cursors: CursorTable
  engine: Engine
  locks: KeyLocks
  startedAt: number
  version: string
}

type Handler = (s: Session, a: Buffer[], sh: Shared) => Promise<Reply> | Reply

export interface CommandSpec {
  /** Redis convention: N exact argument count incl. the name; -N at least N. */
  arity: number
  /** Index of the first/last key argument and step, as COMMAND reports them. */
  keys: [number, number, number]
  flags: string[]
  run: Handler
}

const WRONGTYPE = err('WRONGTYPE Operation against a key holding the wrong kind of value')
const NOT_INT = err('ERR value is not an integer or out of range')
const NOT_FLOAT = err('ERR value is not a valid float')
const SYNTAX = err('ERR syntax error')

/** Serialises read-modify-write commands on the same key inside this process. */
export class KeyLocks {
  private readonly tails = new Map<string, Promise<void>>()
  async with<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve()
    let release!: () => void
    const mine = new Promise<void>((r) => (release = r))
    const tail = prev.then(() => mine)
    this.tails.set(key, tail)
    await prev
    try {
      return await fn()
    } finally {
      release()
      if (this.tails.get(key) === tail) this.tails.delete(key)
    }
  }
}

/**
 * Keys given a TTL through this server, so they are deleted (one commit each) when they expire
 * even if no client reads them again. Keys whose TTL was set before a restart expire lazily.
 */
export class ExpiryQueue {
  private readonly due = new Map<string, {at: number; branch: string; key: string}>()
  schedule(branch: string, key: string, at: number): void {
    this.due.set(`${branch}\0${key}`, {at, branch, key})
  }

  /** Deletes keys whose time has come (at most `max` per call). */
  async sweep(sh: Shared, now = Date.now(), max = 1000): Promise<number> {
    let n = 0
    for (const [k, e] of this.due) {
      if (n >= max) break
      if (e.at > now) continue
      this.due.delete(k)
      n++
      await sh.locks
        .with(e.key, async () => {
          const doc = await sh.engine.get(e.key, {branch: e.branch})
          if (doc && expired(doc, now)) await sh.engine.delete(e.key, {branch: e.branch, meta: {origin: 'redis', user: 'expiry'}})
        })
        .catch(() => undefined)
    }
    return n
  }
}

/** Stores a document written by a Redis command, scheduling its expiry when it has a TTL. */
async function put(sh: Shared, sess: Session, doc: Doc): Promise<void> {
  await sh.engine.put(doc, wopts(sess))
  const at = doc[EXPIRES_FIELD]
  if (typeof at === 'number') sh.expiries.schedule(sess.branch, doc.id, at)
}

/** SCAN cursors are numbers for clients; they stand for an engine listing cursor held here. */
export class CursorTable {
  private next = 1
  private readonly entries = new Map<number, string>()
  put(engineCursor: string): number {
    const n = this.next++
    this.entries.set(n, engineCursor)
    // Bound memory: abandoned scans are forgotten oldest first.
    if (this.entries.size > 10_000) this.entries.delete(this.entries.keys().next().value as number)
    return n
  }
  take(n: number): string | undefined {
    const c = this.entries.get(n)
    this.entries.delete(n)
    return c
  }
}

const s = (b: Buffer): string => b.toString('utf8')

/** Bare keys live in the engine's `default` table; Redis shows them without that prefix. */
export function displayKey(id: string): string {
  return id.startsWith('default:') ? id.slice(8) : id
}
const up = (b: Buffer): string => b.toString('latin1').toUpperCase()

function int(b: Buffer): number | undefined {
  const t = s(b)
  if (!/^-?\d{1,16}$/.test(t)) return undefined
  const n = Number(t)
  return Number.isSafeInteger(n) ? n : undefined
}

function float(b: Buffer): number | undefined {
  const t = s(b).toLowerCase()
  if (t === 'inf' || t === '+inf') return Infinity
  if (t === '-inf') return -Infinity
  if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/.test(t)) return undefined
  return Number(t)
}

function engineError(e: unknown): ReplyError {
  const msg = e instanceof Error ? e.message : String(e)
  return err(`ERR ${msg}`)
}

function wopts(sess: Session) {
  return {branch: sess.branch, meta: {origin: 'redis', user: sess.name}}
}

/**
 * `load` without waiting when the document is in memory and not expired; `false` when the
 * caller must use `load` (a read from Git, or an expired key to delete).
 */
function loadIfCached(sh: Shared, sess: Session, key: string): Doc | false | undefined {
  const doc = getParsedIfCached(sh.engine, key, {branch: sess.branch})
  return doc && expired(doc) ? false : doc
}

/** Reads a key, treating an expired document as absent (and deleting it lazily). */
async function load(sh: Shared, sess: Session, key: string): Promise<Doc | undefined> {
  const doc = await getParsed(sh.engine, key, {branch: sess.branch})
  if (doc && expired(doc)) {
    await sh.engine.delete(key, wopts(sess)).catch(() => undefined)
    return undefined
  }
  return doc
}

async function loadMany(sh: Shared, sess: Session, keys: string[]): Promise<Array<Doc | undefined>> {
  const docs = await getManyParsed(sh.engine, keys, {branch: sess.branch})
  return docs.map((d) => (d && expired(d) ? undefined : d))
}

function expiryOf(doc: Doc | undefined): Json | undefined {
  return doc?.[EXPIRES_FIELD]
}

// -------------------------------------------------------------------------------------------
// Strings

async function setCmd(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const key = s(a[1])
  let expiresAt: number | undefined
  let nx = false
  let xx = false
  let get = false
  let keepTtl = false
  for (let i = 3; i < a.length; i++) {
    const opt = up(a[i])
    if ((opt === 'EX' || opt === 'PX' || opt === 'EXAT' || opt === 'PXAT') && i + 1 < a.length && expiresAt === undefined && !keepTtl) {
      const n = int(a[++i])
      if (n === undefined) return NOT_INT
      if (n <= 0) return err(`ERR invalid expire time in 'set' command`)
      expiresAt = opt === 'EX' ? Date.now() + n * 1000 : opt === 'PX' ? Date.now() + n : opt === 'EXAT' ? n * 1000 : n
    } else if (opt === 'NX' && !xx) nx = true
    else if (opt === 'XX' && !nx) xx = true
    else if (opt === 'GET') get = true
    else if (opt === 'KEEPTTL' && expiresAt === undefined) keepTtl = true
    else return SYNTAX
  }
  return sh.locks.with(key, async () => {
    const needOld = nx || xx || get || keepTtl
    const old = needOld ? await load(sh, sess, key) : undefined
    if (get && old && typeOf(old) !== 'string' && typeOf(old) !== 'hash') return WRONGTYPE
    const oldReply: Reply = old ? stringValue(old) : null
    if ((nx && old) || (xx && !old)) return get ? oldReply : null
    if (keepTtl && typeof old?.[EXPIRES_FIELD] === 'number') expiresAt = old[EXPIRES_FIELD] as number
    await put(sh, sess, stringDoc(key, a[2], expiresAt))
    return get ? oldReply : OK
  })
}

// GET answers from memory without a promise when it can: a pipeline of cached GETs then runs
// in one turn of the event loop.
function getCmd(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> | Reply {
  return executeGet(sess, s(a[1]), sh)
}

/** `GET key`, for the server's fast path (a frame the parser recognised as GET outside MULTI). */
export function executeGet(sess: Session, key: string, sh: Shared): Promise<Reply> | Reply {
  try {
    const doc = loadIfCached(sh, sess, key)
    return doc === false ? load(sh, sess, key).then(getReply, engineError) : getReply(doc)
  } catch (error) {
    return engineError(error)
  }
}

function getReply(doc: Doc | undefined): Reply {
  if (!doc) return null
  const t = typeOf(doc)
  if (t !== 'string' && t !== 'hash') return WRONGTYPE
  return stringValue(doc)
}

async function getdel(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const key = s(a[1])
  return sh.locks.with(key, async () => {
    const doc = await load(sh, sess, key)
    if (!doc) return null
    const t = typeOf(doc)
    if (t !== 'string' && t !== 'hash') return WRONGTYPE
    await sh.engine.delete(key, wopts(sess))
    return stringValue(doc)
  })
}

async function getset(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  return setCmd(sess, [a[0], a[1], a[2], Buffer.from('GET')], sh)
}

async function mget(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const docs = await loadMany(sh, sess, a.slice(1).map(s))
  return docs.map((d) => (d && (typeOf(d) === 'string' || typeOf(d) === 'hash') ? stringValue(d) : null))
}

async function mset(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  if ((a.length - 1) % 2 !== 0) return err(`ERR wrong number of arguments for '${s(a[0]).toLowerCase()}' command`)
  const ops: BatchOp[] = []
  // MSET is atomic in Redis: all pairs become one commit.
  const seen = new Map<string, number>()
  for (let i = 1; i < a.length; i += 2) {
    const key = s(a[i])
    const op: BatchOp = {doc: stringDoc(key, a[i + 1]), op: 'put'}
    const at = seen.get(key)
    if (at === undefined) {
      seen.set(key, ops.length)
      ops.push(op)
    } else ops[at] = op
  }
  await sh.engine.batch(ops, wopts(sess))
  return OK
}

async function msetnx(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  if ((a.length - 1) % 2 !== 0) return err(`ERR wrong number of arguments for 'msetnx' command`)
  const keys: string[] = []
  for (let i = 1; i < a.length; i += 2) keys.push(s(a[i]))
  const existing = await loadMany(sh, sess, keys)
  if (existing.some(Boolean)) return 0
  await mset(sess, a, sh)
  return 1
}

async function incrBy(sess: Session, key: string, delta: number, sh: Shared): Promise<Reply> {
  return sh.locks.with(key, async () => {
    const doc = await load(sh, sess, key)
    let cur = 0
    if (doc) {
      if (typeOf(doc) !== 'string') return WRONGTYPE
      const v = int(Buffer.from(String(doc.value)))
      if (v === undefined) return NOT_INT
      cur = v
    }
    const next = cur + delta
    if (!Number.isSafeInteger(next)) return err('ERR increment or decrement would overflow')
    const exp = expiryOf(doc)
    await put(sh, sess, stringDoc(key, Buffer.from(String(next)), typeof exp === 'number' ? exp : undefined))
    return next
  })
}

async function appendCmd(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const key = s(a[1])
  return sh.locks.with(key, async () => {
    const doc = await load(sh, sess, key)
    if (doc && typeOf(doc) !== 'string') return WRONGTYPE
    const old = doc ? stringValue(doc) : ''
    const next = Buffer.concat([Buffer.isBuffer(old) ? old : Buffer.from(old), a[2]])
    const exp = expiryOf(doc)
    await put(sh, sess, stringDoc(key, next, typeof exp === 'number' ? exp : undefined))
    return next.length
  })
}

async function strlen(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const doc = await load(sh, sess, s(a[1]))
  if (!doc) return 0
  if (typeOf(doc) !== 'string') return WRONGTYPE
  const v = stringValue(doc)
  return Buffer.isBuffer(v) ? v.length : Buffer.byteLength(v)
}

// -------------------------------------------------------------------------------------------
// Keys

async function del(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const keys = [...new Set(a.slice(1).map(s))]
  if (keys.length === 1) {
    const r = await sh.engine.delete(keys[0], wopts(sess))
    return r.existed ? 1 : 0
  }
  const docs = await loadMany(sh, sess, keys)
  const present = keys.filter((_, i) => docs[i])
  if (present.length === 0) return 0
  await sh.engine.batch(
    present.map((id) => ({id, op: 'delete'})),
    wopts(sess),
  )
  return present.length
}

async function exists(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const docs = await loadMany(sh, sess, a.slice(1).map(s))
  return docs.filter(Boolean).length
}

async function typeCmd(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  return status(typeOf(await load(sh, sess, s(a[1]))))
}

/** Walks the engine listing under the pattern's literal prefix; bounded by `budget` documents. */
async function listMatching(
  sh: Shared,
  sess: Session,
  pattern: string,
  cursor: string | undefined,
  budget: number,
  type?: string,
): Promise<{keys: string[]; next?: string}> {
  const {prefix, re} = globToRegExp(pattern)
  // A prefix without ':' may match bare keys of the default table and table names alike.
  const enginePrefix = prefix.includes(':') ? prefix : undefined
  const keys: string[] = []
  let next = cursor
  let seen = 0
  const now = Date.now()
  do {
    const page = await sh.engine.list({branch: sess.branch, cursor: next, limit: Math.min(1000, budget - seen), prefix: enginePrefix})
    for (const d of page.docs) {
      const key = displayKey(d.id)
      if (re.test(key) && !expired(d, now) && (!type || typeOf(d) === type)) keys.push(key)
    }
    seen += page.docs.length
    next = page.nextCursor
  } while (next && seen < budget)
  return {keys, next}
}

async function keysCmd(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const {keys} = await listMatching(sh, sess, s(a[1]), undefined, Number.MAX_SAFE_INTEGER)
  return keys
}

async function scan(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const c = int(a[1])
  if (c === undefined || c < 0) return err('ERR invalid cursor')
  let pattern = '*'
  let count = 10
  let type: string | undefined
  for (let i = 2; i < a.length; i++) {
    const opt = up(a[i])
    if (opt === 'MATCH' && i + 1 < a.length) pattern = s(a[++i])
    else if (opt === 'COUNT' && i + 1 < a.length) {
      const n = int(a[++i])
      if (n === undefined) return NOT_INT
      if (n < 1) return SYNTAX
      count = n
    } else if (opt === 'TYPE' && i + 1 < a.length) type = s(a[++i]).toLowerCase()
    else return SYNTAX
  }
  let engineCursor: string | undefined
  if (c !== 0) {
    engineCursor = sh.cursors.take(c)
    if (engineCursor === undefined) return ['0', []]
  }
  const {keys, next} = await listMatching(sh, sess, pattern, engineCursor, count, type)
  return [next ? String(sh.cursors.put(next)) : '0', keys]
}

async function dbsize(sess: Session, _a: Buffer[], sh: Shared): Promise<Reply> {
  return sh.engine.count({branch: sess.branch})
}

async function expireCmd(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const cmd = s(a[0]).toLowerCase()
  const n = int(a[2])
  if (n === undefined) return NOT_INT
  const key = s(a[1])
  const at = cmd === 'expire' ? Date.now() + n * 1000 : cmd === 'pexpire' ? Date.now() + n : cmd === 'expireat' ? n * 1000 : n
  return sh.locks.with(key, async () => {
    const doc = await load(sh, sess, key)
    if (!doc) return 0
    if (at <= Date.now()) {
      await sh.engine.delete(key, wopts(sess))
      return 1
    }
    await put(sh, sess, {...doc, [EXPIRES_FIELD]: at})
    return 1
  })
}

async function ttlCmd(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const doc = await load(sh, sess, s(a[1]))
  if (!doc) return -2
  const e = doc[EXPIRES_FIELD]
  if (typeof e !== 'number') return -1
  const ms = Math.max(0, e - Date.now())
  return s(a[0]).toLowerCase() === 'pttl' ? ms : Math.round(ms / 1000)
}

async function persist(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const key = s(a[1])
  return sh.locks.with(key, async () => {
    const doc = await load(sh, sess, key)
    if (!doc || typeof doc[EXPIRES_FIELD] !== 'number') return 0
    const copy: Doc = {...doc}
    delete copy[EXPIRES_FIELD]
    await put(sh, sess, copy)
    return 1
  })
}

// -------------------------------------------------------------------------------------------
// Hashes

async function withDoc(
  sess: Session,
  sh: Shared,
  key: string,
  want: 'hash' | 'list' | 'set' | 'zset',
  fn: (doc: Doc | undefined) => Promise<Reply>,
): Promise<Reply> {
  return sh.locks.with(key, async () => {
    const doc = await load(sh, sess, key)
    if (doc && typeOf(doc) !== want) return WRONGTYPE
    return fn(doc)
  })
}

async function hset(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  if ((a.length - 2) % 2 !== 0) return err(`ERR wrong number of arguments for '${s(a[0]).toLowerCase()}' command`)
  const key = s(a[1])
  for (let i = 2; i < a.length; i += 2) {
    if (!isHashField(s(a[i]))) return err(`ERR hash field '${s(a[i])}' is reserved by svc (it maps to the document id or bookkeeping)`)
  }
  return withDoc(sess, sh, key, 'hash', async (doc) => {
    const next: Doc = doc ? {...doc} : {id: key}
    let added = 0
    for (let i = 2; i < a.length; i += 2) {
      const f = s(a[i])
      if (!(f in next)) added++
      next[f] = s(a[i + 1])
    }
    await put(sh, sess, next)
    return s(a[0]).toLowerCase() === 'hmset' ? OK : added
  })
}

async function hsetnx(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const key = s(a[1])
  const f = s(a[2])
  if (!isHashField(f)) return err(`ERR hash field '${f}' is reserved by svc`)
  return withDoc(sess, sh, key, 'hash', async (doc) => {
    if (doc && f in doc) return 0
    await put(sh, sess, {...(doc ?? {id: key}), [f]: s(a[3])})
    return 1
  })
}

async function readHash(sess: Session, sh: Shared, key: string): Promise<Doc | ReplyError | undefined> {
  const doc = await load(sh, sess, key)
  if (doc && typeOf(doc) !== 'hash' && typeOf(doc) !== 'string') return WRONGTYPE
  return doc
}

async function hget(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const doc = await readHash(sess, sh, s(a[1]))
  if (doc instanceof ReplyError) return doc
  const f = s(a[2])
  if (!doc || !isHashField(f) || !(f in doc)) return null
  return fieldText(doc[f])
}

async function hmget(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const doc = await readHash(sess, sh, s(a[1]))
  if (doc instanceof ReplyError) return doc
  return a.slice(2).map((b) => {
    const f = s(b)
    return doc && isHashField(f) && f in doc ? fieldText(doc[f]) : null
  })
}

async function hgetall(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const doc = await readHash(sess, sh, s(a[1]))
  if (doc instanceof ReplyError) return doc
  return map(doc ? hashFields(doc) : [])
}

async function hkeysVals(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const doc = await readHash(sess, sh, s(a[1]))
  if (doc instanceof ReplyError) return doc
  const fields = doc ? hashFields(doc) : []
  const cmd = s(a[0]).toLowerCase()
  if (cmd === 'hlen') return fields.length
  return fields.map(([k, v]) => (cmd === 'hkeys' ? k : v))
}

async function hexists(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const doc = await readHash(sess, sh, s(a[1]))
  if (doc instanceof ReplyError) return doc
  const f = s(a[2])
  return doc && isHashField(f) && f in doc ? 1 : 0
}

async function hdel(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const key = s(a[1])
  return withDoc(sess, sh, key, 'hash', async (doc) => {
    if (!doc) return 0
    const next: Doc = {...doc}
    let removed = 0
    for (const b of a.slice(2)) {
      const f = s(b)
      if (isHashField(f) && f in next) {
        delete next[f]
        removed++
      }
    }
    if (removed === 0) return 0
    // Redis deletes a hash whose last field is removed.
    if (hashFields(next).length === 0) await sh.engine.delete(key, wopts(sess))
    else await put(sh, sess, next)
    return removed
  })
}

async function hincrby(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const key = s(a[1])
  const f = s(a[2])
  const delta = int(a[3])
  if (delta === undefined) return NOT_INT
  if (!isHashField(f)) return err(`ERR hash field '${f}' is reserved by svc`)
  return withDoc(sess, sh, key, 'hash', async (doc) => {
    const cur = doc?.[f]
    const n = cur === undefined ? 0 : typeof cur === 'number' ? cur : int(Buffer.from(fieldText(cur)))
    if (n === undefined || !Number.isSafeInteger(n)) return err('ERR hash value is not an integer')
    const next = n + delta
    // Keep numbers numeric when the field already was (a SQL/REST document); Redis-made fields are strings.
    await put(sh, sess, {...(doc ?? {id: key}), [f]: typeof cur === 'number' ? next : String(next)})
    return next
  })
}

// -------------------------------------------------------------------------------------------
// Lists

async function push(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const key = s(a[1])
  const cmd = s(a[0]).toLowerCase()
  return withDoc(sess, sh, key, 'list', async (doc) => {
    if (!doc && cmd.endsWith('x')) return 0
    const items = listItems(doc)
    const vals = a.slice(2).map(s)
    if (cmd.startsWith('l')) for (const v of vals) items.unshift(v)
    else items.push(...vals)
    await put(sh, sess, collectionDoc(key, 'list', items, expiryOf(doc)))
    return items.length
  })
}

async function pop(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const key = s(a[1])
  let count: number | undefined
  if (a.length > 2) {
    count = int(a[2])
    if (count === undefined || count < 0) return err('ERR value is out of range, must be positive')
  }
  const left = s(a[0]).toLowerCase() === 'lpop'
  return withDoc(sess, sh, key, 'list', async (doc) => {
    if (!doc) return null
    const items = listItems(doc)
    const n = Math.min(count ?? 1, items.length)
    const out = left ? items.splice(0, n) : items.splice(items.length - n, n).reverse()
    if (n > 0) {
      if (items.length === 0) await sh.engine.delete(key, wopts(sess))
      else await put(sh, sess, collectionDoc(key, 'list', items, expiryOf(doc)))
    }
    if (count === undefined) return out[0] ?? null
    return out
  })
}

async function readTyped(sess: Session, sh: Shared, key: string, want: string): Promise<Doc | ReplyError | undefined> {
  const doc = await load(sh, sess, key)
  if (doc && typeOf(doc) !== want) return WRONGTYPE
  return doc
}

function normRange(start: number, stop: number, len: number): [number, number] {
  if (start < 0) start = Math.max(0, len + start)
  if (stop < 0) stop = len + stop
  if (stop >= len) stop = len - 1
  return [start, stop]
}

async function lrange(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const start = int(a[2])
  const stop = int(a[3])
  if (start === undefined || stop === undefined) return NOT_INT
  const doc = await readTyped(sess, sh, s(a[1]), 'list')
  if (doc instanceof ReplyError) return doc
  const items = listItems(doc)
  const [b, e] = normRange(start, stop, items.length)
  return b > e ? [] : items.slice(b, e + 1)
}

async function llen(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const doc = await readTyped(sess, sh, s(a[1]), 'list')
  if (doc instanceof ReplyError) return doc
  return listItems(doc).length
}

async function lindex(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const i = int(a[2])
  if (i === undefined) return NOT_INT
  const doc = await readTyped(sess, sh, s(a[1]), 'list')
  if (doc instanceof ReplyError) return doc
  const items = listItems(doc)
  return items[i < 0 ? items.length + i : i] ?? null
}

// -------------------------------------------------------------------------------------------
// Sets

async function sadd(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const key = s(a[1])
  return withDoc(sess, sh, key, 'set', async (doc) => {
    const members = new Set(listItems(doc))
    const before = members.size
    for (const b of a.slice(2)) members.add(s(b))
    const added = members.size - before
    if (added > 0) await put(sh, sess, collectionDoc(key, 'set', [...members].sort(), expiryOf(doc)))
    return added
  })
}

async function srem(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const key = s(a[1])
  return withDoc(sess, sh, key, 'set', async (doc) => {
    if (!doc) return 0
    const members = new Set(listItems(doc))
    let removed = 0
    for (const b of a.slice(2)) if (members.delete(s(b))) removed++
    if (removed === 0) return 0
    if (members.size === 0) await sh.engine.delete(key, wopts(sess))
    else await put(sh, sess, collectionDoc(key, 'set', [...members], expiryOf(doc)))
    return removed
  })
}

async function smembers(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const doc = await readTyped(sess, sh, s(a[1]), 'set')
  if (doc instanceof ReplyError) return doc
  return set(listItems(doc))
}

async function sismember(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const doc = await readTyped(sess, sh, s(a[1]), 'set')
  if (doc instanceof ReplyError) return doc
  return listItems(doc).includes(s(a[2])) ? 1 : 0
}

async function scard(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const doc = await readTyped(sess, sh, s(a[1]), 'set')
  if (doc instanceof ReplyError) return doc
  return listItems(doc).length
}

// -------------------------------------------------------------------------------------------
// Sorted sets

async function zadd(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const key = s(a[1])
  let i = 2
  let nx = false
  let xx = false
  let ch = false
  let incr = false
  for (; i < a.length; i++) {
    const o = up(a[i])
    if (o === 'NX') nx = true
    else if (o === 'XX') xx = true
    else if (o === 'CH') ch = true
    else if (o === 'INCR') incr = true
    else if (o === 'GT' || o === 'LT') return err('ERR GT and LT options are not supported by svc')
    else break
  }
  const rest = a.slice(i)
  if (rest.length === 0 || rest.length % 2 !== 0) return SYNTAX
  if (nx && xx) return err('ERR XX and NX options at the same time are not compatible')
  if (incr && rest.length !== 2) return err('ERR INCR option supports a single increment-element pair')
  const pairs: Array<[number, string]> = []
  for (let j = 0; j < rest.length; j += 2) {
    const sc = float(rest[j])
    if (sc === undefined || Number.isNaN(sc)) return NOT_FLOAT
    pairs.push([sc, s(rest[j + 1])])
  }
  return withDoc(sess, sh, key, 'zset', async (doc) => {
    const scores = zsetScores(doc)
    let added = 0
    let changed = 0
    let incrResult: null | number = null
    for (const [sc, m] of pairs) {
      const cur = scores.get(m)
      if ((nx && cur !== undefined) || (xx && cur === undefined)) continue
      const next = incr ? (cur ?? 0) + sc : sc
      if (Number.isNaN(next)) return err('ERR resulting score is not a number (NaN)')
      if (cur === undefined) added++
      else if (cur !== next) changed++
      scores.set(m, next)
      incrResult = next
    }
    if (added + changed > 0) await put(sh, sess, zsetDoc(key, scores, expiryOf(doc)))
    if (incr) return incrResult === null ? null : double(incrResult)
    return ch ? added + changed : added
  })
}

async function zrange(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  let withScores = false
  let rev = s(a[0]).toLowerCase() === 'zrevrange'
  for (let i = 4; i < a.length; i++) {
    const o = up(a[i])
    if (o === 'WITHSCORES') withScores = true
    else if (o === 'REV') rev = true
    else if (o === 'BYSCORE' || o === 'BYLEX' || o === 'LIMIT') return err(`ERR ZRANGE ${o} is not supported by svc`)
    else return SYNTAX
  }
  const start = int(a[2])
  const stop = int(a[3])
  if (start === undefined || stop === undefined) return NOT_INT
  const doc = await readTyped(sess, sh, s(a[1]), 'zset')
  if (doc instanceof ReplyError) return doc
  const ordered = zsetOrdered(zsetScores(doc))
  if (rev) ordered.reverse()
  const [b, e] = normRange(start, stop, ordered.length)
  const slice = b > e ? [] : ordered.slice(b, e + 1)
  if (!withScores) return slice.map(([m]) => m)
  if (sess.resp3) return slice.map(([m, sc]) => [m, double(sc)])
  return slice.flatMap(([m, sc]): Reply[] => [m, double(sc)])
}

async function zscore(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const doc = await readTyped(sess, sh, s(a[1]), 'zset')
  if (doc instanceof ReplyError) return doc
  const sc = zsetScores(doc).get(s(a[2]))
  return sc === undefined ? null : double(sc)
}

async function zrem(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const key = s(a[1])
  return withDoc(sess, sh, key, 'zset', async (doc) => {
    if (!doc) return 0
    const scores = zsetScores(doc)
    let removed = 0
    for (const b of a.slice(2)) if (scores.delete(s(b))) removed++
    if (removed === 0) return 0
    if (scores.size === 0) await sh.engine.delete(key, wopts(sess))
    else await put(sh, sess, zsetDoc(key, scores, expiryOf(doc)))
    return removed
  })
}

async function zcard(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const doc = await readTyped(sess, sh, s(a[1]), 'zset')
  if (doc instanceof ReplyError) return doc
  return zsetScores(doc).size
}

/** ZRANGEBYSCORE / ZCOUNT bounds: `1`, `(1` (exclusive), `-inf`, `+inf`. */
function scoreBound(b: Buffer): undefined | {excl: boolean; v: number} {
  let t = s(b)
  const excl = t.startsWith('(')
  if (excl) t = t.slice(1)
  const v = float(Buffer.from(t))
  return v === undefined ? undefined : {excl, v}
}

function inRange(sc: number, min: {excl: boolean; v: number}, max: {excl: boolean; v: number}): boolean {
  return (min.excl ? sc > min.v : sc >= min.v) && (max.excl ? sc < max.v : sc <= max.v)
}

async function zrangebyscore(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const rev = s(a[0]).toLowerCase() === 'zrevrangebyscore'
  const min = scoreBound(rev ? a[3] : a[2])
  const max = scoreBound(rev ? a[2] : a[3])
  if (!min || !max) return err('ERR min or max is not a float')
  let withScores = false
  let offset = 0
  let count = -1
  for (let i = 4; i < a.length; i++) {
    const o = up(a[i])
    if (o === 'WITHSCORES') withScores = true
    else if (o === 'LIMIT' && i + 2 < a.length) {
      const off = int(a[++i])
      const cnt = int(a[++i])
      if (off === undefined || cnt === undefined) return NOT_INT
      offset = off
      count = cnt
    } else return SYNTAX
  }
  const doc = await readTyped(sess, sh, s(a[1]), 'zset')
  if (doc instanceof ReplyError) return doc
  let hits = zsetOrdered(zsetScores(doc)).filter(([, sc]) => inRange(sc, min, max))
  if (rev) hits.reverse()
  hits = hits.slice(offset, count < 0 ? undefined : offset + count)
  if (!withScores) return hits.map(([m]) => m)
  if (sess.resp3) return hits.map(([m, sc]) => [m, double(sc)])
  return hits.flatMap(([m, sc]): Reply[] => [m, double(sc)])
}

async function zcount(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const min = scoreBound(a[2])
  const max = scoreBound(a[3])
  if (!min || !max) return err('ERR min or max is not a float')
  const doc = await readTyped(sess, sh, s(a[1]), 'zset')
  if (doc instanceof ReplyError) return doc
  return [...zsetScores(doc).values()].filter((sc) => inRange(sc, min, max)).length
}

async function zrank(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const doc = await readTyped(sess, sh, s(a[1]), 'zset')
  if (doc instanceof ReplyError) return doc
  const ordered = zsetOrdered(zsetScores(doc))
  if (s(a[0]).toLowerCase() === 'zrevrank') ordered.reverse()
  const i = ordered.findIndex(([m]) => m === s(a[2]))
  return i < 0 ? null : i
}

async function rename(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const from = s(a[1])
  const to = s(a[2])
  const nx = s(a[0]).toLowerCase() === 'renamenx'
  return sh.locks.with(from, async () => {
    const doc = await load(sh, sess, from)
    if (!doc) return err('ERR no such key')
    const [target] = await loadMany(sh, sess, [to])
    if (nx && target) return 0
    if (displayKey(doc.id) === to || doc.id === to) return nx ? 0 : OK
    // One commit: the old id deleted, the document stored under the new one.
    await sh.engine.batch(
      [
        {id: doc.id, op: 'delete'},
        {doc: {...doc, id: to}, op: 'put'},
      ],
      wopts(sess),
    )
    return nx ? 1 : OK
  })
}

async function incrByFloat(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const key = s(a[1])
  const delta = float(a[2])
  if (delta === undefined || !Number.isFinite(delta)) return NOT_FLOAT
  return sh.locks.with(key, async () => {
    const doc = await load(sh, sess, key)
    let cur = 0
    if (doc) {
      if (typeOf(doc) !== 'string') return WRONGTYPE
      const v = float(Buffer.from(String(doc.value)))
      if (v === undefined) return NOT_FLOAT
      cur = v
    }
    const next = String(Number((cur + delta).toPrecision(17)))
    const exp = expiryOf(doc)
    await put(sh, sess, stringDoc(key, Buffer.from(next), typeof exp === 'number' ? exp : undefined))
    return next
  })
}

async function getrange(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const start = int(a[2])
  const end = int(a[3])
  if (start === undefined || end === undefined) return NOT_INT
  const doc = await load(sh, sess, s(a[1]))
  if (!doc) return ''
  if (typeOf(doc) !== 'string') return WRONGTYPE
  const v = stringValue(doc)
  const buf = Buffer.isBuffer(v) ? v : Buffer.from(v)
  const [b, e] = normRange(start, end, buf.length)
  return b > e ? '' : buf.subarray(b, e + 1)
}

// -------------------------------------------------------------------------------------------
// svc's own commands

/** SEARCH query [LIMIT n] [OFFSET n] [TABLE t] -> [total, id1, doc1-json, id2, doc2-json, ...] */
async function search(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  let limit = 10
  let offset = 0
  let table: string | undefined
  for (let i = 2; i < a.length; i++) {
    const o = up(a[i])
    if ((o === 'LIMIT' || o === 'OFFSET') && i + 1 < a.length) {
      const n = int(a[++i])
      if (n === undefined || n < 0) return NOT_INT
      if (o === 'LIMIT') limit = n
      else offset = n
    } else if (o === 'TABLE' && i + 1 < a.length) table = s(a[++i])
    else return SYNTAX
  }
  const r = await sh.engine.search(s(a[1]), {branch: sess.branch, limit, offset, table})
  const out: Reply[] = [r.total]
  for (const h of r.hits) out.push(displayKey(h.id), JSON.stringify(publicFields(h.doc)))
  return out
}

/** HISTORY key [LIMIT n] [CURSOR c] -> one map per version, newest first. */
async function history(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  let limit = 10
  let cursor: string | undefined
  for (let i = 2; i < a.length; i++) {
    const o = up(a[i])
    if (o === 'LIMIT' && i + 1 < a.length) {
      const n = int(a[++i])
      if (n === undefined || n < 1) return NOT_INT
      limit = n
    } else if (o === 'CURSOR' && i + 1 < a.length) cursor = s(a[++i])
    else return SYNTAX
  }
  const r = await sh.engine.history(s(a[1]), {branch: sess.branch, cursor, limit})
  const versions: Reply[] = r.versions.map((v) =>
    map([
      ['commit', v.commit],
      ['time', v.time],
      ['op', v.op],
      ['value', v.doc ? stringValue(v.doc) : null],
    ]),
  )
  if (r.nextCursor) versions.push(map([['next-cursor', r.nextCursor]]))
  return versions
}

/** BRANCH | BRANCH USE name | BRANCH LIST | BRANCH CREATE name [FROM base] */
async function branch(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  if (a.length === 1) return sess.branch
  const sub = up(a[1])
  if (sub === 'USE' && a.length === 3) {
    const name = s(a[2])
    const all = await sh.engine.branches()
    if (!all.some((b) => b.name === name)) return err(`ERR no such branch '${name}' (create it with BRANCH CREATE ${name})`)
    sess.branch = name
    return OK
  }
  if (sub === 'LIST' && a.length === 2) return (await sh.engine.branches()).map((b) => b.name)
  if (sub === 'CREATE' && (a.length === 3 || (a.length === 5 && up(a[3]) === 'FROM'))) {
    await sh.engine.createBranch(s(a[2]), {from: a.length === 5 ? s(a[4]) : sess.branch})
    return OK
  }
  return err(`ERR unknown BRANCH subcommand or wrong arguments; try BRANCH, BRANCH USE <name>, BRANCH LIST, BRANCH CREATE <name> [FROM <base>]`)
}

// -------------------------------------------------------------------------------------------
// Connection and server

function ping(_s: Session, a: Buffer[]): Reply {
  if (a.length > 2) return err(`ERR wrong number of arguments for 'ping' command`)
  return a.length === 2 ? a[1] : status('PONG')
}

function hello(sess: Session, a: Buffer[], sh: Shared): Reply {
  let i = 1
  if (a.length > 1) {
    const v = int(a[1])
    if (v === undefined) return err('ERR Protocol version is not an integer or out of range')
    if (v !== 2 && v !== 3) return err('NOPROTO unsupported protocol version')
    i = 2
    for (; i < a.length; i++) {
      const o = up(a[i])
      if (o === 'AUTH') return authError()
      if (o === 'SETNAME' && i + 1 < a.length) sess.name = s(a[++i])
      else return SYNTAX
    }
    sess.resp3 = v === 3
  }
  return map([
    ['server', 'redis'],
    ['version', '7.0.0'],
    ['proto', sess.resp3 ? 3 : 2],
    ['id', sess.id],
    ['mode', 'standalone'],
    ['role', 'master'],
    ['modules', []],
    ['svc-version', sh.version],
    ['branch', sess.branch],
  ])
}

function authError(): ReplyError {
  // Worded like Redis' own reply when no password is configured, which clients such as ioredis
  // recognise and treat as a warning rather than a failed connection.
  return err('ERR AUTH <password> called without any password configured for the default user. svc does not support AUTH on its Redis protocol: connect without a password')
}

async function info(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const want = a.length > 1 ? s(a[1]).toLowerCase() : 'default'
  const st = sh.engine.stats()
  const sections: Record<string, string[]> = {
    clients: [`connected_clients:${sh.clients()}`],
    keyspace: [`db0:keys=${st.documents},expires=0,avg_ttl=0`],
    persistence: ['loading:0', `svc_wal_pending_entries:${st.pendingEntries}`],
    server: [
      'redis_version:7.0.0',
      `svc_version:${sh.version}`,
      'redis_mode:standalone',
      `process_id:${process.pid}`,
      `uptime_in_seconds:${Math.floor((Date.now() - sh.startedAt) / 1000)}`,
      `svc_branch:${sess.branch}`,
    ],
  }
  const names = want === 'default' || want === 'all' || want === 'everything' ? Object.keys(sections) : [want]
  const text = names
    .filter((n) => sections[n])
    .map((n) => `# ${n[0].toUpperCase()}${n.slice(1)}\r\n${sections[n].join('\r\n')}\r\n`)
    .join('\r\n')
  return {kind: 'verbatim', value: text}
}

function select(_s: Session, a: Buffer[]): Reply {
  const n = int(a[1])
  if (n === undefined) return NOT_INT
  if (n !== 0) return err('ERR DB index is out of range (svc has one database per branch: use BRANCH USE <name>)')
  return OK
}

function quit(sess: Session): Reply {
  sess.quit = true
  return OK
}

function client(sess: Session, a: Buffer[]): Reply {
  const sub = up(a[1])
  if (sub === 'SETNAME' && a.length === 3) {
    sess.name = s(a[2])
    return OK
  }
  if (sub === 'GETNAME') return sess.name ?? null
  if (sub === 'ID') return sess.id
  if (sub === 'SETINFO') return OK
  return err(`ERR unknown subcommand '${s(a[1])}'. Try CLIENT SETNAME, GETNAME, ID`)
}

function config(_s: Session, a: Buffer[]): Reply {
  const sub = up(a[1])
  if (sub === 'GET' && a.length >= 3) {
    // Tools (redis-benchmark, redis-cli) probe these; svc's durability is its WAL, not save/AOF.
    const known: Record<string, string> = {appendonly: 'no', databases: '1', save: ''}
    const out: Array<[Reply, Reply]> = []
    for (const b of a.slice(2)) {
      const re = globToRegExp(s(b).toLowerCase()).re
      for (const [k, v] of Object.entries(known)) if (re.test(k)) out.push([k, v])
    }
    return map(out)
  }
  return err(`ERR CONFIG ${s(a[1])} is not supported by svc`)
}

function commandCmd(_s: Session, a: Buffer[]): Reply {
  const describe = (name: string): Reply => {
    const c = COMMANDS.get(name)
    if (!c) return null
    return [name, c.arity, c.flags.map((f) => status(f)), c.keys[0], c.keys[1], c.keys[2]]
  }
  if (a.length === 1) return [...COMMANDS.keys()].map(describe)
  const sub = up(a[1])
  if (sub === 'COUNT') return COMMANDS.size
  if (sub === 'INFO') return a.slice(2).map((b) => describe(s(b).toLowerCase()))
  if (sub === 'DOCS') return map([])
  if (sub === 'LIST') return [...COMMANDS.keys()]
  return err(`ERR unknown subcommand '${s(a[1])}'. Try COMMAND HELP.`)
}

// -------------------------------------------------------------------------------------------

const W = ['write']
const R = ['readonly', 'fast']
const K1: [number, number, number] = [1, 1, 1]
const NK: [number, number, number] = [0, 0, 0]

function c(arity: number, flags: string[], keys: [number, number, number], run: Handler): CommandSpec {
  return {arity, flags, keys, run}
}

export const COMMANDS = new Map<string, CommandSpec>([
  ['append', c(3, W, K1, appendCmd)],
  ['auth', c(-2, ['noscript', 'loading', 'stale', 'fast'], NK, () => authError())],
  ['branch', c(-1, ['admin'], NK, branch)],
  ['client', c(-2, ['admin'], NK, client)],
  ['command', c(-1, ['loading', 'stale'], NK, commandCmd)],
  ['config', c(-2, ['admin'], NK, config)],
  ['dbsize', c(1, R, NK, dbsize)],
  ['decr', c(2, W, K1, (se, a, sh) => incrBy(se, s(a[1]), -1, sh))],
  ['decrby', c(3, W, K1, (se, a, sh) => (int(a[2]) === undefined ? NOT_INT : incrBy(se, s(a[1]), -(int(a[2]) as number), sh)))],
  ['del', c(-2, W, [1, -1, 1], del)],
  ['echo', c(2, ['fast'], NK, (_s, a) => a[1])],
  ['exists', c(-2, R, [1, -1, 1], exists)],
  ['expire', c(-3, W, K1, expireCmd)],
  ['expireat', c(-3, W, K1, expireCmd)],
  ['get', c(2, R, K1, getCmd)],
  ['getdel', c(2, W, K1, getdel)],
  ['getrange', c(4, ['readonly'], K1, getrange)],
  ['getset', c(3, W, K1, getset)],
  ['hdel', c(-3, W, K1, hdel)],
  ['hello', c(-1, ['noscript', 'loading', 'stale', 'fast'], NK, hello)],
  ['hexists', c(3, R, K1, hexists)],
  ['hget', c(3, R, K1, hget)],
  ['hgetall', c(2, ['readonly'], K1, hgetall)],
  ['hincrby', c(4, W, K1, hincrby)],
  ['history', c(-2, ['readonly'], K1, history)],
  ['hkeys', c(2, ['readonly'], K1, hkeysVals)],
  ['hlen', c(2, R, K1, hkeysVals)],
  ['hmget', c(-3, R, K1, hmget)],
  ['hmset', c(-4, W, K1, hset)],
  ['hset', c(-4, W, K1, hset)],
  ['hsetnx', c(4, W, K1, hsetnx)],
  ['hvals', c(2, ['readonly'], K1, hkeysVals)],
  ['incr', c(2, W, K1, (se, a, sh) => incrBy(se, s(a[1]), 1, sh))],
  ['incrby', c(3, W, K1, (se, a, sh) => (int(a[2]) === undefined ? NOT_INT : incrBy(se, s(a[1]), int(a[2]) as number, sh)))],
  ['incrbyfloat', c(3, W, K1, incrByFloat)],
  ['info', c(-1, ['loading', 'stale'], NK, info)],
  ['keys', c(2, ['readonly'], NK, keysCmd)],
  ['lindex', c(3, ['readonly'], K1, lindex)],
  ['llen', c(2, R, K1, llen)],
  ['lpop', c(-2, W, K1, pop)],
  ['lpush', c(-3, W, K1, push)],
  ['lpushx', c(-3, W, K1, push)],
  ['lrange', c(4, ['readonly'], K1, lrange)],
  ['mget', c(-2, R, [1, -1, 1], mget)],
  ['mset', c(-3, W, [1, -1, 2], mset)],
  ['msetnx', c(-3, W, [1, -1, 2], msetnx)],
  ['persist', c(2, W, K1, persist)],
  ['pexpire', c(-3, W, K1, expireCmd)],
  ['pexpireat', c(-3, W, K1, expireCmd)],
  ['ping', c(-1, ['fast', 'stale'], NK, ping)],
  ['pttl', c(2, R, K1, ttlCmd)],
  ['quit', c(-1, ['fast'], NK, quit)],
  ['rename', c(3, W, [1, 2, 1], rename)],
  ['renamenx', c(3, W, [1, 2, 1], rename)],
  ['rpop', c(-2, W, K1, pop)],
  ['rpush', c(-3, W, K1, push)],
  ['rpushx', c(-3, W, K1, push)],
  ['sadd', c(-3, W, K1, sadd)],
  ['scan', c(-2, ['readonly'], NK, scan)],
  ['scard', c(2, R, K1, scard)],
  ['search', c(-2, ['readonly'], NK, search)],
  ['select', c(2, ['loading', 'stale', 'fast'], NK, select)],
  ['set', c(-3, W, K1, setCmd)],
  ['setex', c(4, W, K1, (se, a, sh) => setCmd(se, [a[0], a[1], a[3], Buffer.from('EX'), a[2]], sh))],
  ['psetex', c(4, W, K1, (se, a, sh) => setCmd(se, [a[0], a[1], a[3], Buffer.from('PX'), a[2]], sh))],
  ['setnx', c(3, W, K1, async (se, a, sh) => ((await setCmd(se, [a[0], a[1], a[2], Buffer.from('NX')], sh)) === null ? 0 : 1))],
  ['sismember', c(3, R, K1, sismember)],
  ['smembers', c(2, ['readonly'], K1, smembers)],
  ['srem', c(-3, W, K1, srem)],
  ['strlen', c(2, R, K1, strlen)],
  ['ttl', c(2, R, K1, ttlCmd)],
  ['type', c(2, R, K1, typeCmd)],
  ['unlink', c(-2, W, [1, -1, 1], del)],
  ['zadd', c(-4, W, K1, zadd)],
  ['zcard', c(2, R, K1, zcard)],
  ['zcount', c(4, R, K1, zcount)],
  ['zincrby', c(4, W, K1, (se, a, sh) => zadd(se, [a[0], a[1], Buffer.from('INCR'), a[2], a[3]], sh))],
  ['zrange', c(-4, ['readonly'], K1, zrange)],
  ['zrangebyscore', c(-4, ['readonly'], K1, zrangebyscore)],
  ['zrank', c(3, R, K1, zrank)],
  ['zrem', c(-3, W, K1, zrem)],
  ['zrevrangebyscore', c(-4, ['readonly'], K1, zrangebyscore)],
  ['zrevrank', c(3, R, K1, zrank)],
  ['zrevrange', c(-4, ['readonly'], K1, zrange)],
  ['zscore', c(3, R, K1, zscore)],
])

const TX_COMMANDS = new Set(['multi', 'exec', 'discard', 'watch', 'unwatch'])

/**
 * MULTI/EXEC/DISCARD: commands are queued and run in order at EXEC. svc runs them one after the
 * other without isolating them from other clients, and each write is its own commit (see
 * docs/svc-redis.md); WATCH is not supported.
 */
async function transaction(sess: Session, name: string, args: Buffer[], sh: Shared): Promise<Reply> {
  if (name === 'multi') {
    if (sess.multi) return err('ERR MULTI calls can not be nested')
    sess.multi = {dirty: false, queue: []}
    return OK
  }
  if (name === 'discard') {
    if (!sess.multi) return err('ERR DISCARD without MULTI')
    sess.multi = undefined
    return OK
  }
  if (name === 'exec') {
    const m = sess.multi
    if (!m) return err('ERR EXEC without MULTI')
    sess.multi = undefined
    if (m.dirty) return err('EXECABORT Transaction discarded because of previous errors.')
    const out: Reply[] = []
    for (const cmd of m.queue) out.push(await execute(sess, cmd, sh))
    return out
  }
  return err(`ERR ${name.toUpperCase()} is not supported by svc`)
}

/**
 * Runs one command; every failure becomes an error reply, never an exception. The reply comes
 * without a promise when the handler needed no I/O.
 */
export function execute(sess: Session, args: Buffer[], sh: Shared): Promise<Reply> | Reply {
  if (args.length === 0) return null
  const name = s(args[0]).toLowerCase()
  if (TX_COMMANDS.has(name)) return transaction(sess, name, args, sh)
  const spec = COMMANDS.get(name)
  if (sess.multi) {
    const bad = !spec ? `ERR unknown command '${s(args[0]).slice(0, 128)}'` : (spec.arity > 0 && args.length !== spec.arity) || (spec.arity < 0 && args.length < -spec.arity) ? `ERR wrong number of arguments for '${name}' command` : undefined
    if (bad) {
      sess.multi.dirty = true
      return err(bad)
    }
    sess.multi.queue.push(args)
    return status('QUEUED')
  }
  if (!spec) {
    const shown = args
      .slice(1, 20)
      .map((b) => `'${s(b).slice(0, 64)}'`)
      .join(' ')
    return err(`ERR unknown command '${s(args[0]).slice(0, 128)}', with args beginning with: ${shown}`)
  }
  if ((spec.arity > 0 && args.length !== spec.arity) || (spec.arity < 0 && args.length < -spec.arity)) {
    return err(`ERR wrong number of arguments for '${name}' command`)
  }
  try {
    const reply = spec.run(sess, args, sh)
    return reply instanceof Promise ? reply.catch(engineError) : reply
  } catch (error) {
    return engineError(error)
  }
}
