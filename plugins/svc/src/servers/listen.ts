import type {Server, Socket} from 'node:net'

import {endSockets} from '@toolkit/kit'

import {EngineError} from '../engine/errors.js'

/**
 * Binds a server; a taken port becomes one clear error naming it (what an operator needs to
 * stop the other process, change the port, or disable the protocol).
 */
export function listen(server: Server, host: string, port: number, what: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      server.off('listening', onListening)
      if (err.code === 'EADDRINUSE') {
        reject(new EngineError('unavailable', `${what} port ${port} on ${host}: Address already in use; stop the other process, choose another port, or disable the protocol`))
      } else if (err.code === 'EACCES') {
        reject(new EngineError('unavailable', `${what} port ${port} on ${host}: permission denied (ports below 1024 need privileges)`))
      } else reject(err)
    }
    const onListening = (): void => {
      server.off('error', onError)
      const addr = server.address()
      resolve(typeof addr === 'object' && addr ? addr.port : port)
    }
    server.once('error', onError)
    server.once('listening', onListening)
    server.listen(port, host)
  })
}

/** Ends every client connection, and destroys those still open two seconds later (kit's endSockets). */
export function endConnections(sockets: Iterable<Socket>): void {
  endSockets(sockets, 2000)
}
