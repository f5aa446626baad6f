/**
 * The PostgreSQL-protocol server: password authentication (SCRAM-SHA-256 by default, md5 on
 * request), simple and extended query protocols, cancel requests, and the SQL subset described
 * in docs/svc-sql.md, all over the engine API.
 */
import {createServer, type Socket} from 'node:net'

import type {RunningServer, ServerContext} from '../../engine/types.js'
import {createQueryEngine} from '../../query/index.js'
import {endConnections, listen} from '../listen.js'

import {scramVerifier} from './auth.js'
import {type ConnectionConfig, PgConnection} from './connection.js'

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

  const server = createServer({noDelay: true}, (socket) => {
    sockets.add(socket)
    ctx.metrics.connectionOpened('pg')
    socket.on('error', (e) => log.debug('pg socket error', {error: e.message}))
    socket.on('close', () => {
      sockets.delete(socket)
      ctx.metrics.connectionClosed('pg')
    })
    try {
      const conn = new PgConnection(socket, cfg, nextPid++)
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
