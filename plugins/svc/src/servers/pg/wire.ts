/**
 * PostgreSQL frontend/backend protocol 3.0: message framing and the backend messages svc sends.
 * Hand-written rather than pg-gateway 0.2: that version has no SCRAM-SHA-256, no extended-query
 * support (Parse/Bind/Describe/Execute) and no cancel requests, which are the point of this server.
 */

import {isUtf8} from 'node:buffer'

import {SqlError} from '../../query/errors.js'
import {ByteBuffer} from '../byte-buffer.js'

export const SSL_REQUEST = 80_877_103
export const GSSENC_REQUEST = 80_877_104
export const CANCEL_REQUEST = 80_877_102
export const PROTOCOL_3 = 196_608

export class WireError extends Error {}

/** Accumulates socket bytes and yields whole messages. */
export class MessageReader extends ByteBuffer {
  constructor(private readonly maxMessage: number) {
    super()
  }

  /** A startup-phase packet (no type byte): length-prefixed body. */
  nextStartup(): Buffer | undefined {
    if (this.buf.length - this.pos < 4) return undefined
    const len = this.buf.readInt32BE(this.pos)
    if (len < 8 || len > 10_000) throw new WireError('invalid startup packet length')
    if (this.buf.length - this.pos < len) return undefined
    const body = this.buf.subarray(this.pos + 4, this.pos + len)
    this.pos += len
    return body
  }

  next(): undefined | {body: Buffer; type: number} {
    if (this.buf.length - this.pos < 5) return undefined
    const type = this.buf[this.pos]
    // Checked before the length, as PostgreSQL does: a second startup packet or stray bytes are refused at once, not awaited.
    if (!FRONTEND_TYPES.has(type)) throw new WireError(`invalid frontend message type ${type}`)
    const len = this.buf.readInt32BE(this.pos + 1)
    if (len < 4) throw new WireError('invalid message length')
    if (len > this.maxMessage) throw new WireError(`message of ${len} bytes exceeds the limit of ${this.maxMessage}`)
    if (this.buf.length - this.pos < len + 1) {
      this.need = len + 1
      return undefined
    }
    const body = this.buf.subarray(this.pos + 5, this.pos + 1 + len)
    this.pos += len + 1
    return {body, type}
  }
}

/** Message types a frontend may send after startup (COPY and function-call ones are answered 0A000). */
const FRONTEND_TYPES = new Set([...'BCDEFHPQSXdcfp'].map((c) => c.charCodeAt(0)))

/** Reads fields out of one message body. */
export class BodyReader {
  pos = 0
  constructor(private readonly b: Buffer) {}
  int16(): number {
    this.need(2)
    const v = this.b.readInt16BE(this.pos)
    this.pos += 2
    return v
  }
  int32(): number {
    this.need(4)
    const v = this.b.readInt32BE(this.pos)
    this.pos += 4
    return v
  }
  cstring(): string {
    // The unnamed statement and portal, in every Bind and Execute of most clients.
    if (this.b[this.pos] === 0) {
      this.pos++
      return ''
    }
    const end = this.b.indexOf(0, this.pos)
    if (end < 0) throw new WireError('unterminated string in message')
    const raw = this.b.subarray(this.pos, end)
    if (!isUtf8(raw)) throw new SqlError('22021', 'invalid byte sequence for encoding "UTF8"')
    this.pos = end + 1
    return raw.toString('utf8')
  }
  bytes(n: number): Buffer {
    this.need(n)
    const v = this.b.subarray(this.pos, this.pos + n)
    this.pos += n
    return v
  }
  rest(): Buffer {
    const v = this.b.subarray(this.pos)
    this.pos = this.b.length
    return v
  }
  private need(n: number): void {
    if (this.pos + n > this.b.length) throw new WireError('message shorter than its fields')
  }
}

/** Builds backend messages into one growing buffer, flushed once per batch of input. */
export class Writer {
  private chunks: Buffer[] = []
  private size = 0

  get length(): number {
    return this.size
  }

  take(): Buffer {
    const out = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, this.size)
    this.chunks = []
    this.size = 0
    return out
  }

  raw(b: Buffer): void {
    this.chunks.push(b)
    this.size += b.length
  }

  msg(type: string, body: Buffer | undefined): void {
    const len = body ? body.length : 0
    const head = Buffer.allocUnsafe(5)
    head[0] = type.charCodeAt(0)
    head.writeInt32BE(len + 4, 1)
    this.raw(head)
    if (body && len > 0) this.raw(body)
  }

  authOk(): void {
    this.msg('R', int32(0))
  }

  authSasl(mechanisms: string[]): void {
    this.msg('R', Buffer.concat([int32(10), ...mechanisms.map(cstr), Buffer.from([0])]))
  }

  authSaslContinue(data: string): void {
    this.msg('R', Buffer.concat([int32(11), Buffer.from(data)]))
  }

  authSaslFinal(data: string): void {
    this.msg('R', Buffer.concat([int32(12), Buffer.from(data)]))
  }

  authMd5(salt: Buffer): void {
    this.msg('R', Buffer.concat([int32(5), salt]))
  }

  parameterStatus(name: string, value: string): void {
    this.msg('S', Buffer.concat([cstr(name), cstr(value)]))
  }

  backendKeyData(pid: number, secret: number): void {
    this.msg('K', Buffer.concat([int32(pid), int32(secret)]))
  }

  readyForQuery(status: 'E' | 'I' | 'T'): void {
    this.raw(READY[status])
  }

  error(e: {code: string; detail?: string; hint?: string; message: string; position?: number; severity?: string}): void {
    const sev = e.severity ?? 'ERROR'
    const parts = [Buffer.from('S'), cstr(sev), Buffer.from('V'), cstr(sev), Buffer.from('C'), cstr(e.code), Buffer.from('M'), cstr(e.message)]
    if (e.detail) parts.push(Buffer.from('D'), cstr(e.detail))
    if (e.hint) parts.push(Buffer.from('H'), cstr(e.hint))
    if (e.position) parts.push(Buffer.from('P'), cstr(String(e.position)))
    parts.push(Buffer.from([0]))
    this.msg('E', Buffer.concat(parts))
  }

  notice(message: string): void {
    this.msg('N', Buffer.concat([Buffer.from('S'), cstr('NOTICE'), Buffer.from('V'), cstr('NOTICE'), Buffer.from('C'), cstr('00000'), Buffer.from('M'), cstr(message), Buffer.from([0])]))
  }

  rowDescription(cols: Array<{format?: number; name: string; oid: number}>): void {
    this.raw(rowDescriptionMessage(cols))
  }

  dataRow(values: Array<Buffer | null>): void {
    let len = 2
    for (const v of values) len += 4 + (v ? v.length : 0)
    const b = Buffer.allocUnsafe(len)
    b.writeInt16BE(values.length, 0)
    let p = 2
    for (const v of values) {
      if (v === null) {
        b.writeInt32BE(-1, p)
        p += 4
      } else {
        b.writeInt32BE(v.length, p)
        p += 4
        v.copy(b, p)
        p += v.length
      }
    }
    this.msg('D', b)
  }

  /** A DataRow of text-format values (textValue), encoded straight into one buffer with its header. */
  dataRowText(values: Array<null | string>): void {
    let len = 4 + 2
    for (const v of values) len += 4 + (v === null ? 0 : Buffer.byteLength(v))
    const b = Buffer.allocUnsafe(1 + len)
    b[0] = 0x44 // 'D'
    b.writeInt32BE(len, 1)
    b.writeInt16BE(values.length, 5)
    let p = 7
    for (const v of values) {
      if (v === null) {
        b.writeInt32BE(-1, p)
        p += 4
      } else {
        const n = b.write(v, p + 4)
        b.writeInt32BE(n, p)
        p += 4 + n
      }
    }
    this.raw(b)
  }

  commandComplete(tag: string): void {
    let m = TAGS.get(tag)
    if (!m) {
      const body = cstr(tag)
      m = Buffer.concat([header('C', body.length), body])
      // Tags repeat (SELECT 1, INSERT 0 1): the common ones are kept, encoded once.
      if (TAGS.size < TAGS_MAX) TAGS.set(tag, m)
    }
    this.raw(m)
  }

  emptyQuery(): void {
    this.raw(EMPTY.I)
  }

  parseComplete(): void {
    this.raw(EMPTY['1'])
  }

  bindComplete(): void {
    this.raw(EMPTY['2'])
  }

  closeComplete(): void {
    this.raw(EMPTY['3'])
  }

  noData(): void {
    this.raw(EMPTY.n)
  }

  portalSuspended(): void {
    this.raw(EMPTY.s)
  }

  parameterDescription(oids: number[]): void {
    this.msg('t', Buffer.concat([int16(oids.length), ...oids.map(int32)]))
  }
}

/** A RowDescription message, header included. */
export function rowDescriptionMessage(cols: Array<{format?: number; name: string; oid: number}>): Buffer {
  const parts: Buffer[] = [int16(cols.length)]
  for (const c of cols) {
    const meta = Buffer.alloc(18)
    meta.writeInt32BE(0, 0) // table oid
    meta.writeInt16BE(0, 4) // column attnum
    meta.writeInt32BE(c.oid, 6)
    meta.writeInt16BE(typeSize(c.oid), 10)
    meta.writeInt32BE(-1, 12) // type modifier
    meta.writeInt16BE(c.format ?? 0, 16)
    parts.push(cstr(c.name), meta)
  }
  const body = Buffer.concat(parts)
  return Buffer.concat([header('T', body.length), body])
}

function header(type: string, bodyLength: number): Buffer {
  const head = Buffer.alloc(5)
  head[0] = type.charCodeAt(0)
  head.writeInt32BE(bodyLength + 4, 1)
  return head
}

/**
 * Messages whose bytes never change, encoded once: a point select's answer is mostly these.
 * Nothing writes into a buffer once it is queued for the socket, so sharing them is safe.
 */
const EMPTY = Object.fromEntries([...'123Ins'].map((t) => [t, header(t, 0)])) as Record<'1' | '2' | '3' | 'I' | 'n' | 's', Buffer>
const READY = Object.fromEntries([...'EIT'].map((t) => [t, Buffer.concat([header('Z', 1), Buffer.from(t)])])) as Record<'E' | 'I' | 'T', Buffer>
const TAGS = new Map<string, Buffer>()
const TAGS_MAX = 256

function typeSize(oid: number): number {
  switch (oid) {
    case 16: {
      return 1
    }
    case 20:
    case 701: {
      return 8
    }
    case 21: {
      return 2
    }
    case 23:
    case 26:
    case 700: {
      return 4
    }
    default: {
      return -1
    }
  }
}

export function int32(n: number): Buffer {
  const b = Buffer.allocUnsafe(4)
  b.writeInt32BE(n, 0)
  return b
}

export function int16(n: number): Buffer {
  const b = Buffer.allocUnsafe(2)
  b.writeInt16BE(n, 0)
  return b
}

export function cstr(s: string): Buffer {
  return Buffer.from(s + '\0')
}

/** Reads the key/value parameters of a StartupMessage body (after the protocol version). */
export function startupParameters(body: Buffer): Record<string, string> {
  const r = new BodyReader(body)
  r.int32()
  const params: Record<string, string> = {}
  for (;;) {
    const k = r.cstring()
    if (k === '') break
    params[k] = r.cstring()
  }
  return params
}
