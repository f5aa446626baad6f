/**
 * Server side of SCRAM-SHA-256 (RFC 5802 / 7677, as PostgreSQL uses it) and of md5 password
 * authentication. The configured password is kept in memory only as the SCRAM verifier parts.
 */
import {createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual} from 'node:crypto'

const ITERATIONS = 4096

export interface ScramVerifier {
  iterations: number
  salt: Buffer
  serverKey: Buffer
  storedKey: Buffer
}

export function scramVerifier(password: string, salt = randomBytes(16), iterations = ITERATIONS): ScramVerifier {
  const salted = pbkdf2Sync(password.normalize('NFKC'), salt, iterations, 32, 'sha256')
  const clientKey = hmac(salted, 'Client Key')
  return {iterations, salt, serverKey: hmac(salted, 'Server Key'), storedKey: sha256(clientKey)}
}

function hmac(key: Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data).digest()
}

function sha256(b: Buffer): Buffer {
  return createHash('sha256').update(b).digest()
}

function xor(a: Buffer, b: Buffer): Buffer {
  const out = Buffer.alloc(a.length)
  for (let i = 0; i < a.length; i++) out[i] = a[i] ^ b[i]
  return out
}

function attrs(s: string): Map<string, string> {
  const m = new Map<string, string>()
  for (const part of s.split(',')) {
    const eq = part.indexOf('=')
    if (eq > 0) m.set(part.slice(0, eq), part.slice(eq + 1))
  }
  return m
}

export class ScramError extends Error {}

/** One SCRAM exchange: `first()` on SASLInitialResponse, `final()` on SASLResponse. */
export class ScramExchange {
  private clientFirstBare = ''
  private serverFirst = ''
  private nonce = ''
  private gs2Header = ''

  constructor(private readonly v: ScramVerifier) {}

  first(mechanism: string, data: string): string {
    if (mechanism !== 'SCRAM-SHA-256') throw new ScramError(`unsupported SASL mechanism ${mechanism}`)
    // gs2 header: "n,," (no channel binding) or "y,," (client supports it, server does not offer it).
    const m = /^([ny]),([^,]*),(.*)$/s.exec(data)
    if (!m) throw new ScramError('malformed SCRAM client-first-message (channel binding is not supported)')
    this.gs2Header = `${m[1]},${m[2]},`
    this.clientFirstBare = m[3]
    const clientNonce = attrs(this.clientFirstBare).get('r')
    if (!clientNonce) throw new ScramError('SCRAM client-first-message has no nonce')
    this.nonce = clientNonce + randomBytes(18).toString('base64')
    this.serverFirst = `r=${this.nonce},s=${this.v.salt.toString('base64')},i=${this.v.iterations}`
    return this.serverFirst
  }

  /** Returns the server-final message, or undefined when the proof is wrong. */
  final(data: string): string | undefined {
    const a = attrs(data)
    const proof = a.get('p')
    if (a.get('r') !== this.nonce || !proof) throw new ScramError('malformed SCRAM client-final-message')
    if (a.get('c') !== Buffer.from(this.gs2Header).toString('base64')) throw new ScramError('SCRAM channel binding mismatch')
    const withoutProof = data.slice(0, data.lastIndexOf(',p='))
    const authMessage = `${this.clientFirstBare},${this.serverFirst},${withoutProof}`
    const signature = hmac(this.v.storedKey, authMessage)
    const given = Buffer.from(proof, 'base64')
    if (given.length !== 32) return undefined
    const clientKey = xor(given, signature)
    if (!timingSafeEqual(sha256(clientKey), this.v.storedKey)) return undefined
    return `v=${hmac(this.v.serverKey, authMessage).toString('base64')}`
  }
}

/** md5 auth: the client sends "md5" + md5(md5(password + user) + salt). */
export function md5Matches(response: string, user: string, password: string, salt: Buffer): boolean {
  const inner = createHash('md5').update(password + user).digest('hex')
  const expected = 'md5' + createHash('md5').update(Buffer.concat([Buffer.from(inner), salt])).digest('hex')
  const a = Buffer.from(expected)
  const b = Buffer.from(response)
  return a.length === b.length && timingSafeEqual(a, b)
}
