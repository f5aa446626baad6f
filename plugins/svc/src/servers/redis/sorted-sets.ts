/**
 * Sorted-set commands.
 */

import {zsetDoc, zsetOrdered, zsetScores} from './keyspace.js'
import {double, err, type Reply, ReplyError} from './resp.js'
import {c, type CommandSpec, float, int, K1, normRange, NOT_FLOAT, NOT_INT, put, R, readTyped, s, type Session, type Shared, SYNTAX, up, W, withDoc, wopts} from './shared.js'

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
    if (added + changed > 0) await put(sh, sess, zsetDoc(key, scores))
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
    if (scores.size === 0) await sh.store.delete(key, wopts(sess))
    else await put(sh, sess, zsetDoc(key, scores))
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

export const SORTED_SET_COMMANDS: Array<[string, CommandSpec]> = [
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
]

