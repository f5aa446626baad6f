/**
 * RESP2/RESP3 request parser and reply encoder. Hand-written because it is the hot path of the
 * server and small: clients send only arrays of bulk strings (or inline commands), so the parser
 * needs none of the reply types a client-side parser handles.
 */

import {ByteBuffer} from '../byte-buffer.js'

export class ProtocolError extends Error {}

export interface ParserLimits {
  /** Largest bulk string accepted (redis: proto-max-bulk-len, 512 MB). */
  maxBulk: number
  /** Largest inline command line (redis: 64 KB). */
  maxInline: number
  /** Most arguments in one command (redis: 1024*1024). */
  maxArgs: number
}

export const DEFAULT_LIMITS: ParserLimits = {maxArgs: 1024 * 1024, maxBulk: 64 * 1024 * 1024, maxInline: 64 * 1024}

const CR = 13
const LF = 10

/**
 * Incremental parser: `feed()` a socket chunk, then `next()` returns complete commands until it
 * returns undefined. Throws ProtocolError on a malformed or oversized frame; the caller closes
 * that connection only.
 */
export class RespParser extends ByteBuffer {
  constructor(private readonly limits: ParserLimits = DEFAULT_LIMITS) {
    super()
  }

  next(): Buffer[] | undefined {
    const {buf} = this
    let p = this.pos
    // Blank lines between inline commands are ignored, as redis does.
    while (p < buf.length && (buf[p] === CR || buf[p] === LF)) p++
    this.pos = p
    if (p >= buf.length) return undefined
    if (buf[p] !== 0x2a /* '*' */) return this.inline()
    const eol = buf.indexOf(LF, p)
    if (eol < 0) {
      if (buf.length - p > 64) throw new ProtocolError('Protocol error: too big mbulk count string')
      return undefined
    }
    const count = parseIntStrict(buf, p + 1, eol - 1)
    if (count === undefined || buf[eol - 1] !== CR) throw new ProtocolError('Protocol error: invalid multibulk length')
    if (count > this.limits.maxArgs) throw new ProtocolError('Protocol error: invalid multibulk length')
    p = eol + 1
    const args: Buffer[] = []
    for (let i = 0; i < count; i++) {
      if (p >= buf.length) return undefined
      if (buf[p] !== 0x24 /* '$' */) {
        throw new ProtocolError(`Protocol error: expected '$', got '${String.fromCharCode(buf[p])}'`)
      }
      const lineEnd = buf.indexOf(LF, p)
      if (lineEnd < 0) {
        if (buf.length - p > 64) throw new ProtocolError('Protocol error: too big bulk count string')
        return undefined
      }
      const len = parseIntStrict(buf, p + 1, lineEnd - 1)
      if (len === undefined || len < 0 || buf[lineEnd - 1] !== CR) throw new ProtocolError('Protocol error: invalid bulk length')
      if (len > this.limits.maxBulk) throw new ProtocolError('Protocol error: invalid bulk length')
      const start = lineEnd + 1
      if (start + len + 2 > buf.length) {
        this.need = start + len + 2 - this.pos
        return undefined
      }
      if (buf[start + len] !== CR || buf[start + len + 1] !== LF) throw new ProtocolError('Protocol error: bulk string not terminated by CRLF')
      args.push(buf.subarray(start, start + len))
      p = start + len + 2
    }
    this.pos = p
    return args
  }

  /**
   * The key of a complete `GET key` frame at the read position, which it consumes; undefined,
   * consuming nothing, for any other input (then `next()` handles it, errors included). The most
   * common read then needs no argument array and no command-table lookup.
   */
  nextGetKey(): string | undefined {
    return this.nextGet() ? this.buf.toString('utf8', this.keyStart, this.keyEnd) : undefined
  }

  /** Start and end in `bytes` of the key of the frame `nextGet` last took. */
  keyStart = 0
  keyEnd = 0

  /** The receive buffer, for reading the key `nextGet` took (valid until the next `feed`). */
  get bytes(): Buffer {
    return this.buf
  }

  /**
   * `nextGetKey` without the string: true when it took a `GET key` frame, whose key is then
   * `bytes` from `keyStart` to `keyEnd`. A read of an absent key can be answered from the bytes.
   */
  nextGet(): boolean {
    const {buf, pos: p} = this
    // `*2\r\n$3\r\nGET\r\n$` in any letter case
    if (buf.length - p < 18 || buf[p] !== 0x2a || buf[p + 1] !== 0x32 || buf[p + 2] !== CR || buf[p + 3] !== LF || buf[p + 4] !== 0x24 || buf[p + 5] !== 0x33) return false
    if (buf[p + 6] !== CR || buf[p + 7] !== LF || (buf[p + 8] | 0x20) !== 0x67 || (buf[p + 9] | 0x20) !== 0x65 || (buf[p + 10] | 0x20) !== 0x74) return false
    if (buf[p + 11] !== CR || buf[p + 12] !== LF || buf[p + 13] !== 0x24) return false
    let i = p + 14
    let len = 0
    for (; i < buf.length && i < p + 24 && buf[i] >= 0x30 && buf[i] <= 0x39; i++) len = len * 10 + buf[i] - 0x30
    const start = i + 2
    const end = start + len
    if (i === p + 14 || len > this.limits.maxBulk || end + 2 > buf.length || buf[i] !== CR || buf[i + 1] !== LF || buf[end] !== CR || buf[end + 1] !== LF) return false
    this.pos = end + 2
    this.keyStart = start
    this.keyEnd = end
    return true
  }

  private inline(): Buffer[] | undefined {
    const {buf} = this
    const eol = buf.indexOf(LF, this.pos)
    if (eol < 0) {
      if (buf.length - this.pos > this.limits.maxInline) throw new ProtocolError('Protocol error: too big inline request')
      return undefined
    }
    if (eol - this.pos > this.limits.maxInline) throw new ProtocolError('Protocol error: too big inline request')
    const end = eol > this.pos && buf[eol - 1] === CR ? eol - 1 : eol
    const line = buf.toString('utf8', this.pos, end)
    this.pos = eol + 1
    const args = splitInline(line)
    return args.map((a) => Buffer.from(a, 'utf8'))
  }
}

function parseIntStrict(buf: Buffer, from: number, to: number): number | undefined {
  if (to <= from) return undefined
  let neg = false
  let i = from
  if (buf[i] === 0x2d) {
    neg = true
    i++
  }
  if (i >= to || to - i > 12) return undefined
  let n = 0
  for (; i < to; i++) {
    const c = buf[i] - 48
    if (c < 0 || c > 9) return undefined
    n = n * 10 + c
  }
  return neg ? -n : n
}

/** Splits an inline command like redis' sdssplitargs: quotes, escapes, whitespace. */
export function splitInline(line: string): string[] {
  const out: string[] = []
  let i = 0
  const n = line.length
  while (i < n) {
    while (i < n && /\s/.test(line[i])) i++
    if (i >= n) break
    let cur = ''
    if (line[i] === '"') {
      i++
      let closed = false
      while (i < n) {
        const c = line[i]
        if (c === '\\' && i + 1 < n) {
          const e = line[i + 1]
          if (e === 'x' && /^[0-9a-fA-F]{2}$/.test(line.slice(i + 2, i + 4))) {
            cur += String.fromCharCode(Number.parseInt(line.slice(i + 2, i + 4), 16))
            i += 4
            continue
          }
          cur += ({a: '\x07', b: '\b', n: '\n', r: '\r', t: '\t'} as Record<string, string>)[e] ?? e
          i += 2
          continue
        }
        if (c === '"') {
          closed = true
          i++
          break
        }
        cur += c
        i++
      }
      if (!closed || (i < n && !/\s/.test(line[i]))) throw new ProtocolError('Protocol error: unbalanced quotes in request')
    } else if (line[i] === "'") {
      i++
      let closed = false
      while (i < n) {
        if (line[i] === '\\' && line[i + 1] === "'") {
          cur += "'"
          i += 2
          continue
        }
        if (line[i] === "'") {
          closed = true
          i++
          break
        }
        cur += line[i++]
      }
      if (!closed || (i < n && !/\s/.test(line[i]))) throw new ProtocolError('Protocol error: unbalanced quotes in request')
    } else {
      while (i < n && !/\s/.test(line[i])) cur += line[i++]
    }
    out.push(cur)
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Replies. A handler returns a Reply value; `encode` renders it for the connection's protocol.

export type Reply =
  | Buffer
  | Reply[]
  | ReplyError
  | {kind: 'double'; value: number}
  | {kind: 'map'; entries: Array<[Reply, Reply]>}
  | {kind: 'set'; items: Reply[]}
  | {kind: 'status'; value: string}
  | {kind: 'verbatim'; value: string}
  /** A 64-bit integer reply (INCR and friends work over the whole signed 64-bit range). */
  | bigint
  | boolean
  | null
  | number
  | string

export class ReplyError {
  constructor(public readonly message: string) {}
}

export const OK: Reply = {kind: 'status', value: 'OK'}
export const status = (value: string): Reply => ({kind: 'status', value})
export const err = (message: string): ReplyError => new ReplyError(message)
export const map = (entries: Array<[Reply, Reply]>): Reply => ({entries, kind: 'map'})
export const set = (items: Reply[]): Reply => ({items, kind: 'set'})
export const double = (value: number): Reply => ({kind: 'double', value})

const CRLF = '\r\n'

/** Renders one reply, appending string pieces (or buffers for binary bulks) to `out`. */
export function encode(reply: Reply, resp3: boolean, out: Array<Buffer | string>): void {
  if (reply === null) {
    out.push(resp3 ? '_\r\n' : '$-1\r\n')
  } else if (typeof reply === 'string') {
    if (reply.length >= 65_536) {
      // One pass to UTF-8, and the bytes then go to the socket by reference (issue 24).
      const b = Buffer.from(reply)
      out.push(`$${b.length}\r\n`, b, CRLF)
    } else out.push(`$${Buffer.byteLength(reply)}\r\n${reply}\r\n`)
  } else if (typeof reply === 'number' || typeof reply === 'bigint') {
    out.push(`:${reply}\r\n`)
  } else if (typeof reply === 'boolean') {
    out.push(resp3 ? (reply ? '#t\r\n' : '#f\r\n') : reply ? ':1\r\n' : ':0\r\n')
  } else if (Buffer.isBuffer(reply)) {
    out.push(`$${reply.length}\r\n`, reply, CRLF)
  } else if (Array.isArray(reply)) {
    out.push(`*${reply.length}\r\n`)
    for (const r of reply) encode(r, resp3, out)
  } else if (reply instanceof ReplyError) {
    out.push(`-${reply.message.replaceAll(/[\r\n]+/g, ' ')}\r\n`)
  } else if (reply.kind === 'status') {
    out.push(`+${reply.value}\r\n`)
  } else if (reply.kind === 'double') {
    const s = formatDouble(reply.value)
    out.push(resp3 ? `,${s}\r\n` : `$${s.length}\r\n${s}\r\n`)
  } else if (reply.kind === 'map') {
    if (resp3) {
      out.push(`%${reply.entries.length}\r\n`)
    } else {
      out.push(`*${reply.entries.length * 2}\r\n`)
    }
    for (const [k, v] of reply.entries) {
      encode(k, resp3, out)
      encode(v, resp3, out)
    }
  } else if (reply.kind === 'set') {
    out.push(resp3 ? `~${reply.items.length}\r\n` : `*${reply.items.length}\r\n`)
    for (const r of reply.items) encode(r, resp3, out)
  } else {
    const body = resp3 ? `txt:${reply.value}` : reply.value
    out.push(`${resp3 ? '=' : '$'}${Buffer.byteLength(body)}\r\n${body}\r\n`)
  }
}

export function formatDouble(n: number): string {
  if (n === Number.POSITIVE_INFINITY) return 'inf'
  if (n === Number.NEGATIVE_INFINITY) return '-inf'
  return String(n)
}
