import type {IncomingMessage, ServerResponse} from 'node:http'

/** A request body over the limit; `declared` when its Content-Length said so before any byte came. */
export class BodyTooLargeError extends Error {
  constructor(
    readonly limit: number,
    readonly declared?: number,
  ) {
    super(declared === undefined ? `request body exceeds the limit of ${limit} bytes` : `request body of ${declared} bytes exceeds the limit of ${limit} bytes`)
  }
}

/**
 * Reads a request body of at most `limit` bytes. A larger one is refused from its Content-Length
 * when it has one, else as soon as the limit is passed; nothing past the limit is kept in memory.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'])
    if (declared > limit) {
      reject(new BodyTooLargeError(limit, declared))
      return
    }
    const chunks: Buffer[] = []
    let size = 0
    let failed = false
    req.on('data', (chunk: Buffer) => {
      if (failed) return
      size += chunk.length
      if (size > limit) {
        failed = true
        reject(new BodyTooLargeError(limit))
        return
      }
      chunks.push(chunk)
    })
    req.on('error', (error) => {
      failed = true
      reject(error)
    })
    req.on('end', () => {
      if (!failed) resolve(Buffer.concat(chunks))
    })
  })
}

/** Past this many bytes a refused body is not read to its end: the connection is closed instead. */
const DRAIN_LIMIT = 64 * 1024 * 1024

/**
 * A client still sending a body that was refused (413) would see its connection reset before it
 * reads the answer if the server closed at once; so the rest of the body is read and dropped (it is
 * body bytes, never taken for a next request), up to DRAIN_LIMIT, past which the connection closes.
 */
export function drainRefusedBody(req: IncomingMessage, res: ServerResponse): void {
  const declared = Number(req.headers['content-length'])
  if (declared > DRAIN_LIMIT) {
    res.setHeader('connection', 'close')
    return
  }
  let seen = 0
  req.on('data', (chunk: Buffer) => {
    seen += chunk.length
    if (seen > DRAIN_LIMIT) req.socket.destroy()
  })
  req.resume()
}
