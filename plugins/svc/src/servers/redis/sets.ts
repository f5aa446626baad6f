/**
 * Set commands.
 */

import {collectionDoc, listItems} from './keyspace.js'
import {type Reply, ReplyError, set} from './resp.js'
import {c, type CommandSpec, K1, put, R, readTyped, s, type Session, type Shared, W, withDoc, wopts} from './shared.js'

async function sadd(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const key = s(a[1])
  return withDoc(sess, sh, key, 'set', async (doc) => {
    const members = new Set(listItems(doc))
    const before = members.size
    for (const b of a.slice(2)) members.add(s(b))
    const added = members.size - before
    if (added > 0) await put(sh, sess, collectionDoc(key, 'set', [...members].sort()))
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
    if (members.size === 0) await sh.store.delete(key, wopts(sess))
    else await put(sh, sess, collectionDoc(key, 'set', [...members]))
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

export const SET_COMMANDS: Array<[string, CommandSpec]> = [
  ['sadd', c(-3, W, K1, sadd)],
  ['scard', c(2, R, K1, scard)],
  ['sismember', c(3, R, K1, sismember)],
  ['smembers', c(2, ['readonly'], K1, smembers)],
  ['srem', c(-3, W, K1, srem)],
]

