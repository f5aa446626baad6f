/**
 * Reads an accepted socket through Node's `onread` option (one receive buffer, a callback per read)
 * instead of its stream machinery (the Redis and PostgreSQL servers). At `redis-benchmark -P 1` the stream path ('data' events: a
 * fresh 64 KiB allocation per read, `push`, `maybeReadMore`'s nextTick) cost about as much user
 * time as everything svc does for a cached GET: a bare Node server answering a constant spent
 * 4.7 us of user time per command with 'data' and 2.4 us with `onread` (docs/benchmarks.md,
 * "Redis GET -P 1: reads without the stream machinery").
 *
 * Node offers `onread` only to sockets it constructs for a caller (`net.connect`, `new Socket`),
 * not to a server's accepted ones, so its two private slots are found once on a probe socket built
 * with the option (by the values they hold, not by name) and set on each accepted socket before it
 * starts reading (the server must use `pauseOnConnect`). Should a Node version not have them, the
 * socket is read with 'data' events as before: the bytes handed on are the same either way.
 */
import {type OnReadOpts, Socket, type SocketConstructorOpts} from 'node:net'

/** One receive buffer for every connection: Node calls back synchronously after each read, and the bytes are copied out before the next. */
const RECEIVE = Buffer.allocUnsafe(64 * 1024)

interface Slots {
  buffer: symbol
  callback: symbol
}

const slots = findSlots()

function findSlots(): Slots | undefined {
  const callback = (): boolean => true
  // Node's constructor reads `onread` (net.js); its typings list the option only for `net.connect`.
  const options: SocketConstructorOpts & {onread: OnReadOpts} = {onread: {buffer: RECEIVE, callback}}
  const probe = new Socket(options)
  let buffer: symbol | undefined
  let cb: symbol | undefined
  const held = probe as unknown as Record<symbol, unknown>
  for (const k of Object.getOwnPropertySymbols(probe)) {
    if (held[k] === RECEIVE) buffer = k
    else if (held[k] === callback) cb = k
  }
  probe.destroy()
  return buffer && cb ? {buffer, callback: cb} : undefined
}

/** The accepted socket's native handle, where Node's `onread` option installs its buffer. */
interface UserBufferHandle {
  reading?: boolean
  useUserBuffer?(buf: Uint8Array): void
}

/**
 * Starts reading a socket accepted paused (`pauseOnConnect`): each read's bytes, copied into a
 * Buffer of their own (the caller may keep them), go to `onChunk`. `socket.pause()` and
 * `socket.resume()` stop and restart reading as with 'data' events; end and errors arrive as usual.
 */
export function readSocket(socket: Socket, onChunk: (chunk: Buffer) => void): void {
  // `_handle` is Node's own field (not in its typings): the native TCP handle of the socket.
  const handle = (socket as unknown as {_handle?: UserBufferHandle})._handle
  if (!slots || !handle || typeof handle.useUserBuffer !== 'function' || handle.reading) {
    socket.on('data', onChunk)
    // Accepted paused (pauseOnConnect): a 'data' listener alone does not start the flow.
    socket.resume()
    return
  }
  const held = socket as unknown as Record<symbol, unknown>
  held[slots.buffer] = RECEIVE
  held[slots.callback] = (n: number, buf: Buffer): void => {
    const chunk = Buffer.allocUnsafe(n)
    buf.copy(chunk, 0, 0, n)
    onChunk(chunk)
  }
  handle.useUserBuffer(RECEIVE)
  // Flowing mode still matters: the end of the stream is delivered through it.
  socket.resume()
}

/** True when sockets are read through `onread` on this Node (tests check the fast path is the one measured). */
export const readsWithoutStreams = slots !== undefined
