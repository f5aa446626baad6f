import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {expect} from 'chai'
import type {ChildProcess} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {open, type Raw, until} from '../../../../packages/kit/test/helpers/raw-socket.js'
import {EVERYTHING, serveCli} from './helpers.js'

const IDLE_MS = 1000

// Issue 20: a connection of the proxy with no request in flight is closed after
// serve.idleTimeoutMs; one that keeps sending requests, or waits for a long answer, is not.
describe('gw serve --http: idle connections are closed after serve.idleTimeoutMs, busy ones are not (built CLI, raw sockets, MCP SDK client)', function () {
  this.timeout(60_000)
  let dir: string
  let port: number
  let url: string
  let child: ChildProcess | undefined
  const held: Raw[] = []

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gw-idle-'))
    const config = join(dir, 'servers.json')
    writeFileSync(config, JSON.stringify({gwServers: {everything: {args: [EVERYTHING], command: process.execPath}}, serve: {idleTimeoutMs: IDLE_MS}}))
    const env = {...process.env, HOME: dir, TOOLKIT_CONFIG_DIR: join(dir, 'cfg'), XDG_CONFIG_HOME: join(dir, 'xdg')}
    const s = await serveCli(['--port', '0', '--config', config], env, (c) => (child = c))
    url = s.url
    port = Number(new URL(s.url).port)
  })

  afterEach(() => {
    for (const r of held.splice(0)) r.socket.destroy()
  })

  after(() => {
    if (child?.exitCode === null) child.kill('SIGKILL')
    rmSync(dir, {force: true, recursive: true})
  })

  const health = `GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`

  it('closes a connection that never sends a request, and a kept-alive one after its answer, about serve.idleTimeoutMs later', async () => {
    const started = Date.now()
    const silent = await open(port)
    const kept = await open(port)
    held.push(silent, kept)
    kept.socket.write(health)
    await until(() => kept.received().includes('\r\n\r\n'))
    expect(kept.received()).to.match(/^HTTP\/1\.1 200/)
    expect((await silent.closed) - started).to.be.within(IDLE_MS - 100, IDLE_MS + 3000)
    expect(silent.received()).to.equal('')
    // Node keeps an answered connection one second past the keep-alive timeout.
    expect((await kept.closed) - started).to.be.within(IDLE_MS - 100, IDLE_MS + 4000)
  })

  it('keeps a connection that sends a request every 300 ms open for four idle timeouts, every request answered', async () => {
    const active = await open(port)
    held.push(active)
    for (let i = 0; i < 14; i++) {
      active.socket.write(health)
      await new Promise((r) => setTimeout(r, 300))
      expect(active.socket.destroyed, `closed after ${i + 1} requests`).to.equal(false)
    }
    await until(() => active.received().split('HTTP/1.1 200').length - 1 === 14)
  })

  it('does not cut a tool call answered after three idle timeouts of silence (MCP SDK client)', async () => {
    const client = new Client({name: 'idle-check', version: '1'})
    await client.connect(new StreamableHTTPClientTransport(new URL(url)))
    try {
      const {tools} = await client.listTools()
      const slow = tools.find((t) => t.name.endsWith('trigger-long-running-operation'))
      expect(slow, tools.map((t) => t.name).join(', ')).to.not.equal(undefined)
      const started = Date.now()
      const r = await client.callTool({arguments: {duration: (3 * IDLE_MS) / 1000, steps: 1}, name: slow!.name})
      expect(Date.now() - started).to.be.at.least(3 * IDLE_MS)
      expect(JSON.stringify(r.content)).to.include('Long running operation completed')
    } finally {
      await client.close()
    }
  })
})
