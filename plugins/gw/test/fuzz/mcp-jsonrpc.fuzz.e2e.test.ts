import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {expect} from 'chai'
import fc from 'fast-check'
import type {ChildProcess} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {serveCli, type ServingCli} from '../proxy/helpers.js'
import {FUZZ_SEED, fuzzRuns, fuzzTimeout} from './runs.js'

const TOOLS_ONLY = fileURLToPath(new URL('../fixtures/tools-only-server.mjs', import.meta.url))
const PROTOCOL = '2025-06-18'

/** A JSON-RPC answer's body: a JSON object or the `data:` line of an SSE event; undefined when empty. */
function parseAnswer(text: string): unknown {
  if (text === '') return undefined
  const line = text.trimStart().startsWith('event:') || text.startsWith('data:') ? (/^data: (.*)$/m.exec(text)?.[1] ?? '') : text
  return JSON.parse(line)
}

// Issue 20: random, malformed and mutated MCP JSON-RPC messages on the proxy's /mcp endpoint get
// a JSON-RPC error or a 4xx with a JSON body, never a 5xx or a crash; a real MCP client is served
// all along.
describe('gw serve --http: random and mutated JSON-RPC on /mcp (built CLI, fetch, MCP SDK client)', function () {
  this.timeout(fuzzTimeout(180_000))
  let dir: string
  let s: ServingCli
  let child: ChildProcess | undefined
  let session = ''

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gw-fuzz-'))
    const config = join(dir, 'servers.json')
    // Rates off: the fuzzer sends faster than a user would.
    writeFileSync(config, JSON.stringify({gwServers: {tools: {args: [TOOLS_ONLY], command: process.execPath}}, serve: {rateLimit: 0, rateLimitAddress: 0}}))
    s = await serveCli(['--port', '0', '--config', config], {...process.env, HOME: dir, TOOLKIT_CONFIG_DIR: join(dir, 'cfg'), XDG_CONFIG_HOME: join(dir, 'xdg')}, (c) => (child = c))
    const init = await post(JSON.stringify({id: 1, jsonrpc: '2.0', method: 'initialize', params: {capabilities: {}, clientInfo: {name: 'fuzz', version: '1'}, protocolVersion: PROTOCOL}}))
    expect(init.status).to.equal(200)
    session = String(init.headers.get('mcp-session-id'))
    await post(JSON.stringify({jsonrpc: '2.0', method: 'notifications/initialized'}), session)
  })

  after(() => {
    if (child?.exitCode === null) child.kill('SIGKILL')
    rmSync(dir, {force: true, recursive: true})
  })

  async function post(body: string, withSession?: string, contentType = 'application/json'): Promise<{headers: Headers; status: number; text: string}> {
    const headers: Record<string, string> = {accept: 'application/json, text/event-stream', 'content-type': contentType}
    if (withSession) Object.assign(headers, {'mcp-protocol-version': PROTOCOL, 'mcp-session-id': withSession})
    const r = await fetch(s.url, {body, headers, method: 'POST'})
    return {headers: r.headers, status: r.status, text: await r.text()}
  }

  async function stillServing(): Promise<void> {
    expect(child?.exitCode, `gw serve exited; stderr: ${s.stderr()}`).to.equal(null)
    const client = new Client({name: 'check', version: '1'})
    await client.connect(new StreamableHTTPClientTransport(new URL(s.url)))
    const {tools} = await client.listTools()
    expect(tools.map((t) => t.name)).to.include('tools__ping')
    const r = await client.callTool({arguments: {}, name: 'tools__ping'})
    expect(r.content).to.deep.equal([{text: 'pong', type: 'text'}])
    await client.close()
  }

  /** Every answer: not a 5xx; a JSON body (JSON-RPC error, result, or the proxy's error object) unless empty (202). */
  function checkAnswer(r: {status: number; text: string}, sent: string): string {
    expect(r.status, `${r.status} for ${sent.slice(0, 200)}: ${r.text.slice(0, 200)}`).to.be.below(500)
    const answer = parseAnswer(r.text)
    if (r.status >= 400) expect(answer, `${r.status} with no JSON body for ${sent.slice(0, 200)}`).to.be.an('object')
    const error = (answer as {error?: unknown} | undefined)?.error
    return error === undefined ? String(r.status) : `${r.status} error`
  }

  it('answers random JSON values and mutated MCP messages, in and out of a session (fast-check, fixed seed)', async () => {
    const id = fc.oneof(fc.nat(), fc.string({maxLength: 8}), fc.constant(null), fc.jsonValue({maxDepth: 1}))
    const method = fc.oneof(
      fc.constantFrom('initialize', 'tools/list', 'tools/call', 'resources/list', 'prompts/list', 'ping', 'notifications/initialized', 'notifications/cancelled', 'logging/setLevel', 'completion/complete', 'resources/read', 'prompts/get'),
      fc.string({maxLength: 20}),
      fc.jsonValue({maxDepth: 1}),
    )
    const params = fc.oneof(
      fc.jsonValue({maxDepth: 4}),
      fc.record({arguments: fc.jsonValue({maxDepth: 4}), name: fc.oneof(fc.constantFrom('tools__ping', 'tools__nope', '', 'x'.repeat(5000)), fc.jsonValue({maxDepth: 1}))}, {requiredKeys: []}),
      fc.record({capabilities: fc.jsonValue({maxDepth: 2}), clientInfo: fc.jsonValue({maxDepth: 2}), protocolVersion: fc.oneof(fc.constant(PROTOCOL), fc.string())}, {requiredKeys: []}),
    )
    const message = fc.record({id, jsonrpc: fc.oneof(fc.constant('2.0'), fc.jsonValue({maxDepth: 1})), method, params}, {requiredKeys: []})
    const body = fc.oneof(
      {arbitrary: message.map((m) => JSON.stringify(m)), weight: 5},
      {arbitrary: fc.array(message, {maxLength: 5}).map((m) => JSON.stringify(m)), weight: 1},
      {arbitrary: fc.jsonValue({maxDepth: 3}).map((v) => JSON.stringify(v)), weight: 1},
      {arbitrary: fc.string({maxLength: 64}), weight: 1},
      {arbitrary: fc.nat({max: 5000}).map((d) => '['.repeat(d) + ']'.repeat(d)), weight: 1},
      {arbitrary: fc.nat({max: 300}).map((d) => `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tools__ping","arguments":${'{"a":'.repeat(d)}1${'}'.repeat(d)}}}`), weight: 1},
    )
    const outcomes: Record<string, number> = {}
    await fc.assert(
      fc.asyncProperty(body, fc.boolean(), fc.constantFrom('application/json', 'text/plain', 'application/json; charset=latin1'), async (text, inSession, contentType) => {
        const r = await post(text, inSession ? session : undefined, contentType)
        const outcome = checkAnswer(r, text)
        outcomes[outcome] = (outcomes[outcome] ?? 0) + 1
      }),
      {numRuns: fuzzRuns(150), seed: FUZZ_SEED},
    )
    if (process.env.FUZZ_REPORT) console.log('gw /mcp outcomes', outcomes)
    expect(Object.keys(outcomes).some((o) => o.includes('error'))).to.equal(true)
    await stillServing()
  })

  it('answers huge, binary and truncated bodies with a 4xx and keeps serving', async () => {
    const valid = JSON.stringify({id: 7, jsonrpc: '2.0', method: 'tools/call', params: {arguments: {}, name: 'tools__ping'}})
    const nasty = fc.oneof(
      fc.nat({max: valid.length - 1}).map((n) => valid.slice(0, n)),
      fc.uint8Array({maxLength: 200}).map((b) => Buffer.from(b).toString('latin1')),
      fc.constantFrom('\u0000', '{"__proto__":{"polluted":1},"jsonrpc":"2.0","id":1,"method":"ping"}', '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":"\\ud800"}}'),
      // Bodies past the 4 MiB limit, described by their size so a failure prints a short counterexample.
      fc.constantFrom(5, 9).map((mb) => `huge:${mb}`),
    )
    const outcomes: Record<string, number> = {}
    await fc.assert(
      fc.asyncProperty(nasty, fc.boolean(), async (spec, inSession) => {
        const text = spec.startsWith('huge:') ? `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"${'x'.repeat(Number(spec.slice(5)) * 1024 * 1024)}"}}` : spec
        const outcome = checkAnswer(await post(text, inSession ? session : undefined), text)
        outcomes[outcome] = (outcomes[outcome] ?? 0) + 1
      }),
      {numRuns: fuzzRuns(60), seed: FUZZ_SEED},
    )
    if (process.env.FUZZ_REPORT) console.log('gw /mcp nasty bodies', outcomes)
    await stillServing()
  })
})
