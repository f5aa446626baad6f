/**
 * The Redis-protocol server (RESP2 and RESP3). Commands from one connection run in order; all
 * replies produced from one socket read are written in one write, so pipelines cost one syscall.
 */
import {createServer, type Socket} from 'node:net'

import {ConnectionGuard, Connections, type NetLimits} from '@toolkit/kit'

import type {RunningServer, ServerContext} from '../../engine/types.js'
import {MAX_UNREAD_REPLY_BYTES, whileUnread} from '../backpressure.js'
import {listen} from '../listen.js'
import {atTurnEnd} from '../turn-end.js'
import {nextTurn, overBudget} from '../../engine/loop-turns.js'

import {COMMANDS, execute, executeGetBytes} from './dispatch.js'
import {DEFAULT_LIMITS, encode, type ParserLimits, ProtocolError, type Reply, RespParser} from './resp.js'
import {boundReply, DEFAULT_MAX_REPLY_BYTES} from './reply-limit.js'
import {readSocket} from '../socket-read.js'
import {CursorTable, KeyLocks, type Session, type Shared} from './shared.js'

export {COMMANDS} from './dispatch.js'

export interface RedisServerOptions {
  host: string
  /** Frame limits; defaults suit production, tests lower them. */
  limits?: Partial<ParserLimits>
  /** The largest reply one command may give (default 64 MiB); larger answers an error (reply-limit.ts). */
  maxReplyBytes?: number
  /** Connection count and timeouts (kit's DEFAULT_NET_LIMITS when absent). */
  net?: Partial<NetLimits>
  port: number
}

const VERSION = '0.1.0'

export async function startRedisServer(ctx: ServerContext, options: RedisServerOptions): Promise<RunningServer> {
  const log = ctx.logger.child('svc.redis')
  const limits: ParserLimits = {...DEFAULT_LIMITS, ...options.limits}
  // Batches of commands being executed, so close() can let them finish and send their replies.
  let batchesRunning = 0
  let closing = false
  let nextId = 1
  const shared: Shared = {
    clients: () => connections.size,
    commands: COMMANDS,
    cursors: new CursorTable(),
    engine: ctx.engine,
    locks: new KeyLocks(),
    maxReplyBytes: options.maxReplyBytes || DEFAULT_MAX_REPLY_BYTES,
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
  // Accepted paused: readSocket installs its receive buffer before the first read.
  const server = createServer({noDelay: true, pauseOnConnect: true}, (socket) => {
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

    // One promise per batch (the async function's own): no set of them and no finally chain, which
    // at -P 1 were paid per command.
    const pump = (): void => void pumpOnce()

    const pumpOnce = async () => {
      if (busy) {
        fedWhileBusy = true
        return
      }
      busy = true
      batchesRunning++
      fedWhileBusy = false
      try {
        const out: Array<Buffer | string> = []
        let outBytes = 0
        let handled = 0
        // Set once a command of this batch waited for I/O (a durable write, a read from Git).
        let waited = false
        // Commands run and reply bytes produced since this batch last looked at the loop's slice.
        let sinceLook = 0
        let sinceBytes = 0
        for (;;) {
          // Replies that come from memory resolve as microtasks, so a long pipeline of large reads
          // would run in one turn of the event loop. A connection with nothing more to run never
          // waits (a light client must not queue behind heavy ones, nor hold its next command
          // there). The rest of a pipeline looks at the loop's shared slice (engine/loop-turns.ts)
          // only after PACE_COMMANDS commands or PACE_BYTES of replies of its own: a short
          // pipeline of small replies (redis-benchmark -P 16) runs whole and is answered by one
          // write, where looking after every command split one in twelve of them in two, each
          // half with its own write and a turn of the loop in between, once the 50 connections'
          // batches of one turn had used the slice up.
          if (parser.buffered > 0 && (sinceLook >= PACE_COMMANDS || sinceBytes >= PACE_BYTES)) {
            sinceLook = 0
            sinceBytes = 0
            if (overBudget()) {
              if (out.length > 0 && !writeReplies(socket, out)) socket.pause()
              out.length = 0
              outBytes = 0
              await nextTurn()
              // The same bound as a flush: a client that never reads waits here.
              await whileUnread(socket)
              if (socket.destroyed) return
            }
          }
          let pending: Promise<Reply> | Reply
          // The common `GET key` frame skips the argument array and the command table.
          if (!sess.multi && parser.nextGet()) pending = executeGetBytes(sess, parser.bytes, parser.keyStart, parser.keyEnd, shared)
          else {
            let cmd: Buffer[] | undefined
            try {
              cmd = parser.next()
            } catch (error) {
              if (out.length > 0) writeReplies(socket, out)
              fail(error instanceof ProtocolError ? error.message.replace(/^Protocol error/, 'Protocol error') : String(error))
              return
            }
            if (!cmd) break
            if (cmd.length === 0) continue
            pending = execute(sess, cmd, shared)
          }
          handled++
          sinceLook++
          let settled: Reply
          if (pending instanceof Promise) {
            waited = true
            settled = await pending
          } else settled = pending
          const reply = boundReply(settled, shared.maxReplyBytes)
          const before = out.length
          encode(reply, sess.resp3, out)
          const bytesBefore = outBytes
          for (let k = before; k < out.length; k++) outBytes += out[k].length
          sinceBytes += outBytes - bytesBefore
          if (sess.quit) {
            dead = true
            writeReplies(socket, out)
            socket.end()
            return
          }
          // Flush large batches early so memory stays bounded on very long pipelines.
          if (out.length > 4096 || outBytes > MAX_UNREAD_REPLY_BYTES / 4) {
            if (!writeReplies(socket, out)) socket.pause()
            out.length = 0
            outBytes = 0
            // A client that pipelines large reads and never reads waits here instead of growing the server.
            await whileUnread(socket)
            if (socket.destroyed) return
          }
        }
        if (out.length > 0 && !dead) {
          // A pipeline's replies, and replies that waited for I/O (durable SETs are acknowledged
          // together when their fdatasync returns), wait for the end of the turn. A client sending
          // one command at a time answered from memory (the light client of the noisy-neighbour
          // rules) is answered at once, and never waits behind heavy work that the check phase
          // may run before the held replies.
          if (handled > 1 || waited) holdUntilTurnEnds(socket)
          if (!writeReplies(socket, out)) socket.pause()
        }
        guard.waiting(socket, parser.buffered > 0, handled)
      } catch (error) {
        log.error('redis connection failed', {client: sess.id, error: String(error)})
        socket.destroy()
      } finally {
        busy = false
        batchesRunning--
      }
      if (!dead && fedWhileBusy) {
        // Data that arrived while commands ran may already hold complete commands.
        pump()
      }
      if (closing && !busy) socket.end()
    }

    readSocket(socket, (chunk: Buffer) => {
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
      await connections.shutdown({busy: () => batchesRunning > 0})
    },
    port,
  }
}

/** Commands a pipeline runs between two looks at the loop's shared slice. */
const PACE_COMMANDS = 16
/** Reply bytes a pipeline produces between two looks at the loop's shared slice (one large GET or MGET is enough). */
const PACE_BYTES = 64 * 1024

/** Bulk values this large are written as they are, not copied into the batch (issue 24: one large MGET reply was copied whole). */
const OWN_WRITE_BYTES = 64 * 1024

/** Holds a connection's replies until the end of this turn of the loop (servers/turn-end.ts); cork keeps the socket's own order. */
function holdUntilTurnEnds(socket: Socket): void {
  if (socket.writableCorked > 0) return
  socket.cork()
  atTurnEnd(socket, () => socket.uncork())
}

/** Writes a batch of encoded replies: runs of small pieces joined into one write, large buffers by reference; false when the socket is full. */
function writeReplies(socket: Socket, out: Array<Buffer | string>): boolean {
  // The common batch, small replies only: one write of their join, without corking the socket
  // (a corked write is buffered, then written again by uncork).
  let strings = true
  for (const p of out) if (typeof p !== 'string') strings = false
  if (strings) return socket.write(out.length === 1 ? (out[0] as string) : (out as string[]).join(''))
  let ok = true
  let run: Array<Buffer | string> = []
  const flushRun = (): void => {
    if (run.length === 0) return
    ok = socket.write(run.every((p) => typeof p === 'string') ? (run as string[]).join('') : Buffer.concat(run.map((p) => (typeof p === 'string' ? Buffer.from(p) : p))))
    run = []
  }
  socket.cork()
  for (const p of out) {
    if (typeof p !== 'string' && p.length >= OWN_WRITE_BYTES) {
      flushRun()
      ok = socket.write(p)
    } else run.push(p)
  }
  flushRun()
  socket.uncork()
  return ok
}
