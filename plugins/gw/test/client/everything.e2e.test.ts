import {expect} from 'chai'
import getPort from 'get-port'
import {type ChildProcess, spawn} from 'node:child_process'
import {mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {tmpdir} from 'node:os'
import {dirname, join} from 'node:path'

import {records, toolkit} from './cli.js'

const require = createRequire(import.meta.url)
const EVERYTHING = join(dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')), 'dist', 'index.js')

/** server-everything in Streamable HTTP mode on a free port; resolves once it listens. */
export async function startEverything(mode: 'sse' | 'streamableHttp' = 'streamableHttp'): Promise<{close(): void; url: string}> {
  const port = await getPort({host: '127.0.0.1'})
  const child: ChildProcess = spawn(process.execPath, [EVERYTHING, mode], {env: {...process.env, PORT: String(port)}, stdio: ['ignore', 'pipe', 'pipe']})
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('server-everything did not start')), 15_000)
    const check = (d: Buffer): void => {
      if (/listening|running on port/.test(d.toString())) {
        clearTimeout(timer)
        resolve()
      }
    }
    child.stdout?.on('data', check)
    child.stderr?.on('data', check)
    child.once('exit', (code) => reject(new Error(`server-everything exited (${code})`)))
  })
  return {close: () => child.kill(), url: `http://127.0.0.1:${port}/${mode === 'sse' ? 'sse' : 'mcp'}`}
}

describe('gw client against @modelcontextprotocol/server-everything (CLI end to end)', function () {
  this.timeout(60_000)
  let server: {close(): void; url: string}
  let dir: string
  const run = (args: string[], env: Record<string, string> = {}) => toolkit(args, {cwd: dir, env, home: join(dir, 'home')})

  before(async () => {
    server = await startEverything()
    dir = mkdtempSync(join(tmpdir(), 'gw-everything-'))
    mkdirSync(join(dir, 'home'))
    writeFileSync(
      join(dir, 'servers.json'),
      JSON.stringify(
        {
          gwServers: {
            everything: {url: server.url},
            local: {args: [EVERYTHING, 'stdio'], command: process.execPath},
            withheader: {headers: {Authorization: 'Bearer ${EVERYTHING_TOKEN}', 'X-Trace': '${TRACE_ID}'}, url: server.url},
          },
        },
        null,
        2,
      ),
    )
  })
  after(() => {
    server.close()
    rmSync(dir, {force: true, recursive: true})
  })

  it('gw tools lists names, descriptions, input schemas and annotations', async () => {
    const r = await run(['gw', 'tools', 'everything', '--format', 'json'])
    expect(r.code, r.stderr).to.equal(0)
    const tools = records(r.stdout)
    const sum = tools.find((t) => t.name === 'get-sum') as {annotations?: {readOnlyHint?: boolean}; description: string; inputSchema: {properties: Record<string, unknown>; required: string[]}}
    expect(sum.description).to.match(/sum of two numbers/i)
    expect(sum.inputSchema.required).to.deep.equal(['a', 'b'])
    expect(sum.annotations?.readOnlyHint).to.equal(true)
    expect(tools.every((t) => t.type === 'tool' && t.server === 'everything')).to.equal(true)
    const text = await run(['gw', 'tools', 'everything'])
    expect(text.stdout).to.include('get-sum(a: number, b: number) [read-only]')
  })

  it('gw call with key=value pairs typed by the schema, and with a JSON object', async () => {
    const kv = await run(['gw', 'call', 'everything', 'get-sum', 'a=2', 'b=3'])
    expect(kv.code, kv.stderr).to.equal(0)
    expect(kv.stdout.trim()).to.equal('The sum of 2 and 3 is 5.')
    const json = await run(['gw', 'call', 'everything', 'get-sum', '{"a": 1.5, "b": 2}', '--format', 'json'])
    expect(records(json.stdout)).to.deep.equal([
      {content: [{text: 'The sum of 1.5 and 2 is 3.5.', type: 'text'}], isError: false, server: 'everything', tool: 'get-sum', type: 'result'},
    ])
  })

  it('reads a JSON object from standard input for "-"', async () => {
    const r = await toolkit(['gw', 'call', 'everything', 'get-sum', '-'], {cwd: dir, home: join(dir, 'home'), input: '{"a": 4, "b": 5}'})
    expect(r.code, r.stderr).to.equal(0)
    expect(r.stdout.trim()).to.equal('The sum of 4 and 5 is 9.')
  })

  it('prints both the text and the structured content of a result', async () => {
    const r = await run(['gw', 'call', 'everything', 'get-structured-content', 'location=New York'])
    expect(r.code, r.stderr).to.equal(0)
    const [text, ...rest] = r.stdout.trim().split('\n')
    expect(JSON.parse(text)).to.have.property('temperature')
    expect(JSON.parse(rest.join('\n'))).to.have.property('temperature')
    const j = records((await run(['gw', 'call', 'everything', 'get-structured-content', 'location=Chicago', '--format', 'json'])).stdout)[0]
    expect(j.structuredContent).to.have.property('temperature')
    expect(j.content).to.have.length(1)
  })

  it('caches the tool list; a stale cached schema never refuses a call the server accepts', async () => {
    const first = await run(['gw', 'call', 'everything', 'get-sum', 'a=1', 'b=1'])
    expect(first.code, first.stderr).to.equal(0)
    const cacheDir = join(dir, 'home', '.cache', 'gw', 'tools')
    const [file] = readdirSync(cacheDir)
    const cached = JSON.parse(readFileSync(join(cacheDir, file), 'utf8')) as {server: string; tools: Array<{inputSchema: unknown; name: string}>}
    expect(cached.server).to.equal(server.url)
    const sum = cached.tools.find((t) => t.name === 'get-sum')
    if (!sum) throw new Error('get-sum not cached')
    sum.inputSchema = {properties: {zzz: {type: 'string'}}, required: ['zzz'], type: 'object'}
    cached.tools = cached.tools.filter((t) => t.name !== 'echo').concat([{inputSchema: {type: 'object'}, name: 'gone'}])
    writeFileSync(join(cacheDir, file), JSON.stringify(cached))
    const stale = await run(['gw', 'call', 'everything', 'get-sum', 'a=2', 'b=3'])
    expect(stale.code, stale.stderr).to.equal(0)
    expect(stale.stdout.trim()).to.equal('The sum of 2 and 3 is 5.')
    const missing = await run(['gw', 'call', 'everything', 'echo', 'message=still here'])
    expect(missing.stdout.trim()).to.equal('Echo: still here')
    const refreshed = JSON.parse(readFileSync(join(cacheDir, file), 'utf8')) as {tools: Array<{name: string}>}
    expect(refreshed.tools.map((t) => t.name)).to.include('echo').and.not.include('gone')
  })

  it('falls back to the legacy HTTP+SSE transport for servers that only speak it', async () => {
    const legacy = await startEverything('sse')
    try {
      const cfg = join(dir, 'sse.json')
      writeFileSync(cfg, JSON.stringify({gwServers: {old: {url: legacy.url}}}))
      const r = await run(['gw', 'call', 'old', 'echo', 'message=over sse', '--config', cfg])
      expect(r.code, r.stderr).to.equal(0)
      expect(r.stdout.trim()).to.equal('Echo: over sse')
    } finally {
      legacy.close()
    }
  })

  it('local servers started as a process (command, args)', async () => {
    const r = await run(['gw', 'call', 'local', 'echo', 'message=from stdio'])
    expect(r.code, r.stderr).to.equal(0)
    expect(r.stdout.trim()).to.equal('Echo: from stdio')
  })

  it('gw servers shows every server and its auth state, unset header variables named', async () => {
    const r = await run(['gw', 'servers', '--format', 'json'])
    expect(r.code, r.stderr).to.equal(0)
    const list = records(r.stdout)
    expect(list.map((s) => s.name)).to.deep.equal(['everything', 'local', 'withheader'])
    expect(list[0]).to.include({auth: 'none', transport: 'http', url: server.url})
    expect(list[1]).to.include({auth: 'process', transport: 'stdio'})
    expect(list[2]).to.deep.include({auth: 'none', unset_variables: ['EVERYTHING_TOKEN']})
    const set = records((await run(['gw', 'servers', '--format', 'json'], {EVERYTHING_TOKEN: 'x'})).stdout)
    expect(set[2]).to.include({auth: 'header'})
  })

  it('a server whose Authorization header uses an unset variable still connects', async () => {
    const r = await run(['gw', 'call', 'withheader', 'echo', 'message=ok'])
    expect(r.code, r.stderr).to.equal(0)
    expect(r.stdout.trim()).to.equal('Echo: ok')
  })

  describe('bad input: a clear message and a non-zero exit', () => {
    it('arguments that are not valid JSON', async () => {
      const r = await run(['gw', 'call', 'everything', 'get-sum', '{"a": 1,'])
      expect(r.code).to.equal(2)
      expect(r.stderr).to.match(/^Error: arguments are not valid JSON/m)
    })

    it('arguments that do not match the input schema are refused before sending', async () => {
      const r = await run(['gw', 'call', 'everything', 'get-sum', 'a=2', 'b=three', '--format', 'json'])
      expect(r.code).to.equal(2)
      expect(r.stderr).to.match(/arguments do not match the input schema of tool "get-sum": .*b must be number/)
      expect(records(r.stdout)).to.have.length(1)
      expect(records(r.stdout)[0]).to.deep.include({error: {code: 'invalid_arguments', exit: 2, message: r.stderr.trim().replace(/^Error: /, '')}, type: 'error'})
      const missing = await run(['gw', 'call', 'everything', 'get-sum', 'a=2'])
      expect(missing.stderr).to.match(/must have required property 'b'/)
    })

    it('an unknown tool, with the nearest name', async () => {
      const r = await run(['gw', 'call', 'everything', 'get-summ', 'a=1'])
      expect(r.code).to.equal(2)
      expect(r.stderr).to.include('server "everything" has no tool "get-summ"; did you mean "get-sum"?')
    })

    it('an unknown server, with the nearest name', async () => {
      const r = await run(['gw', 'tools', 'everythin'])
      expect(r.code).to.equal(2)
      expect(r.stderr).to.include('unknown server "everythin"')
      expect(r.stderr).to.include('did you mean "everything"?')
    })

    it('a server that cannot be reached', async () => {
      const port = await getPort({host: '127.0.0.1'})
      const cfg = join(dir, 'down.json')
      writeFileSync(cfg, JSON.stringify({gwServers: {down: {url: `http://127.0.0.1:${port}/mcp`}}}))
      const r = await run(['gw', 'tools', 'down', '--config', cfg])
      expect(r.code).to.equal(4)
      expect(r.stderr).to.match(new RegExp(`cannot reach server "down" at http://127.0.0.1:${port}/mcp: connection refused`))
    })

    it('a local command that does not exist', async () => {
      const cfg = join(dir, 'nocmd.json')
      writeFileSync(cfg, JSON.stringify({gwServers: {ghost: {command: 'gw-no-such-binary-here'}}}))
      const r = await run(['gw', 'tools', 'ghost', '--config', cfg])
      expect(r.code).to.equal(4)
      expect(r.stderr).to.match(/server "ghost": cannot start `gw-no-such-binary-here`/)
    })

    it('malformed servers.json: file and line', async () => {
      const cfg = join(dir, 'broken.json')
      writeFileSync(cfg, '{\n  "gwServers": {\n    "a": {"url": "http://x"},\n    "b": {"url": "http://y"}\n    "c": {}\n  }\n}\n')
      const r = await run(['gw', 'servers', '--config', cfg])
      expect(r.code).to.equal(2)
      expect(r.stderr).to.match(new RegExp(`^Error: ${cfg.replaceAll('.', String.raw`\.`)}:5:\\d+: invalid JSON`, 'm'))
    })

    it('a server entry without url or command: file and line', async () => {
      const cfg = join(dir, 'nourl.json')
      writeFileSync(cfg, '{\n  "gwServers": {\n    "ok": {"url": "http://x"},\n    "empty": {"headers": {}}\n  }\n}\n')
      const r = await run(['gw', 'servers', '--config', cfg])
      expect(r.code).to.equal(2)
      expect(r.stderr).to.include(`${cfg}:4: server "empty" needs "url"`)
    })

    it('a --config file that does not exist', async () => {
      const r = await run(['gw', 'servers', '--config', 'missing.json'])
      expect(r.code).to.equal(2)
      expect(r.stderr).to.include(`${join(dir, 'missing.json')}: config file not found`)
    })
  })
})
