import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {expect} from 'chai'
import type {ChildProcess} from 'node:child_process'
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {records, toolkit} from '../client/cli.js'
import {type Everything, serveCli, type ServingCli, startEverything, until} from './helpers.js'

const PATH_KEY = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc'
const QUERY_KEY = 'q-secret-77aa'
const BODY = 'stack trace with internal-hostname-db7 and password=hunter2'

/** A hosted MCP service whose URL carries a key, failing with a chatty 500 page. */
async function failingHosted(seen: string[]): Promise<Server> {
  const server = createServer((req, res) => {
    seen.push(req.url ?? '')
    req.resume()
    res.writeHead(500, {'content-type': 'text/plain'})
    res.end(BODY)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return server
}

describe('gw serve: secrets in upstream URLs, the ACL before outages, a restarted upstream (built CLI)', function () {
  this.timeout(120_000)
  let everything: Everything
  let hosted: Server
  const seen: string[] = []
  let dir: string
  let env: NodeJS.ProcessEnv
  let config: string
  const children: ChildProcess[] = []

  const serve = (extra: string[] = []): Promise<ServingCli> => serveCli(['--port', '0', '--config', config, ...extra], env, (c) => children.push(c))

  const connect = async (url: string, token: string): Promise<Client> => {
    const c = new Client({name: 'secrets-e2e', version: '1'})
    await c.connect(new StreamableHTTPClientTransport(new URL(url), {requestInit: {headers: {authorization: `Bearer ${token}`}}}))
    return c
  }

  const rpcError = (p: Promise<unknown>) =>
    p.then(
      () => expect.fail('expected a JSON-RPC error'),
      (error: {code: number; message: string}) => error,
    )

  before(async () => {
    everything = await startEverything()
    hosted = await failingHosted(seen)
    dir = mkdtempSync(join(tmpdir(), 'gw-secrets-'))
    const port = (hosted.address() as AddressInfo).port
    env = {
      ...process.env,
      GW_AUTH_FILE: join(dir, 'auth.json'),
      HOME: dir,
      HOSTED_KEY: PATH_KEY,
      HOSTED_QUERY_KEY: QUERY_KEY,
      NO_COLOR: '1',
      TOOLKIT_CONFIG_DIR: join(dir, 'toolkit'),
      XDG_CONFIG_HOME: join(dir, 'xdg'),
    }
    config = join(dir, 'servers.json')
    writeFileSync(
      config,
      JSON.stringify({
        gwServers: {
          everything: {url: everything.url},
          hosted: {url: `http://127.0.0.1:${port}/k/\${HOSTED_KEY}/mcp?api_key=\${HOSTED_QUERY_KEY}`},
          literal: {url: `http://127.0.0.1:${port}/k/${PATH_KEY}/mcp?token=${QUERY_KEY}`},
        },
        serverAuth: {
          acl: {default: 'deny', roles: {admin: [{access: '*', server: '*'}], viewer: [{access: 'read', server: 'everything'}]}},
          bearer: {tokens: {'admin-token': {roles: ['admin'], subject: 'root'}, 'viewer-token': {roles: ['viewer'], subject: 'vic'}}},
          providers: ['bearer'],
        },
      }),
    )
  })

  after(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL')
    await everything?.kill()
    hosted?.close()
    rmSync(dir, {force: true, recursive: true})
  })

  const secretFree = (text: string, where: string) => {
    for (const s of [PATH_KEY, QUERY_KEY, 'hunter2', 'internal-hostname']) expect(text, `${where} leaks ${s}`).not.to.include(s)
  }

  it('fills ${NAME} into the URL it dials, and never shows the key, the query values or the upstream body', async () => {
    const audit = join(dir, 'audit.jsonl')
    const s = await serve(['--audit-log', audit])
    // The real key reached the upstream: substitution works.
    await until(() => seen.some((u) => u === `/k/${PATH_KEY}/mcp?api_key=${QUERY_KEY}`), 15_000, 'the hosted upstream to be dialled')
    const healthText = await (await fetch(new URL('/health', s.url))).text()
    secretFree(healthText, '/health')
    const health = JSON.parse(healthText)
    expect(health.upstreams).to.deep.include.members([
      {name: 'everything', state: 'up'},
      {name: 'hosted', state: 'down'},
    ])
    expect(healthText).not.to.include('127.0.0.1')
    expect(healthText).not.to.include('providers')

    // The ACL speaks first: a user allowed nothing on "hosted" learns nothing about its outage.
    const viewer = await connect(s.url, 'viewer-token')
    const denied = await rpcError(viewer.callTool({arguments: {}, name: 'hosted__anything'}))
    expect(denied.code).to.equal(-32_003)
    expect(denied.message).not.to.match(/unavailable|down|HTTP/)
    await viewer.close()

    const admin = await connect(s.url, 'admin-token')
    const outage = await rpcError(admin.callTool({arguments: {}, name: 'hosted__anything'}))
    expect(outage.code).to.equal(-32_603)
    expect(outage.message).to.match(/server "hosted" is unavailable: down \(HTTP 500\)/)
    secretFree(outage.message, 'the outage error')
    await admin.close()

    s.child.kill('SIGTERM')
    await new Promise((resolve) => s.child.once('exit', resolve))
    secretFree(s.stderr(), 'the log')
    secretFree(readFileSync(audit, 'utf8'), 'the audit log')
  })

  it('gw servers and gw call show the URL masked: the variable name, *** for query values and key-like path segments', async () => {
    const list = await toolkit(['gw', 'servers', '--config', config, '--format', 'json'], {cwd: dir, env: env as Record<string, string>, home: dir})
    expect(list.code, list.stderr).to.equal(0)
    const byName = Object.fromEntries(records(list.stdout).map((r) => [r.name, r.url]))
    expect(byName.hosted).to.match(/\/k\/\$\{HOSTED_KEY\}\/mcp\?api_key=\*\*\*$/)
    expect(byName.literal).to.match(/\/k\/\*\*\*\/mcp\?token=\*\*\*$/)
    secretFree(list.stdout + list.stderr, 'gw servers')
    for (const name of ['hosted', 'literal']) {
      const call = await toolkit(['gw', 'call', name, 'anything', '--config', config], {cwd: dir, env: env as Record<string, string>, home: dir})
      expect(call.code).to.equal(4)
      expect(call.stderr).to.match(/answered HTTP 500/)
      secretFree(call.stdout + call.stderr, `gw call ${name}`)
    }
  })

  it('an unset variable in a URL is a clear error (exit 2), never a request to a truncated URL', async () => {
    const before = seen.length
    const {HOSTED_KEY: _unset, ...without} = env
    const call = await toolkit(['gw', 'call', 'hosted', 'anything', '--config', config], {cwd: dir, env: without as Record<string, string>, home: dir})
    expect(call.code).to.equal(2)
    expect(call.stderr).to.include('"url" uses ${HOSTED_KEY}, which is not set')
    expect(seen.length).to.equal(before)
  })

  it('a call to an upstream restarted while it was marked down reconnects within the call and succeeds', async () => {
    const s = await serve(['--health-interval', '1'])
    const admin = await connect(s.url, 'admin-token')
    const first = await admin.callTool({arguments: {message: 'before'}, name: 'everything__echo'})
    expect(JSON.stringify(first.content)).to.include('before')
    await everything.kill()
    const state = async () => ((await (await fetch(new URL('/health', s.url))).json()) as {upstreams: Array<{name: string; state: string}>}).upstreams.find((u) => u.name === 'everything')?.state
    await until(async () => (await state()) === 'down', 15_000, 'the proxy to notice')
    // Let the backoff grow past a few seconds, so only the call itself can bring it back in time.
    await new Promise((r) => setTimeout(r, 4000))
    await everything.restart()
    const second = await admin.callTool({arguments: {message: 'after the redeploy'}, name: 'everything__echo'}).catch((error: Error) => {
      throw new Error(`${error.message}\n${s.stderr()}`)
    })
    expect(JSON.stringify(second.content)).to.include('after the redeploy')
    await admin.close()
    s.child.kill('SIGTERM')
  })
})
