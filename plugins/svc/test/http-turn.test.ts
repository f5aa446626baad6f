import {expect} from 'chai'
import {createServer, type Server} from 'node:http'
import {connect} from 'node:net'

import {httpTurn} from '../src/servers/backpressure.js'

// The pipelining turn of the REST server (servers/backpressure.ts): one request per connection
// builds its answer at a time, and a client that waits for each answer never waits for a turn.
describe('svc HTTP turn per connection', function () {
  let server: Server
  let port: number
  let building = 0
  let mostAtOnce = 0
  let waited = 0

  before(async () => {
    server = createServer(async (req, res) => {
      const turn = httpTurn(req.socket, res)
      if (turn) {
        waited++
        await turn
      }
      building++
      mostAtOnce = Math.max(mostAtOnce, building)
      // An answer that takes a while to build, as a large listing does.
      await new Promise((r) => setTimeout(r, 20))
      building--
      res.end(`answer to ${req.url}\n`)
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
    port = (server.address() as {port: number}).port
  })

  after(async () => {
    server.closeAllConnections()
    await new Promise((r) => server.close(r))
  })

  beforeEach(() => {
    mostAtOnce = 0
    waited = 0
  })

  /** Sends `paths` on one connection, all at once (pipelined) or each after the answer before; resolves the bodies in order. */
  const send = (paths: string[], pipelined: boolean): Promise<string[]> =>
    new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1')
      const bodies: string[] = []
      let text = ''
      const ask = (p: string) => socket.write(`GET ${p} HTTP/1.1\r\nhost: x\r\n\r\n`)
      socket.on('error', reject)
      socket.on('data', (d) => {
        text += d
        for (let m = /answer to (\S+)\n/.exec(text); m; m = /answer to (\S+)\n/.exec(text)) {
          bodies.push(m[1])
          text = text.slice(m.index + m[0].length)
          if (!pipelined && bodies.length < paths.length) ask(paths[bodies.length])
        }
        if (bodies.length === paths.length) {
          socket.end()
          resolve(bodies)
        }
      })
      if (pipelined) for (const p of paths) ask(p)
      else ask(paths[0])
    })

  it('builds the answers of a pipelined burst one at a time, in order', async () => {
    const paths = ['/a', '/b', '/c', '/d', '/e']
    expect(await send(paths, true)).to.deep.equal(paths)
    expect(mostAtOnce).to.equal(1)
    expect(waited).to.be.greaterThan(0)
  })

  it('lets a client that waits for each answer go at once every time', async () => {
    const paths = ['/1', '/2', '/3', '/4']
    expect(await send(paths, false)).to.deep.equal(paths)
    expect(waited).to.equal(0)
  })
})
