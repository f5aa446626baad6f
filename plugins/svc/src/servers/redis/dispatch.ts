/**
 * The command table and the one entry point that runs a command: arity checks, MULTI/EXEC
 * queueing, and every failure turned into an error reply.
 */

import {HASH_COMMANDS} from './hashes.js'
import {KEY_COMMANDS} from './keys.js'
import {LIST_COMMANDS} from './lists.js'
import {err, OK, type Reply, ReplyError, status} from './resp.js'
import {SERVER_COMMANDS} from './server-commands.js'
import {SET_COMMANDS} from './sets.js'
import {type CommandSpec, engineError, s, type Session, type Shared, wopts} from './shared.js'
import {SORTED_SET_COMMANDS} from './sorted-sets.js'
import {STRING_COMMANDS} from './strings.js'
import {SVC_COMMANDS} from './svc-commands.js'
import {TxStore} from './tx-store.js'

export {executeGet, executeGetBytes} from './strings.js'

/** Every command svc serves, by lower-case name. */
export const COMMANDS: ReadonlyMap<string, CommandSpec> = new Map(
  [...STRING_COMMANDS, ...HASH_COMMANDS, ...LIST_COMMANDS, ...SET_COMMANDS, ...SORTED_SET_COMMANDS, ...KEY_COMMANDS, ...SERVER_COMMANDS, ...SVC_COMMANDS].sort(([a], [b]) => (a < b ? -1 : 1)),
)

const TX_COMMANDS = new Set(['multi', 'exec', 'discard', 'watch', 'unwatch'])

/**
 * MULTI/EXEC/DISCARD: commands are queued and run in order at EXEC against a transaction (reads
 * see the block's writes), whose writes become one Git commit. When any command of the block
 * fails, EXEC answers EXECABORT naming it and nothing is written. The block is not isolated
 * from other clients' writes; WATCH is not supported (see docs/svc-redis.md).
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
    const store = new TxStore(sh.engine, wopts(sess))
    const inTx: Shared = {...sh, store}
    const out: Reply[] = []
    for (const [i, cmd] of m.queue.entries()) {
      const reply = await execute(sess, cmd, inTx)
      if (reply instanceof ReplyError) {
        store.rollback()
        return aborted(i, cmd, reply.message)
      }
      out.push(reply)
    }
    try {
      await store.commit()
    } catch (error) {
      return err(`EXECABORT Transaction discarded: ${error instanceof Error ? error.message : String(error)}; nothing was written`)
    }
    return out
  }
  return err(`ERR ${name.toUpperCase()} is not supported by svc`)
}

function aborted(index: number, cmd: Buffer[], message: string): ReplyError {
  return err(`EXECABORT Transaction discarded: command ${index + 1} (${s(cmd[0]).toUpperCase().slice(0, 64)}) failed: ${message}; nothing was written`)
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
