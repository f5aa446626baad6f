/**
 * Keyspace and expiry commands (DEL, EXISTS, TYPE, KEYS, SCAN, EXPIRE, TTL, RENAME, ...).
 */
import {type BatchOp} from '../../engine/types.js'

import {expired, EXPIRES_FIELD, globToRegExp, typeOf} from './keyspace.js'
import {err, OK, type Reply, status} from './resp.js'
import {c, type CommandSpec, displayKey, int, K1, load, loadMany, NK, NOT_INT, put, R, s, type Session, type Shared, SYNTAX, up, W, wopts} from './shared.js'

async function del(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const keys = [...new Set(a.slice(1).map(s))]
  if (keys.length === 1) {
    const r = await sh.store.delete(keys[0], wopts(sess))
    return r.existed ? 1 : 0
  }
  const docs = await loadMany(sh, sess, keys)
  const present = keys.filter((_, i) => docs[i])
  if (present.length === 0) return 0
  await sh.store.batch(
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
  const now = sh.engine.now()
  do {
    const page = await sh.store.list({branch: sess.branch, cursor: next, limit: Math.min(1000, budget - seen), prefix: enginePrefix})
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
  return sh.store.count({branch: sess.branch})
}

async function expireCmd(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const cmd = s(a[0]).toLowerCase()
  const n = int(a[2])
  if (n === undefined) return NOT_INT
  const key = s(a[1])
  const at = cmd === 'expire' ? sh.engine.now() + n * 1000 : cmd === 'pexpire' ? sh.engine.now() + n : cmd === 'expireat' ? n * 1000 : n
  return sh.locks.with(key, async () => {
    const doc = await load(sh, sess, key)
    if (!doc) return 0
    if (at <= sh.engine.now()) await sh.store.delete(key, wopts(sess))
    // A legacy `_expiresAt` field goes with this write.
    else if (doc[EXPIRES_FIELD] === undefined) await sh.store.expire(key, at, wopts(sess))
    else await put(sh, sess, doc, at)
    return 1
  })
}

async function ttlCmd(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const key = s(a[1])
  const doc = await load(sh, sess, key)
  if (!doc) return -2
  const legacy = doc[EXPIRES_FIELD]
  const at = (await sh.store.expiresAt(key, {branch: sess.branch})) ?? (typeof legacy === 'number' ? legacy : null)
  if (at === null) return -1
  const ms = Math.max(0, at - sh.engine.now())
  return s(a[0]).toLowerCase() === 'pttl' ? ms : Math.round(ms / 1000)
}

async function persist(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const key = s(a[1])
  return sh.locks.with(key, async () => {
    const doc = await load(sh, sess, key)
    if (!doc) return 0
    if (doc[EXPIRES_FIELD] !== undefined) {
      await put(sh, sess, doc, 'clear')
      return 1
    }
    if (typeof (await sh.store.expiresAt(key, {branch: sess.branch})) !== 'number') return 0
    await sh.store.expire(key, null, wopts(sess))
    return 1
  })
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
    // One commit: the old id deleted, the document stored under the new one with the old TTL.
    const at = await sh.store.expiresAt(from, {branch: sess.branch})
    const ops: BatchOp[] = [
      {id: doc.id, op: 'delete'},
      {doc: {...doc, id: to}, op: 'put'},
    ]
    if (typeof at === 'number') ops.push({at, id: to, op: 'expire'})
    await sh.store.batch(ops, wopts(sess))
    return nx ? 1 : OK
  })
}

export const KEY_COMMANDS: Array<[string, CommandSpec]> = [
  ['dbsize', c(1, R, NK, dbsize)],
  ['del', c(-2, W, [1, -1, 1], del)],
  ['exists', c(-2, R, [1, -1, 1], exists)],
  ['expire', c(-3, W, K1, expireCmd)],
  ['expireat', c(-3, W, K1, expireCmd)],
  ['keys', c(2, ['readonly'], NK, keysCmd)],
  ['persist', c(2, W, K1, persist)],
  ['pexpire', c(-3, W, K1, expireCmd)],
  ['pexpireat', c(-3, W, K1, expireCmd)],
  ['pttl', c(2, R, K1, ttlCmd)],
  ['rename', c(3, W, [1, 2, 1], rename)],
  ['renamenx', c(3, W, [1, 2, 1], rename)],
  ['scan', c(-2, ['readonly'], NK, scan)],
  ['ttl', c(2, R, K1, ttlCmd)],
  ['type', c(2, R, K1, typeCmd)],
  ['unlink', c(-2, W, [1, -1, 1], del)],
]

