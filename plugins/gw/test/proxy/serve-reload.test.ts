import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {McpError} from '@modelcontextprotocol/sdk/types.js'
import {expect} from 'chai'
import {execFileSync} from 'node:child_process'
import {mkdtempSync, renameSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {EVERYTHING, type Everything, serveCli, type ServingCli, startEverything, until} from './helpers.js'

/** Process ids of the direct children of `pid` (the proxy's stdio upstreams). */
function childrenOf(pid: number): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], {encoding: 'utf8'})
      .split('\n')
      .map((l) => Number(l.trim()))
      .filter((n) => n > 0)
  } catch {
    return []
  }
}

describe('gw serve: lazy stdio upstreams and configuration reload (built CLI)', function () {
  this.timeout(120_000)
  let upstream: Everything
  let dir: string
  let file: string
  let serving: ServingCli
  let client: Client
  let stdout = ''
  const write = (servers: Record<string, unknown>, roles: unknown) =>
    writeFileSync(
      file,
      JSON.stringify({gwServers: servers, serverAuth: {acl: {default: 'deny', roles}, bearer: {tokens: {'tok-dev': {roles: ['dev'], subject: 'dev'}}}, providers: ['bearer']}}, null, 2),
    )
  const health = async () => ((await (await fetch(new URL('/health', serving.url))).json()) as {upstreams: Array<{name: string; state: string}>}).upstreams
  const stateOf = async (name: string) => (await health()).find((u) => u.name === name)?.state
  const local = {args: [EVERYTHING, 'stdio'], command: process.execPath, idleTimeout: 1}

  before(async () => {
    upstream = await startEverything()
    dir = mkdtempSync(join(tmpdir(), 'gw-reload-'))
    file = join(dir, 'servers.json')
    write({everything: {url: upstream.url}, local}, {dev: [{access: '*', server: '*'}]})
    const env = {...process.env, HOME: dir, NO_COLOR: '1', TOOLKIT_CONFIG_DIR: join(dir, 'toolkit'), XDG_CONFIG_HOME: join(dir, 'xdg')}
    serving = await serveCli(['--port', '0', '--config', file], env, (child) => child.stdout!.on('data', (d) => (stdout += d)))
    client = new Client({name: 'reload-test', version: '1'})
    await client.connect(new StreamableHTTPClientTransport(new URL(serving.url), {requestInit: {headers: {authorization: 'Bearer tok-dev'}}}))
  })

  after(async () => {
    await client?.close().catch(() => {})
    if (serving && serving.child.exitCode === null) serving.child.kill('SIGKILL')
    await upstream?.kill()
    rmSync(dir, {force: true, recursive: true})
  })

  it('starts a stdio server on first use, stops it when idle (its tools stay listed), and starts it again on the next call', async () => {
    expect(await stateOf('local')).to.equal('idle')
    // A stopped lazy server is not an outage.
    expect(((await (await fetch(new URL('/health', serving.url))).json()) as {status: string}).status).to.equal('ok')
    expect(childrenOf(serving.child.pid!)).to.deep.equal([])
    const names = (await client.listTools()).tools.map((t) => t.name)
    expect(names).to.include('local__get-sum')
    await until(async () => (await stateOf('local')) === 'idle', 20_000, 'the idle stdio server to be stopped')
    await until(() => childrenOf(serving.child.pid!).length === 0, 10_000, 'the stdio process to exit')
    expect((await client.listTools()).tools.map((t) => t.name)).to.include('local__get-sum')
    const r = await client.callTool({arguments: {a: 20, b: 22}, name: 'local__get-sum'})
    expect(JSON.stringify(r.content)).to.include('42')
    expect(childrenOf(serving.child.pid!).length).to.equal(1)
  })

  it('restarts a stdio server that crashed', async () => {
    await client.callTool({arguments: {a: 1, b: 1}, name: 'local__get-sum'})
    const [pid] = childrenOf(serving.child.pid!)
    process.kill(pid, 'SIGKILL')
    await until(async () => {
      const r = await client.callTool({arguments: {a: 2, b: 3}, name: 'local__get-sum'}).catch(() => undefined)
      return r !== undefined && JSON.stringify(r.content).includes('5')
    }, 20_000, 'a call after the crash')
    expect(childrenOf(serving.child.pid!)).to.not.include(pid)
  })

  it('on SIGHUP adds, removes and re-permits without dropping the session or reconnecting unchanged servers', async () => {
    write({again: {url: upstream.url}, everything: {url: upstream.url}}, {dev: [{access: 'read', server: '*'}]})
    serving.child.kill('SIGHUP')
    await until(() => stdout.includes('"reloaded"'), 20_000, 'the reloaded record')
    const record = JSON.parse(stdout.split('\n').find((l) => l.includes('"reloaded"'))!) as Record<string, unknown>
    expect(record).to.deep.include({added: ['again'], changed: [], removed: ['local']})
    await until(async () => (await stateOf('again')) === 'up', 20_000, 'the added server')
    // Same session as before the reload: no re-initialize.
    const names = (await client.listTools()).tools.map((t) => t.name)
    expect(names).to.include('again__echo')
    expect(names.some((n) => n.startsWith('local__'))).to.equal(false)
    const echo = await client.callTool({arguments: {message: 'still here'}, name: 'everything__echo'})
    expect(JSON.stringify(echo.content)).to.include('still here')
    // The new ACL: write tools are no longer granted.
    const denied = await client.callTool({arguments: {}, name: 'everything__toggle-simulated-logging'}).catch((error: unknown) => error)
    expect((denied as McpError).code).to.equal(-32003)
    expect(serving.stderr().match(/upstream everything: connected/g)?.length).to.equal(1)
  })

  it('with --watch, reloads when the file is replaced (no signal)', async () => {
    const watched = join(dir, 'watched.json')
    writeFileSync(watched, JSON.stringify({gwServers: {everything: {url: upstream.url}}}))
    let out = ''
    const env = {...process.env, HOME: dir, NO_COLOR: '1', TOOLKIT_CONFIG_DIR: join(dir, 'toolkit'), XDG_CONFIG_HOME: join(dir, 'xdg')}
    const w = await serveCli(['--port', '0', '--config', watched, '--watch'], env, (child) => child.stdout!.on('data', (d) => (out += d)))
    try {
      // Written aside and renamed over it, as editors and config tools do.
      writeFileSync(`${watched}.tmp`, JSON.stringify({gwServers: {everything: {url: upstream.url}, more: {url: upstream.url}}}))
      renameSync(`${watched}.tmp`, watched)
      await until(() => out.includes('"reloaded"'), 20_000, `a reload after the file changed (stderr: ${w.stderr()})`)
      expect(JSON.parse(out.split('\n').find((l) => l.includes('"reloaded"'))!)).to.deep.include({added: ['more']})
    } finally {
      w.child.kill('SIGKILL')
    }
  })

  it('refuses an invalid configuration with a clear line and keeps serving the previous one', async () => {
    write({everything: {url: upstream.url}}, {dev: [{access: 'reed', server: '*'}]})
    serving.child.kill('SIGHUP')
    await until(() => serving.stderr().includes('configuration reload refused'), 20_000, 'the refusal')
    expect(serving.stderr()).to.match(/configuration reload refused, the previous configuration stays in force: .*access must be "\*", "read" or "write"/)
    writeFileSync(file, '{"gwServers": ')
    serving.child.kill('SIGHUP')
    await until(() => serving.stderr().match(/configuration reload refused/g)?.length === 2, 20_000, 'the second refusal')
    const names = (await client.listTools()).tools.map((t) => t.name)
    expect(names).to.include('again__echo')
    expect(serving.child.exitCode).to.equal(null)
  })
})
