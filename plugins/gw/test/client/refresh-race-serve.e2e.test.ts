import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {expect} from 'chai'
import type {ChildProcess} from 'node:child_process'
import {randomBytes} from 'node:crypto'
import {mkdtempSync, readFileSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import getPort from 'get-port'

import {type Everything, serveCli, type ServingCli, startEverything, until} from '../proxy/helpers.js'
import {records, toolkit} from './cli.js'
import {postForm, signInAtOAuthAs} from './oauth-as-sign-in.js'

const REDIRECT = 'http://localhost:9/callback'
/** Each round restarts the authorization server and spawns 6 CLIs: 2 in CI, more in `npm run soak` (GW_SERVE_RACE_ROUNDS). */
const ROUNDS = Number(process.env.GW_SERVE_RACE_ROUNDS) || 2
const CALLS = 6
const SESSIONS = 4
/** How many refresh exchanges a process reports in its log. */
const exchanges = (log: string): number => log.split('refreshed the access token for proxy').length - 1

/** Established loopback connections to `port` (the client ends), from /proc/net/tcp. */
function waitingAt(port: number): number {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, '0')}`
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f[2]?.endsWith(hex) && f[3] === '01').length
}

/**
 * A `gw serve` whose upstream is protected by an authorization server that rotates refresh tokens
 * and revokes the grant when a used one comes back (gw's own `oauth_as`), and `gw call`s, all
 * sharing one token store. Each round the authorization server restarts with a new signing key,
 * so every access token anyone holds dies at the same moment (as on a key rotation) and the
 * serve's upstream session and every call need the refresh at once.
 */
describe('gw serve and gw call refreshing through one token store at the same time (rotating refresh tokens)', function () {
  this.timeout(ROUNDS * 120_000)
  let upstream: Everything
  let dir: string
  let base: string
  let asPort: number
  let asConfig: string
  let authFile: string
  let servers: string
  let as: ServingCli | undefined
  let proxy: ServingCli
  const children: ChildProcess[] = []
  const env = (): NodeJS.ProcessEnv => ({...process.env, GW_AUTH_FILE: authFile, HOME: dir, XDG_CONFIG_HOME: join(dir, 'xdg')})

  /** The authorization server (and protected MCP server) with a fresh signing key; clients and grants persist. */
  const startAs = async () => {
    const stateFile = join(dir, 'as-state.json')
    writeFileSync(
      asConfig,
      JSON.stringify({
        gwServers: {everything: {url: upstream.url}},
        serverAuth: {
          oauthAs: {issuerUrl: base, jwtSecret: randomBytes(32).toString('base64url'), redirectUriAllowlist: [REDIRECT], stateFile, trustedSourceCidrs: ['127.0.0.1/32']},
          providers: ['oauth_as'],
        },
      }),
    )
    as = await serveCli(['--port', String(asPort), '--config', asConfig], {...env(), GW_AUTH_FILE: join(dir, 'as-upstream-auth.json')}, (c) => children.push(c))
  }

  const stopAs = async () => {
    const c = as?.child
    if (!c || c.exitCode !== null) return
    await new Promise((resolve) => {
      c.once('exit', resolve)
      c.kill('SIGTERM')
    })
  }

  const form = (path: string, params: Record<string, string>) => postForm(base, path, params)

  const stored = () => JSON.parse(readFileSync(authFile, 'utf8')) as {clients: Record<string, {client_id: string}>; tokens: Record<string, {expires_at: number; refresh_token: string}>}

  before(async () => {
    upstream = await startEverything()
    dir = mkdtempSync(join(tmpdir(), 'gw-serve-race-'))
    authFile = join(dir, 'auth.json')
    asConfig = join(dir, 'as.json')
    asPort = await getPort({host: '127.0.0.1'})
    base = `http://127.0.0.1:${asPort}`
    const mcpUrl = `${base}/mcp`
    await startAs()
    const {clientId, tokens} = await signInAtOAuthAs(base, REDIRECT, 'ada')
    writeFileSync(
      authFile,
      JSON.stringify({
        clients: {[mcpUrl]: {client_id: clientId, redirect_uri: REDIRECT}},
        tokens: {[mcpUrl]: {access_token: tokens.access_token, expires_at: Math.floor(Date.now() / 1000) + 3000, refresh_token: tokens.refresh_token, token_type: 'Bearer'}},
      }),
      {mode: 0o600},
    )
    servers = join(dir, 'servers.json')
    writeFileSync(servers, JSON.stringify({gwServers: {proxy: {url: mcpUrl}}}))
    // The serve in front: no authentication of its own (loopback), the protected server upstream.
    // Its wait for the upstream within a call is the connection timeout: as long as the SDK
    // client's own request timeout, so a loaded machine (CLIs slow to start) cannot outlast it.
    proxy = await serveCli(['--port', '0', '--config', servers, '--health-interval', '1', '--connect-timeout', '60'], env(), (c) => children.push(c))
  })

  after(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL')
    await upstream?.kill()
    rmSync(dir, {force: true, recursive: true})
  })

  it(`${ROUNDS} key rotations: the serve's sessions and ${CALLS} parallel calls all succeed, with one refresh exchange per round`, async () => {
    const sessions = await Promise.all(
      Array.from({length: SESSIONS}, async () => {
        const c = new Client({name: 'serve-race', version: '1'})
        await c.connect(new StreamableHTTPClientTransport(new URL(proxy.url)))
        return c
      }),
    )
    const before = await sessions[0].callTool({arguments: {message: 'warm'}, name: 'proxy__everything__echo'})
    expect(JSON.stringify(before.content)).to.include('warm')
    let previous = stored().tokens[`${base}/mcp`].refresh_token
    for (let round = 0; round < ROUNDS; round++) {
      await stopAs()
      await startAs()
      // Hold the authorization server until every holder has its request in flight, so all of them
      // meet the dead token together instead of one after another as the CLIs happen to start.
      as!.child.kill('SIGSTOP')
      const serveBefore = exchanges(proxy.stderr())
      const calls = Promise.all(
        Array.from({length: CALLS}, (_, i) =>
          toolkit(['gw', 'call', 'proxy', 'everything__echo', `message=round ${round} call ${i}`, '--config', servers, '--format', 'json'], {
            cwd: dir,
            env: {GW_AUTH_FILE: authFile, GW_TOOLS_CACHE_TTL: '3600'},
            home: join(dir, 'home'),
            timeoutMs: 120_000,
          }),
        ),
      )
      try {
        await until(() => waitingAt(asPort) >= CALLS, 90_000, 'every call to reach the authorization server')
      } catch (error) {
        as!.child.kill('SIGCONT')
        throw error
      }
      // The serve waits for a down upstream within a call (up to --connect-timeout), so its sessions go last.
      const viaServe = Promise.all(
        sessions.map((s, i) =>
          s.callTool({arguments: {message: `round ${round} session ${i}`}, name: 'proxy__everything__echo'}).catch((error: Error) => {
            throw new Error(`round ${round} session ${i}: ${error.message}\n${proxy.stderr()}`)
          }),
        ),
      )
      await until(() => waitingAt(asPort) > CALLS, 3000).catch(() => {})
      as!.child.kill('SIGCONT')
      const [ran, served] = await Promise.all([calls, viaServe])
      for (const [i, r] of ran.entries()) {
        expect(r.code, `round ${round} call ${i}: ${r.stderr}`).to.equal(0)
        expect(JSON.stringify(records(r.stdout)[0].content)).to.include(`round ${round} call ${i}`)
      }
      for (const [i, r] of served.entries()) expect(JSON.stringify(r.content)).to.include(`round ${round} session ${i}`)
      // Seven holders of a dead token, one exchange: the serve and the calls took its result from the store.
      const total = ran.reduce((n, r) => n + exchanges(r.stderr), 0) + exchanges(proxy.stderr()) - serveBefore
      expect(total, `round ${round}: refresh exchanges`).to.equal(1)
      const after = stored().tokens[`${base}/mcp`]
      expect(after?.refresh_token, `round ${round}: the store lost its token`).to.be.a('string')
      expect(after.refresh_token).not.to.equal(previous)
      previous = after.refresh_token
    }
    await Promise.all(sessions.map((s) => s.close()))
    expect(statSync(authFile).mode & 0o777).to.equal(0o600)
    // The refresh token left in the store still works: the grant was never revoked.
    const last = await form('/token', {client_id: stored().clients[`${base}/mcp`].client_id, grant_type: 'refresh_token', refresh_token: previous})
    expect(last.status, JSON.stringify(last.body)).to.equal(200)
  })
})
