/**
 * svc's own commands: SEARCH, HISTORY and BRANCH.
 */

import {publicFields, stringValue} from './keyspace.js'
import {err, map, OK, type Reply} from './resp.js'
import {c, type CommandSpec, displayKey, int, K1, NK, NOT_INT, s, type Session, type Shared, SYNTAX, up} from './shared.js'

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

export const SVC_COMMANDS: Array<[string, CommandSpec]> = [
  ['branch', c(-1, ['admin'], NK, branch)],
  ['history', c(-2, ['readonly'], K1, history)],
  ['search', c(-2, ['readonly'], NK, search)],
]

