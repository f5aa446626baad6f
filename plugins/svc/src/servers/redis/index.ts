/**
 * The Redis-protocol server (RESP2 and RESP3). Commands from one connection run in order; all
 * replies produced from one socket read are written in one write, so pipelines cost one syscall.
 */
import {createServer} from 'node:net'

import {ConnectionGuard, Connections, type NetLimits} from '@toolkit/kit'

import type {RunningServer, ServerContext} from '../../engine/types.js'
import {MAX_UNREAD_REPLY_BYTES, whileUnread} from '../backpressure.js'
import {listen} from '../listen.js'

import {COMMANDS, execute, executeGet} from './dispatch.js'
import {DEFAULT_LIMITS, encode, type ParserLimits, ProtocolError, type Reply, RespParser} from './resp.js'
import {CursorTable, KeyLocks, type Session, type Shared} from './shared.js'

export {COMMANDS} from './dispatch.js'

export interface RedisServerOptions {
  host: string
  /** Frame limits; defaults suit production, tests lower them. */
  limits?: Partial<ParserLimits>
  /** Connection count and timeouts (kit's DEFAULT_NET_LIMITS when absent). */
  net?: Partial<NetLimits>
  port: number
}

const VERSION = '0.1.0'

export async function startRedisServer(ctx: ServerContext, options: RedisServerOptions): Promise<RunningServer> {
  const log = ctx.logger.child('svc.redis')
  const limits: ParserLimits = {...DEFAULT_LIMITS, ...options.limits}
  // Batches of commands being executed, so close() can let them finish and send their replies.
  const inFlight = new Set<Promise<void>>()
  let closing = false
  let nextId = 1
  const shared: Shared = {
    clients: () => connections.size,
    commands: COMMANDS,
    cursors: new CursorTable(),
    engine: ctx.engine,
    locks: new KeyLocks(),
    startedAt: Date.now(),
    store: ctx.engine,
    version: VERSION,
  }

  const guard = new ConnectionGuard(options.net, {
    refuse: (socket, end) => {
      socket.write('-ERR max number of clients reached\r\n')
      end()
    },
    timedOut: (_socket, why) => log.debug('closing connection after timeout', {why}),
  })
  const server = createServer({noDelay: true}, (socket) => {
    if (!guard.admit(socket)) return
    const sess: Session = {branch: 'main', id: nextId++, quit: false, resp3: false}
    const parser = new RespParser(limits)
    let busy = false
    let dead = false
    // Set when bytes arrive while commands run, so the pump looks at the parser once more.
    let fedWhileBusy = false

    const fail = (message: string) => {
      if (dead) return
      dead = true
      log.debug('closing connection after protocol error', {client: sess.id, error: message})
      socket.end(`-ERR ${message}\r\n`)
      setTimeout(() => socket.destroy(), 1000).unref()
    }

    const pump = () => {
      const p = pumpOnce()
      inFlight.add(p)
      void p.finally(() => {
        inFlight.delete(p)
        if (closing && !busy) socket.end()
      })
    }

    const pumpOnce = async () => {
      if (busy) {
        fedWhileBusy = true
        return
      }
      busy = true
      fedWhileBusy = false
      try {
        const out: Array<Buffer | string> = []
        let outBytes = 0
        let handled = 0
        for (;;) {
          let pending: Promise<Reply> | Reply
          // The common `GET key` frame skips the argument array and the command table.
          const key = sess.multi ? undefined : parser.nextGetKey()
          if (key === undefined) {
            let cmd: Buffer[] | undefined
            try {
              cmd = parser.next()
            } catch (error) {
              if (out.length > 0) socket.write(join(out))
              fail(error instanceof ProtocolError ? error.message.replace(/^Protocol error/, 'Protocol error') : String(error))
              return
            }
            if (!cmd) break
            if (cmd.length === 0) continue
            pending = execute(sess, cmd, shared)
          } else pending = executeGet(sess, key, shared)
          handled++
          const reply = pending instanceof Promise ? await pending : pending
          const before = out.length
          encode(reply, sess.resp3, out)
          for (let k = before; k < out.length; k++) outBytes += out[k].length
          if (sess.quit) {
            dead = true
            socket.end(join(out))
            return
          }
          // Flush large batches early so memory stays bounded on very long pipelines.
          if (out.length > 4096 || outBytes > MAX_UNREAD_REPLY_BYTES / 4) {
            if (!socket.write(join(out))) socket.pause()
            out.length = 0
            outBytes = 0
            // A client that pipelines large reads and never reads waits here instead of growing the server.
            await whileUnread(socket)
            if (socket.destroyed) return
          }
        }
        if (out.length > 0 && !dead && !socket.write(join(out))) socket.pause()
        guard.waiting(socket, parser.buffered > 0, handled)
      } catch (error) {
        log.error('redis connection failed', {client: sess.id, error: String(error)})
        socket.destroy()
      } finally {
        busy = false
      }
      if (!dead && fedWhileBusy) {
        // Data that arrived while commands ran may already hold complete commands.
        pump()
      }
    }

    socket.on('data', (chunk: Buffer) => {
      // While closing, only a connection in the middle of a batch still reads (the rest of its pipeline).
      if (dead || (closing && !busy)) return
      parser.feed(chunk)
      pump()
    })
    socket.on('drain', () => socket.resume())
    socket.on('error', (e) => log.debug('redis socket error', {client: sess.id, error: e.message}))
  })

  const connections = new Connections(server, {closed: () => ctx.metrics.connectionClosed('redis'), opened: () => ctx.metrics.connectionOpened('redis')})
  const port = await listen(server, options.host, options.port, 'Redis')
  server.on('error', (e) => log.error('redis server error', {error: e.message}))
  log.info('redis server listening', {commands: COMMANDS.size, host: options.host, port})

  return {
    async close() {
      closing = true
      // Commands already running finish and their replies are sent; then connections end.
      await connections.shutdown({busy: () => inFlight.size > 0})
    },
    port,
  }
}

function join(out: Array<Buffer | string>): Buffer | string {
  if (out.every((p) => typeof p === 'string')) return (out as string[]).join('')
  return Buffer.concat(out.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)))
}

