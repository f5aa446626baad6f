import {expect} from 'chai'
import {once} from 'node:events'
import {createServer, type IncomingMessage, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'

import {BodyTooLargeError, readBody} from '../src/http-body.js'

describe('kit readBody', () => {
  let server: Server
  let url: string
  const limit = 16

  before(async () => {
    server = createServer(async (req: IncomingMessage, res) => {
      try {
        const body = await readBody(req, limit)
        res.end(`ok ${body.toString('utf8')}`)
      } catch (error) {
        const e = error as BodyTooLargeError
        res.writeHead(413, {connection: 'close'}).end(`${e.constructor.name} ${e.declared ?? '-'}: ${e.message}`)
      }
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  })

  after(async () => {
    server.closeAllConnections()
    await new Promise((r) => server.close(r))
  })

  it('returns a body within the limit', async () => {
    const res = await fetch(url, {body: 'x'.repeat(limit), method: 'POST'})
    expect(await res.text()).to.equal(`ok ${'x'.repeat(limit)}`)
  })

  it('refuses a body whose Content-Length is over the limit, naming both sizes', async () => {
    const res = await fetch(url, {body: 'x'.repeat(limit + 1), method: 'POST'})
    expect(res.status).to.equal(413)
    expect(await res.text()).to.equal(`BodyTooLargeError ${limit + 1}: request body of ${limit + 1} bytes exceeds the limit of ${limit} bytes`)
  })

  it('refuses a chunked body as soon as it passes the limit', async () => {
    const chunks = new ReadableStream({
      start(controller) {
        for (let i = 0; i < 4; i++) controller.enqueue(new TextEncoder().encode('y'.repeat(10)))
        controller.close()
      },
    })
    const res = await fetch(url, {body: chunks, duplex: 'half', method: 'POST'} as RequestInit)
    expect(res.status).to.equal(413)
    expect(await res.text()).to.equal(`BodyTooLargeError -: request body exceeds the limit of ${limit} bytes`)
  })
})
