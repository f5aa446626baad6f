/**
 * The largest reply one Redis command may produce (issue 24). Redis itself would build any reply
 * and let `client-output-buffer-limit` disconnect the client afterwards; svc refuses up front, so
 * one MGET of many large values never holds hundreds of megabytes for every other client's cost,
 * and the client gets an error it can act on instead of a dropped connection.
 */
import {err, type Reply, ReplyError} from './resp.js'

export const DEFAULT_MAX_REPLY_BYTES = 64 * 1024 * 1024

export function replyTooLarge(max: number): ReplyError {
  return err(`ERR reply too large: over ${max} bytes (:max-reply-bytes of the Redis server); ask for fewer keys or elements, or iterate with SCAN, HSCAN, SSCAN, ZSCAN or LRANGE ranges`)
}

/** The bytes of a reply's values, counted until they pass `max` (so a huge reply is not walked whole). */
export function replyBytes(reply: Reply, max: number): number {
  let total = 0
  const stack: Reply[] = [reply]
  while (stack.length > 0 && total <= max) {
    const r = stack.pop() as Reply
    if (typeof r === 'string') total += r.length
    else if (Buffer.isBuffer(r)) total += r.length
    else if (Array.isArray(r)) {
      total += r.length
      for (const x of r) stack.push(x)
    } else if (r !== null && typeof r === 'object' && !(r instanceof ReplyError)) {
      if (r.kind === 'map') for (const [k, v] of r.entries) stack.push(k, v)
      else if (r.kind === 'set') for (const x of r.items) stack.push(x)
      else if (r.kind === 'verbatim' || r.kind === 'status') total += r.value.length
    }
  }
  return total
}

/** The reply, or the too-large error in its place. */
export function boundReply(reply: Reply, max: number): Reply {
  if (reply === null || typeof reply !== 'object') return typeof reply === 'string' && reply.length > max ? replyTooLarge(max) : reply
  return replyBytes(reply, max) > max ? replyTooLarge(max) : reply
}
