/**
 * Hash commands: a hash is the document's own fields.
 */
import {type Doc} from '../../engine/types.js'

import {fieldText, hashFields, isHashField, typeOf} from './keyspace.js'
import {err, map, OK, type Reply, ReplyError} from './resp.js'
import {add64, c, type CommandSpec, int64, K1, load, NOT_INT, put, R, s, type Session, type Shared, W, withDoc, wopts, WRONGTYPE} from './shared.js'

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
    if (hashFields(next).length === 0) await sh.store.delete(key, wopts(sess))
    else await put(sh, sess, next)
    return removed
  })
}

/** HINCRBY: exact over the signed 64-bit range, as Redis. */
async function hincrby(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const key = s(a[1])
  const f = s(a[2])
  const delta = int64(a[3])
  if (delta === undefined) return NOT_INT
  if (!isHashField(f)) return err(`ERR hash field '${f}' is reserved by svc`)
  return withDoc(sess, sh, key, 'hash', async (doc) => {
    const cur = doc?.[f]
    const n = cur === undefined ? 0n : typeof cur === 'number' ? (Number.isSafeInteger(cur) ? BigInt(cur) : undefined) : int64(fieldText(cur))
    if (n === undefined) return err('ERR hash value is not an integer')
    const next = add64(n, delta)
    if (next === undefined) return err('ERR increment or decrement would overflow')
    // A field that was a JSON number (written through SQL or REST) stays one while a double holds it exactly.
    const numeric = typeof cur === 'number' && next >= BigInt(Number.MIN_SAFE_INTEGER) && next <= BigInt(Number.MAX_SAFE_INTEGER)
    await put(sh, sess, {...(doc ?? {id: key}), [f]: numeric ? Number(next) : String(next)})
    return next
  })
}

export const HASH_COMMANDS: Array<[string, CommandSpec]> = [
  ['hdel', c(-3, W, K1, hdel)],
  ['hexists', c(3, R, K1, hexists)],
  ['hget', c(3, R, K1, hget)],
  ['hgetall', c(2, ['readonly'], K1, hgetall)],
  ['hincrby', c(4, W, K1, hincrby)],
  ['hkeys', c(2, ['readonly'], K1, hkeysVals)],
  ['hlen', c(2, R, K1, hkeysVals)],
  ['hmget', c(-3, R, K1, hmget)],
  ['hmset', c(-4, W, K1, hset)],
  ['hset', c(-4, W, K1, hset)],
  ['hsetnx', c(4, W, K1, hsetnx)],
  ['hvals', c(2, ['readonly'], K1, hkeysVals)],
]

