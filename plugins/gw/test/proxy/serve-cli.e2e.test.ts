import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StdioClientTransport} from '@modelcontextprotocol/sdk/client/stdio.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {expect} from 'chai'
import {type ChildProcess, spawn} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {type Everything, RUN_JS, startEverything} from './helpers.js'

interface Started {
  child: ChildProcess
  record: {providers: string[]; url: string; warnings: string[]}
  stderr: () => string
}

describe('toolkit gw serve (built CLI, fresh process)', function () {
  this.timeout(60_000)
  let upstream: Everything
  let dir: string
  let env: NodeJS.ProcessEnv
  const children: ChildProcess[] = []

  const writeConfig = (name: string, serverAuth: unknown) => {
    const file = join(dir, name)
    writeFileSync(file, JSON.stringify({gwServers: {everything: {url: upstream.url}}, serverAuth}, null, 2))
    return file
  }

  /** Runs `gw serve --http` and resolves with its first JSON record (the listening line). */
  const serve = (config: string, extra: string[] = []): Promise<Started> =>
    new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [RUN_JS, 'gw', 'serve', '--http', '--port', '0', '--format', 'json', '--config', config, ...extra], {env})
      children.push(child)
      let out = ''
      let err = ''
      const timer = setTimeout(() => reject(new Error(`serve did not start: ${err}`)), 30_000)
      child.stderr!.on('data', (d) => (err += d))
      child.stdout!.on('data', (d) => {
        out += d
        const line = out.split('\n')[0]
        if (out.includes('\n')) {
          clearTimeout(timer)
          resolve({child, record: JSON.parse(line), stderr: () => err})
        }
      })
      child.once('exit', (code) => {
        clearTimeout(timer)
        reject(new Error(`serve exited ${code}: ${err}`))
      })
    })

  const run = (args: string[]): Promise<{code: number; stderr: string; stdout: string}> =>
    new Promise((resolve) => {
      const child = spawn(process.execPath, [RUN_JS, ...args], {env})
      let stdout = ''
      let stderr = ''
      child.stdout.on('data', (d) => (stdout += d))
      child.stderr.on('data', (d) => (stderr += d))
      child.once('exit', (code) => resolve({code: code ?? -1, stderr, stdout}))
    })

  before(async () => {
    upstream = await startEverything()
    dir = mkdtempSync(join(tmpdir(), 'gw-serve-'))
    env = {
      ...process.env,
      GW_AUTH_FILE: join(dir, 'auth.json'),
      HOME: dir,
      NO_COLOR: '1',
      TOOLKIT_CONFIG_DIR: join(dir, 'toolkit'),
      XDG_CONFIG_HOME: join(dir, 'xdg'),
    }
  })

  after(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL')
    await upstream?.kill()
    rmSync(dir, {force: true, recursive: true})
  })

  it('serves over HTTP with bearer auth and the ACL, and stops cleanly on SIGTERM', async () => {
    const config = writeConfig('bearer.json', {
      acl: {default: 'deny', roles: {viewer: [{access: 'read', server: 'everything'}]}},
      bearer: {tokens: {'cli-token': {roles: ['viewer'], subject: 'vera'}}},
      providers: ['bearer'],
    })
    const s = await serve(config)
    expect(s.record.providers).to.deep.equal(['bearer'])
    const client = new Client({name: 'cli-e2e', version: '1'})
    await client.connect(new StreamableHTTPClientTransport(new URL(s.record.url), {requestInit: {headers: {authorization: 'Bearer cli-token'}}}))
    const names = (await client.listTools()).tools.map((t) => t.name)
    expect(names).to.include('everything__echo')
    expect(names).not.to.include('everything__toggle-simulated-logging')
    const r = await client.callTool({arguments: {message: 'through the proxy'}, name: 'everything__echo'})
    expect(JSON.stringify(r.content)).to.include('through the proxy')
    const denied = await client.callTool({arguments: {}, name: 'everything__toggle-simulated-logging'}).catch((error: Error) => error)
    expect((denied as Error).message).to.include('decided by acl.default')
    await client.close()
    const code = await new Promise<null | number>((resolve) => {
      s.child.once('exit', (c) => resolve(c))
      s.child.kill('SIGTERM')
    })
    expect(code).to.equal(0)
  })

  it('starts the legacy single `provider` form without authentication, warning loudly at start and in /health', async () => {
    const s = await serve(writeConfig('legacy.json', {provider: 'bearer'}))
    expect(s.stderr()).to.match(/serverAuth.provider \("bearer"\).*WITHOUT authentication.*"providers": \["bearer"\]/)
    const health = (await (await fetch(new URL('/health', s.record.url))).json()) as {warnings: string[]}
    expect(health.warnings.join(' ')).to.include('"providers": ["bearer"]')
    const client = new Client({name: 'anon', version: '1'})
    await client.connect(new StreamableHTTPClientTransport(new URL(s.record.url)))
    expect((await client.listTools()).tools.length).to.be.greaterThan(0)
    await client.close()
    s.child.kill('SIGTERM')
  })

  it('refuses to start with a JWT secret shorter than 32 bytes (exit 2, says why)', async () => {
    const config = writeConfig('short.json', {
      oauthAs: {issuerUrl: 'http://127.0.0.1:1', jwtSecret: 'short', redirectUriAllowlist: ['http://localhost/cb'], trustedSourceCidrs: ['127.0.0.1']},
      providers: ['oauth_as'],
    })
    const r = await run(['gw', 'serve', '--http', '--port', '0', '--config', config])
    expect(r.code).to.equal(2)
    expect(r.stderr).to.include('jwtSecret is only 5 bytes: it must be at least 32 bytes')
    expect(r.stderr).not.to.include('short"')
  })

  it('refuses an unknown provider with a suggestion (exit 2)', async () => {
    const r = await run(['gw', 'serve', '--http', '--port', '0', '--config', writeConfig('typo.json', {providers: ['fowarded']})])
    expect(r.code).to.equal(2)
    expect(r.stderr).to.include('unknown provider "fowarded" (did you mean "forwarded"?)')
  })

  it('serves over stdio for a local MCP client, with the ACL applied to --role', async () => {
    const config = writeConfig('stdio.json', {acl: {default: 'deny', roles: {viewer: [{access: 'read', server: '*'}]}}})
    const transport = new StdioClientTransport({args: [RUN_JS, 'gw', 'serve', '--config', config, '--role', 'viewer'], command: process.execPath, env: env as Record<string, string>, stderr: 'pipe'})
    const client = new Client({name: 'stdio-e2e', version: '1'})
    await client.connect(transport)
    const names = (await client.listTools()).tools.map((t) => t.name)
    expect(names).to.include('everything__get-sum')
    expect(names).not.to.include('everything__toggle-simulated-logging')
    const r = await client.callTool({arguments: {a: 1, b: 2}, name: 'everything__get-sum'})
    expect(JSON.stringify(r.content)).to.include('3')
    await client.close()
  })
})
