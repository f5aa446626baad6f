import type {Server, Socket} from 'node:net'

export interface ShutdownOptions {
  /** True while requests already accepted are still being answered. */
  busy?: () => boolean
  /** Longest wait for `busy` to clear before connections are ended anyway (default 10 s). */
  deadlineMs?: number
  /** How long an ended connection may take to close before it is destroyed (default 2 s). */
  graceMs?: number
}

/**
 * A server's client connections, and a shutdown bounded in time: stop accepting, let work already
 * accepted finish (up to a deadline), end every connection, destroy those still open after a grace
 * period. One implementation for every protocol server (svc's REST, Redis and PostgreSQL, gw's
 * proxy), so none of them can hang a process exit on a slow or idle client.
 */
export class Connections {
  readonly sockets = new Set<Socket>()

  constructor(
    private readonly server: Server,
    hooks: {closed?: (socket: Socket) => void; opened?: (socket: Socket) => void} = {},
  ) {
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket)
      hooks.opened?.(socket)
      socket.once('close', () => {
        this.sockets.delete(socket)
        hooks.closed?.(socket)
      })
    })
  }

  get size(): number {
    return this.sockets.size
  }

  async shutdown(options: ShutdownOptions = {}): Promise<void> {
    const closed = new Promise<void>((resolve) => {
      this.server.close(() => resolve())
    })
    // An HTTP server's idle keep-alive connections can go at once.
    ;(this.server as Server & {closeIdleConnections?: () => void}).closeIdleConnections?.()
    const until = Date.now() + (options.deadlineMs ?? 10_000)
    while (options.busy?.() && Date.now() < until) await new Promise((r) => setTimeout(r, 10))
    endSockets(this.sockets, options.graceMs ?? 2000)
    await closed
  }
}

/** Ends every connection, and destroys those still open `graceMs` later. */
export function endSockets(sockets: Iterable<Socket>, graceMs = 2000): void {
  for (const s of sockets) s.end()
  setTimeout(() => {
    for (const s of sockets) s.destroy()
  }, graceMs).unref()
}
