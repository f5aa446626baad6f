import {expect} from 'chai'
import type {ChildProcess} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {getOwn, open, type Raw, trickle, until} from '../../../../packages/kit/test/helpers/raw-socket.js'
import {serveCli} from './helpers.js'

const TOOLS_ONLY = fileURLToPath(new URL('../fixtures/tools-only-server.mjs', import.meta.url))
const MAX = 2
const HEADER_MS = 1500

// Issue 20: the proxy serves at most serve.maxConnections connections (one more is answered 503
// at once), and a client that trickles its headers is answered 408 and closed after
// serve.headerTimeoutMs while other clients keep getting answers.
describe('gw serve --http: connection limit and slow clients (built CLI, raw sockets)', function () {
  this.timeout(60_000)
  let dir: string
  let port: number
  let child: ChildProcess | undefined
  const held: Raw[] = []

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gw-net-limits-'))
    const config = join(dir, 'servers.json')
    writeFileSync(config, JSON.stringify({gwServers: {tools: {args: [TOOLS_ONLY], command: process.execPath}}, serve: {headerTimeoutMs: HEADER_MS, maxConnections: MAX}}))
    const env = {...process.env, HOME: dir, TOOLKIT_CONFIG_DIR: join(dir, 'cfg'), XDG_CONFIG_HOME: join(dir, 'xdg')}
    const s = await serveCli(['--port', '0', '--config', config], env, (c) => (child = c))
    port = Number(new URL(s.url).port)
  })

  afterEach(async () => {
    for (const r of held.splice(0)) r.socket.destroy()
    await new Promise((r) => setTimeout(r, 100))
  })

  after(() => {
    if (child?.exitCode === null) child.kill('SIGKILL')
    rmSync(dir, {force: true, recursive: true})
  })

  it('answers the connection past serve.maxConnections with 503 too_many_connections; a freed slot serves again', async () => {
    for (let i = 0; i < MAX; i++) {
      const r = await open(port)
      held.push(r)
      r.socket.write(`GET /health HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n\r\n`)
      await until(() => r.received().includes('\r\n\r\n'))
      expect(r.received()).to.match(/^HTTP\/1\.1 200/)
    }
    const refused = await getOwn(port, '/health')
    expect(refused.status).to.equal(503)
    expect(JSON.parse(refused.body).error.code).to.equal('too_many_connections')
    held.pop()!.socket.destroy()
    await new Promise((r) => setTimeout(r, 100))
    expect((await getOwn(port, '/health')).status).to.equal(200)
  })

  it('answers headers trickled one line every 300 ms with 408 and closes after serve.headerTimeoutMs, while another client gets answers', async () => {
    const slow = await open(port)
    held.push(slow)
    const started = Date.now()
    slow.socket.write(`POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n`)
    const sent = trickle(slow, 'x-slow: 1\r\n'.repeat(40), 300)
    let answers = 0
    while (!slow.socket.destroyed && Date.now() - started < 8000) {
      expect((await getOwn(port, '/health')).status).to.equal(200)
      answers++
      await new Promise((r) => setTimeout(r, 100))
    }
    const closedAt = await slow.closed
    expect(closedAt - started).to.be.within(HEADER_MS - 100, HEADER_MS + 3000)
    expect(slow.received()).to.match(/^HTTP\/1\.1 408/)
    expect(await sent).to.be.below(400)
    expect(answers).to.be.greaterThan(0)
  })
})
