import {expect} from 'chai'
import {createServer as createHttpServer, type Server as HttpServer} from 'node:http'
import {createServer, type Server} from 'node:net'

import {ConnectionGuard, resolveNetLimits} from '../src/net-limits.js'
import {open, trickle} from './helpers/raw-socket.js'

describe('ConnectionGuard (real loopback sockets)', () => {
  let server: Server | undefined
  afterEach(async () => {
    await new Promise((r) => server?.close(r) ?? r(undefined))
  })

  async function listen(guard: ConnectionGuard, onData: (socket: import('node:net').Socket, chunk: Buffer) => void): Promise<number> {
    server = createServer((socket) => {
      if (!guard.admit(socket)) return
      socket.on('data', (chunk: Buffer) => onData(socket, chunk))
    })
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r))
    return (server.address() as {port: number}).port
  }

  it('refuses the connection past maxConnections with the hook\'s answer, and counts a closed one out', async () => {
    const guard = new ConnectionGuard({maxConnections: 1}, {refuse: (s, end) => (s.write('busy\n'), end())})
    const port = await listen(guard, (s) => s.write('ok\n'))
    const first = await open(port)
    const second = await open(port)
    await second.closed
    expect(second.received()).to.equal('busy\n')
    first.socket.destroy()
    await first.closed
    await new Promise((r) => setTimeout(r, 50))
    const third = await open(port)
    third.socket.write('x')
    await new Promise((r) => setTimeout(r, 100))
    expect(third.received()).to.equal('ok\n')
    third.socket.destroy()
  })

  it('drops a request trickled past headerTimeoutMs, but not a line-by-line client completing requests', async () => {
    const guard = new ConnectionGuard({headerTimeoutMs: 400})
    // A "request" is one line: bytes after the last newline are a partial one.
    const port = await listen(guard, (s, chunk) => guard.waiting(s, !chunk.toString().endsWith('\n'), chunk.toString().split('\n').length - 1))
    const slow = await open(port)
    const started = Date.now()
    void trickle(slow, 'abcdefghijklmnop', 100)
    expect((await slow.closed) - started).to.be.within(350, 3000)
    const steady = await open(port)
    void trickle(steady, 'ab\ncd\nef\ngh\nij\nkl\nmn\n', 100)
    await new Promise((r) => setTimeout(r, 1000))
    expect(steady.socket.destroyed).to.equal(false)
    steady.socket.destroy()
  })

  it('HTTP: closes a connection serving nothing after idleTimeoutMs (never used, or kept alive), never one whose answer is still coming', async () => {
    const guard = new ConnectionGuard({idleTimeoutMs: 400})
    const http: HttpServer = createHttpServer((req, res) => {
      if (req.url === '/slow') setTimeout(() => res.end('late'), 1500)
      else res.end('ok')
    })
    http.keepAliveTimeout = 65_000
    guard.watchHttp(http)
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r))
    try {
      const port = (http.address() as {port: number}).port
      const started = Date.now()
      const [silent, kept, slow] = await Promise.all([open(port), open(port), open(port)])
      kept.socket.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n')
      slow.socket.write('GET /slow HTTP/1.1\r\nhost: x\r\n\r\n')
      expect((await silent.closed) - started).to.be.within(350, 3000)
      expect((await kept.closed) - started, 'Node adds a second to the keep-alive timeout').to.be.within(350, 4000)
      expect(kept.received()).to.match(/^HTTP\/1\.1 200[^]*ok$/)
      await slow.closed
      expect(slow.received(), 'answered after four idle timeouts, then closed once idle').to.match(/late$/)
    } finally {
      await new Promise((r) => http.close(r))
    }
  })

  it('refuses limits that are not non-negative integers, and zero connections', () => {
    expect(() => resolveNetLimits({maxConnections: 0})).to.throw(RangeError, /maxConnections/)
    expect(() => resolveNetLimits({headerTimeoutMs: -1})).to.throw(RangeError)
    expect(resolveNetLimits({idleTimeoutMs: 0})).to.deep.equal({headerTimeoutMs: 30_000, idleTimeoutMs: 0, maxConnections: 1000})
  })
})
