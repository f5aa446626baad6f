/**
 * List commands.
 */

import {collectionDoc, listItems} from './keyspace.js'
import {err, type Reply, ReplyError} from './resp.js'
import {c, type CommandSpec, int, K1, normRange, NOT_INT, put, R, readTyped, s, type Session, type Shared, W, withDoc, wopts} from './shared.js'

async function push(sess: Session, a: Buffer[], sh: Shared): Promise<Reply> {
  const key = s(a[1])
  const cmd = s(a[0]).toLowerCase()
  return withDoc(sess, sh, key, 'list', async (doc) => {
    if (!doc && cmd.endsWith('x')) return 0
    const items = listItems(doc)
    const vals = a.slice(2).map(s)
    if (cmd.startsWith('l')) for (const v of vals) items.unshift(v)
    else items.push(...vals)
    await put(sh, sess, collectionDoc(key, 'list', items))
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
      if (items.length === 0) await sh.store.delete(key, wopts(sess))
      else await put(sh, sess, collectionDoc(key, 'list', items))
    }
    if (count === undefined) return out[0] ?? null
    return out
  })
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

export const LIST_COMMANDS: Array<[string, CommandSpec]> = [
  ['lindex', c(3, ['readonly'], K1, lindex)],
  ['llen', c(2, R, K1, llen)],
  ['lpop', c(-2, W, K1, pop)],
  ['lpush', c(-3, W, K1, push)],
  ['lpushx', c(-3, W, K1, push)],
  ['lrange', c(4, ['readonly'], K1, lrange)],
  ['rpop', c(-2, W, K1, pop)],
  ['rpush', c(-3, W, K1, push)],
  ['rpushx', c(-3, W, K1, push)],
]

