/** Raw loopback clients for the connection-limit tests of every server (svc, gw): they send what no well-behaved client would. */
import {request} from 'node:http'
import {connect, type Socket} from 'node:net'

/** A raw client connection: what it received, and when it was closed. */
export interface Raw {
  closed: Promise<number>
  received: () => string
  socket: Socket
}

export async function open(port: number): Promise<Raw> {
  const socket = connect(port, '127.0.0.1')
  let received = ''
  socket.on('data', (d: Buffer) => (received += d.toString('latin1')))
  socket.on('error', () => {})
  const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now())))
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve)
    socket.once('error', reject)
  })
  return {closed, received: () => received, socket}
}

export async function until(what: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms
  while (!what()) {
    if (Date.now() > end) throw new Error('timed out waiting')
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** Sends `text` one byte every `everyMs` until the socket closes; resolves with the bytes sent. */
export function trickle(raw: Raw, text: Buffer | string, everyMs: number): Promise<number> {
  const bytes = Buffer.from(text)
  let i = 0
  return new Promise((resolve) => {
    const t = setInterval(() => {
      if (raw.socket.destroyed || raw.socket.writableEnded || i >= bytes.length) {
        clearInterval(t)
        resolve(i)
        return
      }
      raw.socket.write(bytes.subarray(i, i + 1))
      i++
    }, everyMs)
    void raw.closed.then(() => {
      clearInterval(t)
      resolve(i)
    })
  })
}

/** GET on a connection of its own (no keep-alive pool), so the test knows which slots are held. */
export function getOwn(port: number, path: string): Promise<{body: string; status: number}> {
  return new Promise((resolve, reject) => {
    const req = request({agent: false, host: '127.0.0.1', path, port}, (res) => {
      let body = ''
      res.on('data', (d: Buffer) => (body += d.toString()))
      res.on('end', () => resolve({body, status: res.statusCode ?? 0}))
    })
    req.on('error', reject)
    req.end()
  })
}

/** Sends `bytes` on a new connection and closes it after a short while (or when the server does): the fuzzers' junk on a port. */
export function blast(port: number, bytes: Uint8Array): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(Buffer.from(bytes)))
    const done = (): void => {
      socket.destroy()
      resolve()
    }
    socket.on('error', done)
    socket.on('close', done)
    socket.setTimeout(200, done)
    socket.resume()
  })
}
