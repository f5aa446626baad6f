/**
 * The PostgreSQL-protocol server: password authentication (SCRAM-SHA-256 by default, md5 on
 * request), simple and extended query protocols, cancel requests, and the SQL subset described
 * in docs/svc-sql.md, all over the engine API.
 */
import {createServer, type Socket} from 'node:net'

import {ConnectionGuard, type NetLimits} from '@toolkit/kit'

import type {RunningServer, ServerContext} from '../../engine/types.js'
import {createQueryEngine} from '../../query/index.js'
import {endConnections, listen} from '../listen.js'
import {readSocket} from '../socket-read.js'

import {scramVerifier} from './auth.js'
import {type ConnectionConfig, PgConnection} from './connection.js'
import {GSSENC_REQUEST, SSL_REQUEST, Writer} from './wire.js'

export interface PgServerOptions {
  /** Password method offered to clients. Default `scram-sha-256`. */
  auth?: 'md5' | 'scram-sha-256'
  host: string
  /** Largest frontend message accepted, in bytes (default 64 MB). */
  maxMessage?: number
  /** Most values one IN list may hold (default 100,000): more is SQLSTATE 54001. */
  maxInValues?: number
  /** Longest SQL text accepted (default 16 MiB): longer is SQLSTATE 54000. */
  maxStatementBytes?: number
  /** Connection count and timeouts (kit's DEFAULT_NET_LIMITS when absent); the header timeout bounds the login too. */
  net?: Partial<NetLimits>
  /** Time budget for parsing one statement (default 30 s): longer is SQLSTATE 54001. */
  parseTimeoutMs?: number
  password: string
  port: number
  username: string
}

const VERSION = '0.1.0'

export async function startPgServer(ctx: ServerContext, options: PgServerOptions): Promise<RunningServer> {
  const log = ctx.logger.child('svc.pg')
  const sockets = new Set<Socket>()
  const connections = new Set<PgConnection>()
  const cfg: ConnectionConfig = {
    auth: options.auth ?? 'scram-sha-256',
    logger: log,
    maxMessage: options.maxMessage ?? 64 * 1024 * 1024,
    password: options.password,
    query: createQueryEngine(ctx.engine, {maxInValues: options.maxInValues, maxStatementBytes: options.maxStatementBytes, parseTimeoutMs: options.parseTimeoutMs, version: VERSION}),
    registry: new Map(),
    username: options.username,
    verifier: scramVerifier(options.password),
  }
  let nextPid = (process.pid % 1000) * 10_000 + 1

  const bySocket = new WeakMap<Socket, PgConnection>()
  const guard = new ConnectionGuard(options.net, {
    refuse: refuseTooMany,
    timedOut: (socket, why) => {
      log.debug('closing connection after timeout', {why})
      // As PostgreSQL's idle_session_timeout and idle_in_transaction_session_timeout do: the
      // client learns why before the socket closes (the guard ends it so the FATAL is flushed).
      return why === 'idle' && bySocket.get(socket)?.idleTimeout() === true
    },
  })
  // Accepted paused: the connection's readSocket installs its receive buffer before the first read.
  const server = createServer({noDelay: true, pauseOnConnect: true}, (socket) => {
    if (!guard.admit(socket, {startup: true})) return
    sockets.add(socket)
    ctx.metrics.connectionOpened('pg')
    socket.on('error', (e) => log.debug('pg socket error', {error: e.message}))
    socket.on('close', () => {
      sockets.delete(socket)
      ctx.metrics.connectionClosed('pg')
    })
    try {
      const conn = new PgConnection(socket, cfg, nextPid++)
      conn.onWaiting = (partial, handled) => guard.waiting(socket, partial, handled)
      bySocket.set(socket, conn)
      connections.add(conn)
      socket.on('close', () => connections.delete(conn))
    } catch (error) {
      log.error('pg connection setup failed', {error: String(error)})
      socket.destroy()
    }
  })

  const port = await listen(server, options.host, options.port, 'PostgreSQL')
  server.on('error', (e) => log.error('pg server error', {error: e.message}))
  log.info('pg server listening', {auth: cfg.auth, host: options.host, port})

  return {
    async close() {
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()))
      // Statements in progress finish and are answered; then each client gets 57P01 and EOF.
      await Promise.race([Promise.allSettled([...connections].map((c) => c.shutdown())), new Promise((r) => setTimeout(r, 10_000).unref())])
      endConnections(sockets)
      await stopped
    },
    port,
  }
}

/**
 * What PostgreSQL does when max_connections is reached: read the startup packet (answering 'N'
 * to an SSL or GSS request first, as libpq sends one before it), then a FATAL 53300 and the end.
 */
function refuseTooMany(socket: Socket, end: () => void): void {
  let buf = Buffer.alloc(0)
  readSocket(socket, (chunk: Buffer) => {
    buf = Buffer.concat([buf, chunk])
    while (buf.length >= 8 && buf.length >= buf.readInt32BE(0)) {
      const code = buf.readInt32BE(4)
      buf = buf.subarray(Math.max(8, buf.readInt32BE(0)))
      if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
        socket.write('N')
        continue
      }
      const w = new Writer()
      w.error({code: '53300', message: 'sorry, too many clients already', severity: 'FATAL'})
      socket.write(w.take())
      end()
      return
    }
  })
}
