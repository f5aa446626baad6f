/**
 * A raw PostgreSQL wire client for tests that must send what no driver would: it frames messages
 * by hand, authenticates with SCRAM-SHA-256 (RFC 5802 / 7677) itself, and reads backend messages.
 */
import {createHash, createHmac, pbkdf2Sync, randomBytes} from 'node:crypto'
import {connect, type Socket} from 'node:net'

export interface BackendMessage {
  body: Buffer
  type: string
}

export class RawPg {
  private buf = Buffer.alloc(0)
  closed = false
  private waiter: (() => void) | undefined

  private constructor(readonly socket: Socket) {
    socket.on('data', (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d])
      this.wake()
    })
    socket.on('close', () => {
      this.closed = true
      this.wake()
    })
    socket.on('error', () => {})
  }

  static async open(port: number): Promise<RawPg> {
    const socket = connect(port, '127.0.0.1')
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve)
      socket.once('error', reject)
    })
    return new RawPg(socket)
  }

  /** Opens a connection and logs in; resolves once the server is ready for a query. */
  static async login(port: number, user = 'svc', password = 'svc'): Promise<RawPg> {
    const c = await RawPg.open(port)
    c.write(startupPacket({database: 'svc', user}))
    const sasl = await c.expect('R')
    if (sasl.body.readInt32BE(0) !== 10) throw new Error(`expected SASL authentication, got ${sasl.body.readInt32BE(0)}`)
    const nonce = randomBytes(18).toString('base64')
    const firstBare = `n=*,r=${nonce}`
    const first = Buffer.from(`n,,${firstBare}`)
    c.send('p', Buffer.concat([cstr('SCRAM-SHA-256'), int32(first.length), first]))
    const cont = await c.expect('R')
    const serverFirst = cont.body.subarray(4).toString()
    const attrs = new Map(serverFirst.split(',').map((kv) => [kv[0], kv.slice(2)]))
    const salted = pbkdf2Sync(password, Buffer.from(attrs.get('s') as string, 'base64'), Number(attrs.get('i')), 32, 'sha256')
    const clientKey = createHmac('sha256', salted).update('Client Key').digest()
    const storedKey = createHash('sha256').update(clientKey).digest()
    const finalBare = `c=biws,r=${attrs.get('r')}`
    const signature = createHmac('sha256', storedKey).update(`${firstBare},${serverFirst},${finalBare}`).digest()
    const proof = Buffer.from(clientKey.map((b, i) => b ^ signature[i]))
    c.send('p', Buffer.from(`${finalBare},p=${proof.toString('base64')}`))
    await c.until('Z')
    return c
  }

  write(bytes: Buffer): void {
    if (!this.socket.destroyed) this.socket.write(bytes)
  }

  send(type: string, body: Buffer): void {
    this.write(Buffer.concat([Buffer.from(type), int32(body.length + 4), body]))
  }

  /** The next backend message, or undefined once the server closed the connection. */
  async next(timeoutMs = 30_000): Promise<BackendMessage | undefined> {
    const until = Date.now() + timeoutMs
    for (;;) {
      if (this.buf.length >= 5) {
        const len = this.buf.readInt32BE(1)
        if (this.buf.length >= 1 + len) {
          const m = {body: this.buf.subarray(5, 1 + len), type: String.fromCharCode(this.buf[0])}
          this.buf = this.buf.subarray(1 + len)
          return m
        }
      }
      if (this.closed) return undefined
      const left = until - Date.now()
      if (left <= 0) throw new Error('no answer from the server (the connection hangs)')
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left)
        this.waiter = () => {
          clearTimeout(t)
          resolve()
        }
      })
    }
  }

  async expect(type: string): Promise<BackendMessage> {
    const m = await this.next()
    if (m?.type === 'E') throw new Error(`server error: ${JSON.stringify(errorFields(m.body))}`)
    if (m?.type !== type) throw new Error(`expected '${type}', got ${m ? `'${m.type}'` : 'a closed connection'}`)
    return m
  }

  /** Reads messages up to and including one of `type`; returns them all (undefined last when closed). */
  async until(type: string, timeoutMs?: number): Promise<BackendMessage[]> {
    const seen: BackendMessage[] = []
    for (;;) {
      const m = await this.next(timeoutMs)
      if (!m) return seen
      seen.push(m)
      if (m.type === type) return seen
    }
  }

  close(): void {
    this.socket.destroy()
  }

  private wake(): void {
    const w = this.waiter
    this.waiter = undefined
    w?.()
  }
}

export function int32(n: number): Buffer {
  const b = Buffer.alloc(4)
  b.writeInt32BE(n)
  return b
}

export function int16(n: number): Buffer {
  const b = Buffer.alloc(2)
  b.writeInt16BE(n)
  return b
}

export function cstr(s: Buffer | string): Buffer {
  return Buffer.concat([Buffer.isBuffer(s) ? s : Buffer.from(s), Buffer.from([0])])
}

export function startupPacket(params: Record<string, string>): Buffer {
  const body = Buffer.concat([int32(196_608), ...Object.entries(params).flatMap(([k, v]) => [cstr(k), cstr(v)]), Buffer.from([0])])
  return Buffer.concat([int32(body.length + 4), body])
}

/** The fields of an ErrorResponse body: C (SQLSTATE), M (message), ... */
export function errorFields(body: Buffer): Record<string, string> {
  const out: Record<string, string> = {}
  let i = 0
  while (i < body.length && body[i] !== 0) {
    const end = body.indexOf(0, i + 1)
    out[String.fromCharCode(body[i])] = body.subarray(i + 1, end).toString()
    i = end + 1
  }
  return out
}

/** The SQLSTATE of the first ErrorResponse among `messages`, or undefined. */
export function sqlstate(messages: BackendMessage[]): string | undefined {
  const e = messages.find((m) => m.type === 'E')
  return e ? errorFields(e.body).C : undefined
}
