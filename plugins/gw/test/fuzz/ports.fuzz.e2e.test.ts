import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {expect} from 'chai'
import fc from 'fast-check'
import type {ChildProcess} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {blast} from '../../../../packages/kit/test/helpers/raw-socket.js'
import {serveCli, type ServingCli} from '../proxy/helpers.js'
import {FUZZ_SEED, fuzzRuns, fuzzTimeout} from './runs.js'

const TOOLS_ONLY = fileURLToPath(new URL('../fixtures/tools-only-server.mjs', import.meta.url))

// Issue 20: random bytes to the listening port of `gw serve --http`; after each round of the
// property the process is up, and after the run an MCP SDK client lists and calls tools.
describe('gw serve --http: random bytes on its port, then a real client is served (built CLI, raw sockets, MCP SDK client)', function () {
  this.timeout(fuzzTimeout(180_000))
  let dir: string
  let s: ServingCli
  let child: ChildProcess | undefined

  after(() => {
    if (child?.exitCode === null) child.kill('SIGKILL')
    rmSync(dir, {force: true, recursive: true})
  })

  it('survives 80 rounds of random and HTTP-prefixed junk (fast-check, fixed seed)', async () => {
    dir = mkdtempSync(join(tmpdir(), 'gw-fuzz-ports-'))
    const config = join(dir, 'servers.json')
    writeFileSync(config, JSON.stringify({gwServers: {tools: {args: [TOOLS_ONLY], command: process.execPath}}, serve: {rateLimit: 0, rateLimitAddress: 0}}))
    s = await serveCli(['--port', '0', '--config', config], {...process.env, HOME: dir, TOOLKIT_CONFIG_DIR: join(dir, 'cfg'), XDG_CONFIG_HOME: join(dir, 'xdg')}, (c) => (child = c))
    const port = Number(new URL(s.url).port)
    // Realistic prefixes get the junk past the first checks of the HTTP parser and the MCP route.
    const prefixes = ['', 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n', 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 99999\r\n\r\n', 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\ntransfer-encoding: chunked\r\n\r\nffffff\r\n', 'GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\naccept: text/event-stream\r\n\r\n', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n']
    const junk = fc.tuple(fc.constantFrom(...prefixes), fc.uint8Array({maxLength: 512})).map(([p, b]) => new Uint8Array([...Buffer.from(p, 'latin1'), ...b]))
    await fc.assert(
      fc.asyncProperty(fc.array(junk, {maxLength: 4, minLength: 1}), async (sends) => {
        await Promise.all(sends.map((b) => blast(port, b)))
        expect(child?.exitCode, `gw serve exited; stderr: ${s.stderr()}`).to.equal(null)
      }),
      {numRuns: fuzzRuns(80), seed: FUZZ_SEED},
    )
    expect((await fetch(`http://127.0.0.1:${port}/health`)).status).to.equal(200)
    const client = new Client({name: 'check', version: '1'})
    await client.connect(new StreamableHTTPClientTransport(new URL(s.url)))
    const r = await client.callTool({arguments: {}, name: 'tools__ping'})
    expect(r.content).to.deep.equal([{text: 'pong', type: 'text'}])
    await client.close()
  })
})
