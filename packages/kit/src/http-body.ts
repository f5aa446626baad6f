import type {IncomingMessage} from 'node:http'

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
