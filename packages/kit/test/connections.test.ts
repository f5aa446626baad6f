import {expect} from 'chai'
import {once} from 'node:events'
import {Agent, createServer as createHttpServer, get, type IncomingMessage} from 'node:http'
import {type AddressInfo, connect, createServer, type Socket} from 'node:net'

import {Connections} from '../src/connections.js'

async function listening(server: ReturnType<typeof createServer>): Promise<number> {
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return (server.address() as AddressInfo).port
}

async function client(port: number): Promise<Socket> {
  const s = connect(port, '127.0.0.1')
  await once(s, 'connect')
  return s
}

describe('kit Connections', () => {
  it('tracks open connections and calls the hooks', async () => {
    const events: string[] = []
    const server = createServer()
    const connections = new Connections(server, {closed: () => events.push('closed'), opened: () => events.push('opened')})
    const port = await listening(server)
    const a = await client(port)
    const b = await client(port)
    while (connections.size < 2) await new Promise((r) => setImmediate(r))
    a.end()
    await once(a, 'close')
    while (connections.size > 1) await new Promise((r) => setImmediate(r))
    expect(events).to.deep.equal(['opened', 'opened', 'closed'])
    b.destroy()
    await connections.shutdown({graceMs: 0})
  })

  it('shutdown waits for busy work, then ends idle clients so close() returns', async () => {
    const server = createServer()
    const connections = new Connections(server)
    const port = await listening(server)
    const idle = await client(port)
    let busy = true
    let ended = false
    idle.on('end', () => {
      ended = true
      idle.end()
    })
    const done = connections.shutdown({busy: () => busy, deadlineMs: 60_000})
    await new Promise((r) => setTimeout(r, 30))
    expect(ended, 'a client was ended while work was still running').to.equal(false)
    busy = false
    await done
    expect(ended).to.equal(true)
    expect(server.listening).to.equal(false)
  })

  it('destroys a client that ignores the end after the grace period', async () => {
    const server = createServer()
    let serverSide: Socket | undefined
    const connections = new Connections(server, {opened: (s) => (serverSide = s)})
    const port = await listening(server)
    const stubborn = connect({allowHalfOpen: true, host: '127.0.0.1', port})
    await once(stubborn, 'connect')
    stubborn.resume()
    // The client half-closes at most: it never ends its side, so only the grace period ends it.
    await connections.shutdown({graceMs: 20})
    expect(serverSide?.destroyed).to.equal(true)
    stubborn.destroy()
  })

  it('closes idle HTTP keep-alive connections at once', async () => {
    const server = createHttpServer((_req, res) => res.end('ok'))
    const connections = new Connections(server)
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const {port} = server.address() as AddressInfo
    const agent = new Agent({keepAlive: true})
    const res = await new Promise<IncomingMessage>((resolve) => get({agent, host: '127.0.0.1', port}, resolve))
    res.resume()
    await once(res, 'end')
    const socketClosed = once(Object.values(agent.freeSockets)[0]![0], 'close')
    // The grace period is far longer than the test timeout: only closing idle connections can finish it.
    await connections.shutdown({graceMs: 600_000})
    await socketClosed
    agent.destroy()
  })
})
