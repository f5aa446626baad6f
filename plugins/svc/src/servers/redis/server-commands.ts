/**
 * Connection and server commands (PING, HELLO, INFO, CLIENT, CONFIG, COMMAND, ...).
 */

import {globToRegExp} from './keyspace.js'
import {err, map, OK, type Reply, ReplyError, status} from './resp.js'
import {c, type CommandSpec, int, NK, NOT_INT, s, type Session, type Shared, SYNTAX, up} from './shared.js'

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
    // fdatasyncs of the write-ahead log: SETs per fsync shows how well durable writes are grouped.
    persistence: ['loading:0', `svc_wal_pending_entries:${st.pendingEntries}`, `svc_wal_fsyncs:${sh.engine.details().walFsyncs}`],
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

function commandCmd(_s: Session, a: Buffer[], sh: Shared): Reply {
  const describe = (name: string): Reply => {
    const c = sh.commands.get(name)
    if (!c) return null
    return [name, c.arity, c.flags.map((f) => status(f)), c.keys[0], c.keys[1], c.keys[2]]
  }
  if (a.length === 1) return [...sh.commands.keys()].map(describe)
  const sub = up(a[1])
  if (sub === 'COUNT') return sh.commands.size
  if (sub === 'INFO') return a.slice(2).map((b) => describe(s(b).toLowerCase()))
  if (sub === 'DOCS') return map([])
  if (sub === 'LIST') return [...sh.commands.keys()]
  return err(`ERR unknown subcommand '${s(a[1])}'. Try COMMAND HELP.`)
}

export const SERVER_COMMANDS: Array<[string, CommandSpec]> = [
  ['auth', c(-2, ['noscript', 'loading', 'stale', 'fast'], NK, () => authError())],
  ['client', c(-2, ['admin'], NK, client)],
  ['command', c(-1, ['loading', 'stale'], NK, commandCmd)],
  ['config', c(-2, ['admin'], NK, config)],
  ['echo', c(2, ['fast'], NK, (_s, a) => a[1])],
  ['hello', c(-1, ['noscript', 'loading', 'stale', 'fast'], NK, hello)],
  ['info', c(-1, ['loading', 'stale'], NK, info)],
  ['ping', c(-1, ['fast', 'stale'], NK, ping)],
  ['quit', c(-1, ['fast'], NK, quit)],
  ['select', c(2, ['loading', 'stale', 'fast'], NK, select)],
]

