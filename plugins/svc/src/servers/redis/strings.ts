/**
 * String commands (GET, SET, INCR, APPEND, ...).
 */
import {type BatchOp, type Doc} from '../../engine/types.js'
import {pace} from '../../engine/loop-turns.js'

import {ENCODING_FIELD, stringDoc, stringValue, typeOf} from './keyspace.js'
import {replyTooLarge} from './reply-limit.js'
import {err, OK, type Reply, ReplyError} from './resp.js'
import {add64, c, type CommandSpec, engineError, float, int, int64, K1, load, loadIfCached, loadMany, normRange, NOT_FLOAT, NOT_INT, put, R, readOptions, s, type Session, type Shared, SYNTAX, up, W, wopts, WRONGTYPE} from './shared.js'

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
      expiresAt = opt === 'EX' ? sh.engine.now() + n * 1000 : opt === 'PX' ? sh.engine.now() + n : opt === 'EXAT' ? n * 1000 : n
    } else if (opt === 'NX' && !xx) nx = true
    else if (opt === 'XX' && !nx) xx = true
    else if (opt === 'GET') get = true
    else if (opt === 'KEEPTTL' && expiresAt === undefined) keepTtl = true
    else return SYNTAX
  }
  return sh.locks.with(key, async () => {
    const needOld = nx || xx || get
    const old = needOld ? await load(sh, sess, key) : undefined
    if (get && old && typeOf(old) !== 'string' && typeOf(old) !== 'hash') return WRONGTYPE
    const oldReply: Reply = old ? stringValue(old) : null
    if ((nx && old) || (xx && !old)) return get ? oldReply : null
    await put(sh, sess, stringDoc(key, a[2]), expiresAt ?? (keepTtl ? 'keep' : 'clear'))
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

/**
 * `GET` of the key in `b` from `start` to `end` (the server's fast path): a key that its branch's
 * filter proves absent is answered null, as `executeGet` would, without making a string of it
 * (most GETs of a cache-style key space, and of redis-benchmark's); any other goes to `executeGet`.
 */
export function executeGetBytes(sess: Session, b: Buffer, start: number, end: number, sh: Shared): Promise<Reply> | Reply {
  // Outside MULTI the store is the engine; a transaction's store sees its own writes, so asks by string.
  if (sh.store === sh.engine && sh.engine.absentIdBytes(b, start, end, readOptions(sess))) return null
  return executeGet(sess, b.toString('utf8', start, end), sh)
}

function getReply(doc: Doc | undefined): Reply {
  if (!doc) return null
  const t = typeOf(doc)
  if (t !== 'string' && t !== 'hash') return WRONGTYPE
  // The shape is known here: stringValue would work it out again (a walk of the fields).
  return t === 'string' && doc[ENCODING_FIELD] !== 'base64' ? (doc.value as string) : stringValue(doc)
}

async function getdel(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const key = s(a[1])
  return sh.locks.with(key, async () => {
    const doc = await load(sh, sess, key)
    if (!doc) return null
    const t = typeOf(doc)
    if (t !== 'string' && t !== 'hash') return WRONGTYPE
    await sh.store.delete(key, wopts(sess))
    return stringValue(doc)
  })
}

async function getset(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  return setCmd(sess, [a[0], a[1], a[2], Buffer.from('GET')], sh)
}

/** Keys MGET reads at a time, so a reply over the limit is refused before all of it is loaded. */
const MGET_CHUNK = 128
/** Bytes of values rendered between two looks at the loop's slice (engine/loop-turns.ts). */
const PACE_BYTES = 256 * 1024

/** Large values already rendered, by document: stored documents are frozen and replaced, never changed, so an entry cannot go stale. */
const renderedLarge = new WeakMap<Doc, Buffer>()

/**
 * A document's value, large ones encoded here, a piece at a time, rather than all together when
 * the reply is written, and rendered once: clients asking again and again for the same megabyte
 * documents rendered them again each time (issue 24). A large value comes back as a string still
 * to be encoded by `largeToBytes`.
 */
function renderedValue(d: Doc): Buffer | string {
  return renderedLarge.get(d) ?? stringValue(d)
}

/** Rendering a megabyte document's JSON and encoding it to UTF-8 take a few milliseconds each: the loop's slice is looked at between the two. */
async function largeToBytes(d: Doc, v: string): Promise<Buffer> {
  await pace()
  const b = Buffer.from(v)
  if (Object.isFrozen(d)) renderedLarge.set(d, b)
  return b
}

async function mget(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const keys = a.slice(1).map(s)
  const out: Reply[] = []
  let bytes = 0
  let sincePace = 0
  for (let i = 0; i < keys.length; i += MGET_CHUNK) {
    const docs = await loadMany(sh, sess, keys.slice(i, i + MGET_CHUNK))
    for (const d of docs) {
      // Rendering megabyte documents one after another held the loop for every client (issue 24):
      // after each large one, the rest wait for the loop's next slice if this one is used up.
      if (sincePace >= PACE_BYTES) {
        sincePace = 0
        await pace()
      }
      const rendered = d && (typeOf(d) === 'string' || typeOf(d) === 'hash') ? renderedValue(d) : null
      const v = d && typeof rendered === 'string' && rendered.length >= PACE_BYTES ? await largeToBytes(d, rendered) : rendered
      bytes += v === null ? 0 : v.length
      sincePace += v === null ? 0 : v.length
      if (bytes > sh.maxReplyBytes) return replyTooLarge(sh.maxReplyBytes)
      out.push(v)
    }
  }
  return out
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
  await sh.store.batch(ops, wopts(sess))
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

/** INCR, INCRBY, DECR, DECRBY: exact over the signed 64-bit range, as Redis. */
async function incrBy(sess: Session, key: string, delta: bigint | undefined, sh: Shared): Promise<Reply> {
  if (delta === undefined) return NOT_INT
  return sh.locks.with(key, async () => {
    const doc = await load(sh, sess, key)
    let cur = 0n
    if (doc) {
      if (typeOf(doc) !== 'string') return WRONGTYPE
      const v = int64(String(doc.value))
      if (v === undefined) return NOT_INT
      cur = v
    }
    const next = add64(cur, delta)
    if (next === undefined) return err('ERR increment or decrement would overflow')
    await put(sh, sess, stringDoc(key, Buffer.from(String(next))))
    return next
  })
}

/** DECRBY's delta negated; -(-2^63) does not fit, which Redis reports as its own error. */
function negated(b: Buffer): bigint | ReplyError | undefined {
  const d = int64(b)
  if (d === undefined) return undefined
  return d === -(2n ** 63n) ? err('ERR decrement would overflow') : -d
}

async function appendCmd(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const key = s(a[1])
  return sh.locks.with(key, async () => {
    const doc = await load(sh, sess, key)
    if (doc && typeOf(doc) !== 'string') return WRONGTYPE
    const old = doc ? stringValue(doc) : ''
    const next = Buffer.concat([Buffer.isBuffer(old) ? old : Buffer.from(old), a[2]])
    await put(sh, sess, stringDoc(key, next))
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
    await put(sh, sess, stringDoc(key, Buffer.from(next)))
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

export const STRING_COMMANDS: Array<[string, CommandSpec]> = [
  ['append', c(3, W, K1, appendCmd)],
  ['decr', c(2, W, K1, (se, a, sh) => incrBy(se, s(a[1]), -1n, sh))],
  [
    'decrby',
    c(3, W, K1, (se, a, sh) => {
      const d = negated(a[2])
      return d instanceof ReplyError ? d : incrBy(se, s(a[1]), d, sh)
    }),
  ],
  ['get', c(2, R, K1, getCmd)],
  ['getdel', c(2, W, K1, getdel)],
  ['getrange', c(4, ['readonly'], K1, getrange)],
  ['getset', c(3, W, K1, getset)],
  ['incr', c(2, W, K1, (se, a, sh) => incrBy(se, s(a[1]), 1n, sh))],
  ['incrby', c(3, W, K1, (se, a, sh) => incrBy(se, s(a[1]), int64(a[2]), sh))],
  ['incrbyfloat', c(3, W, K1, incrByFloat)],
  ['mget', c(-2, R, [1, -1, 1], mget)],
  ['mset', c(-3, W, [1, -1, 2], mset)],
  ['msetnx', c(-3, W, [1, -1, 2], msetnx)],
  ['set', c(-3, W, K1, setCmd)],
  ['setex', c(4, W, K1, (se, a, sh) => setCmd(se, [a[0], a[1], a[3], Buffer.from('EX'), a[2]], sh))],
  ['psetex', c(4, W, K1, (se, a, sh) => setCmd(se, [a[0], a[1], a[3], Buffer.from('PX'), a[2]], sh))],
  ['setnx', c(3, W, K1, async (se, a, sh) => ((await setCmd(se, [a[0], a[1], a[2], Buffer.from('NX')], sh)) === null ? 0 : 1))],
  ['strlen', c(2, R, K1, strlen)],
]

