/**
 * Output flow control shared by the Redis and PostgreSQL servers (issue 24): a client that sends
 * many requests and never reads the answers must not make the server buffer them all. Once this
 * many bytes of its answers are unread, its next requests wait until the socket drains.
 */
import type {Socket} from 'node:net'

export const MAX_UNREAD_REPLY_BYTES = 8 * 1024 * 1024

/** Resolves once the socket has written what it buffered, or has closed. */
export function drained(socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      socket.off('drain', done)
      socket.off('close', done)
      resolve()
    }
    socket.on('drain', done)
    socket.on('close', done)
  })
}

/** Waits while the client has more than MAX_UNREAD_REPLY_BYTES of answers unread, reading nothing more from it meanwhile. */
export async function whileUnread(socket: Socket): Promise<void> {
  if (socket.writableLength <= MAX_UNREAD_REPLY_BYTES || socket.destroyed) return
  socket.pause()
  await drained(socket)
  if (!socket.destroyed) socket.resume()
}

/** The answer each connection's latest request is building (or has sent). */
const lastAnswer = new WeakMap<Socket, Answer>()

/** What `httpTurn` needs of a ServerResponse. */
export interface Answer {
  readonly closed: boolean
  once(event: 'close', listener: () => void): unknown
  /** All of it handed to the kernel: Node sets this at `end()` when the socket took the bytes at once. */
  readonly writableFinished: boolean
}

/**
 * HTTP/1.1 pipelining: Node parses every request of a pipelined burst at once and runs their
 * handlers together, so a client that sends eight listings and never reads would make the server
 * build all eight answers. Each request on a connection waits until the answer before it has been
 * written out and the client has less than MAX_UNREAD_REPLY_BYTES unread.
 *
 * Returns undefined when the request may run at once, which is every request of a client that
 * waits for each answer before it asks again: that common case allocates no promise and adds no
 * listener (a promise, a 'close' listener and two awaits per request were about a tenth of the
 * CPU of a GET by id).
 */
export function httpTurn(socket: Socket, answer: Answer): Promise<void> | undefined {
  const before = lastAnswer.get(socket)
  lastAnswer.set(socket, answer)
  const beforeDone = before === undefined || before.writableFinished || before.closed
  if (beforeDone && (socket.writableLength <= MAX_UNREAD_REPLY_BYTES || socket.destroyed)) return undefined
  return waitTurn(socket, beforeDone ? undefined : before)
}

/**
 * Called once a request's handler has finished: an answer already written out is forgotten, so
 * an idle keep-alive connection does not hold its last request and answer in memory.
 */
export function httpTurnDone(socket: Socket, answer: Answer): void {
  if (answer.writableFinished && lastAnswer.get(socket) === answer) lastAnswer.delete(socket)
}

/** True while a request on this connection is being answered or waits its turn (for the idle timeout). */
export function httpAnswering(socket: Socket): boolean {
  const a = lastAnswer.get(socket)
  return a !== undefined && !a.writableFinished && !a.closed
}

async function waitTurn(socket: Socket, before: Answer | undefined): Promise<void> {
  // The answer before is written out when it closes (or its connection does).
  if (before) await new Promise<void>((resolve) => before.once('close', resolve))
  // Node's HTTP server pauses and resumes this socket itself; only wait for the client to read.
  if (socket.writableLength > MAX_UNREAD_REPLY_BYTES && !socket.destroyed) await drained(socket)
}
