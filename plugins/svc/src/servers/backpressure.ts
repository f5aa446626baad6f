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

const httpQueues = new WeakMap<Socket, Promise<void>>()

/**
 * HTTP/1.1 pipelining: Node parses every request of a pipelined burst at once and runs their
 * handlers together, so a client that sends eight listings and never reads would make the server
 * build all eight answers. Each request on a connection waits here until the answer before it has
 * been handed to the socket and the client has less than MAX_UNREAD_REPLY_BYTES unread.
 */
export async function httpTurn(socket: Socket, done: Promise<void>): Promise<void> {
  const before = httpQueues.get(socket)
  const mine = (before ?? Promise.resolve()).then(() => done)
  httpQueues.set(socket, mine)
  if (before) await before
  // Node's HTTP server pauses and resumes this socket itself; only wait for the client to read.
  if (socket.writableLength > MAX_UNREAD_REPLY_BYTES && !socket.destroyed) await drained(socket)
}
