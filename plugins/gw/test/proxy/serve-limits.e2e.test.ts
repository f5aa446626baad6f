import {expect} from 'chai'
import type {ChildProcess} from 'node:child_process'
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {Agent, request} from 'node:http'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {type Everything, serveCli, type ServingCli, startEverything} from './helpers.js'

interface Reply {
  body: Record<string, unknown>
  headers: Record<string, string | string[] | undefined>
  status: number
}

const PROTOCOL = '2025-06-18'

/** One JSON-RPC POST to /mcp from a chosen loopback address, as a Streamable HTTP client sends it. */
function rpc(url: string, o: {agent?: Agent; from: string; session?: string; token: string}, message: Record<string, unknown>): Promise<Reply> {
  const body = JSON.stringify({jsonrpc: '2.0', ...message})
  const headers: Record<string, string> = {
    accept: 'application/json, text/event-stream',
    authorization: `Bearer ${o.token}`,
    'content-type': 'application/json',
  }
  if (o.session) Object.assign(headers, {'mcp-protocol-version': PROTOCOL, 'mcp-session-id': o.session})
  return new Promise((resolve, reject) => {
    const r = request(url, {agent: o.agent, headers, localAddress: o.from, method: 'POST'}, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (d) => (text += d))
      res.on('end', () => {
        const line = text.startsWith('{') ? text : (/^data: (.*)$/m.exec(text)?.[1] ?? '{}')
        resolve({body: JSON.parse(line) as Record<string, unknown>, headers: res.headers, status: res.statusCode!})
      })
    })
    r.on('error', reject)
    r.end(body)
  })
}

const initialize = {id: 1, method: 'initialize', params: {capabilities: {}, clientInfo: {name: 'limits', version: '1'}, protocolVersion: PROTOCOL}}

async function openSession(url: string, from: string, token: string): Promise<string> {
  const r = await rpc(url, {from, token}, initialize)
  expect(r.status, JSON.stringify(r.body)).to.equal(200)
  const session = String(r.headers['mcp-session-id'])
  await rpc(url, {from, session, token}, {method: 'notifications/initialized'})
  return session
}

const rssMb = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024

describe('gw serve: one user cannot take the proxy down (built CLI)', function () {
  this.timeout(300_000)
  let upstream: Everything
  let dir: string
  const children: ChildProcess[] = []

  const serve = (config: string, extra: string[] = [], env: Record<string, string> = {}): Promise<ServingCli> =>
    serveCli(['--port', '0', '--config', config, ...extra], {...process.env, GW_AUTH_FILE: join(dir, 'auth.json'), HOME: dir, XDG_CONFIG_HOME: join(dir, 'xdg'), ...env}, (c) =>
      children.push(c),
    )

  const writeConfig = (name: string, serverAuth: unknown): string => {
    const file = join(dir, name)
    writeFileSync(file, JSON.stringify({gwServers: {everything: {url: upstream.url}}, serverAuth}))
    return file
  }

  before(async () => {
    upstream = await startEverything()
    dir = mkdtempSync(join(tmpdir(), 'gw-limits-'))
  })

  after(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL')
    await upstream?.kill()
    rmSync(dir, {force: true, recursive: true})
  })

  it('substitutes ${NAME} in bearer token keys: the real token works, the literal text does not; an unset one stops the start', async () => {
    const config = writeConfig('env-token.json', {bearer: {tokens: {'${CI_TOKEN}': {roles: ['ci'], subject: 'ci'}}}, providers: ['bearer']})
    const s = await serve(config, [], {CI_TOKEN: 'the-real-ci-token'})
    expect((await rpc(s.url, {from: '127.0.0.1', token: 'the-real-ci-token'}, initialize)).status).to.equal(200)
    expect((await rpc(s.url, {from: '127.0.0.1', token: '${CI_TOKEN}'}, initialize)).status).to.equal(401)
    s.child.kill('SIGTERM')
    const {CI_TOKEN: _none, ...withoutToken} = process.env
    const failed = await serve(config, [], withoutToken as Record<string, string>).then(
      () => expect.fail('started with an unset token variable'),
      (error: {code: number; stderr: string}) => error,
    )
    expect(failed.code).to.equal(2)
    expect(failed.stderr).to.include('the token is ${CI_TOKEN}, which is not set')
  })

  it('refuses --host 0.0.0.0 without authentication unless --insecure, and says why', async () => {
    const config = writeConfig('open.json', {providers: []})
    const failed = await serve(config, ['--host', '0.0.0.0']).then(
      () => expect.fail('bound 0.0.0.0 without authentication'),
      (error: {code: number; stderr: string}) => error,
    )
    expect(failed.code).to.equal(2)
    expect(failed.stderr).to.match(/refusing to serve on 0\.0\.0\.0 without authentication.*--insecure/)
    const s = await serve(config, ['--host', '0.0.0.0', '--insecure'])
    expect(s.stderr()).to.include('without authentication (--insecure)')
    s.child.kill('SIGTERM')
  })

  it('deeply nested arguments fail that one call with -32602, the upstream stays up; bad params get a short -32602', async () => {
    const config = writeConfig('nested.json', {bearer: {tokens: {'tok-a': 'alice', 'tok-b': 'bob'}}, providers: ['bearer']})
    const s = await serve(config)
    const a = await openSession(s.url, '127.0.0.1', 'tok-a')
    let deep: unknown = 'leaf'
    for (let i = 0; i < 3000; i++) deep = {x: deep}
    const bad = await rpc(s.url, {from: '127.0.0.1', session: a, token: 'tok-a'}, {id: 2, method: 'tools/call', params: {arguments: {message: deep}, name: 'everything__echo'}})
    expect((bad.body.error as {code: number}).code).to.equal(-32_602)
    expect((bad.body.error as {message: string}).message).to.include('nested deeper than')
    const health = (await (await fetch(new URL('/health', s.url))).json()) as {upstreams: Array<{state: string}>}
    expect(health.upstreams[0].state).to.equal('up')
    const b = await openSession(s.url, '127.0.0.2', 'tok-b')
    const ok = await rpc(s.url, {from: '127.0.0.2', session: b, token: 'tok-b'}, {id: 3, method: 'tools/call', params: {arguments: {message: 'fine'}, name: 'everything__echo'}})
    expect(JSON.stringify(ok.body.result)).to.include('fine')
    const shape = await rpc(s.url, {from: '127.0.0.1', session: a, token: 'tok-a'}, {id: 4, method: 'tools/call', params: {arguments: {}, name: 5}})
    const error = shape.body.error as {code: number; message: string}
    expect(error.code).to.equal(-32_602)
    expect(error.message).to.match(/^invalid params for tools\/call: .*name/)
    expect(error.message.length).to.be.below(200)
    s.child.kill('SIGTERM')
  })

  it('one user opening 10,000 sessions gets 429 + Retry-After while another keeps being served; RSS stays bounded', async () => {
    const config = writeConfig('flood.json', {bearer: {tokens: {'calm-token': 'calm', 'flood-token': 'flooder'}}, providers: ['bearer']})
    const s = await serve(config)
    const calm = await openSession(s.url, '127.0.0.2', 'calm-token')
    const agent = new Agent({keepAlive: true, maxSockets: 16})
    const statuses = new Map<number, number>()
    let retryAfter = ''
    let next = 0
    let flooding = true
    const flood = async () => {
      while (next < 10_000) {
        next++
        const r = await rpc(s.url, {agent, from: '127.0.0.1', token: 'flood-token'}, initialize)
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1)
        if (r.status === 429) retryAfter ||= String(r.headers['retry-after'])
      }
    }
    let served = 0
    const steady = async () => {
      while (flooding) {
        const r = await rpc(s.url, {from: '127.0.0.2', session: calm, token: 'calm-token'}, {id: served + 10, method: 'tools/call', params: {arguments: {a: served, b: 1}, name: 'everything__get-sum'}})
        expect(r.status, JSON.stringify(r.body)).to.equal(200)
        expect(JSON.stringify(r.body.result)).to.include(String(served + 1))
        served++
      }
    }
    const calmLoop = steady()
    await Promise.all(Array.from({length: 16}, flood))
    flooding = false
    await calmLoop
    agent.destroy()
    expect(served).to.be.greaterThan(5)
    expect([...statuses.keys()].sort()).to.deep.equal([200, 429])
    expect(statuses.get(200)).to.be.at.most(100)
    expect(Number(retryAfter)).to.be.greaterThan(0)
    expect(rssMb(s.child.pid!)).to.be.below(300)
    s.child.kill('SIGTERM')
  })

  it('a user past --rate-limit, or an address past --rate-limit-address, gets 429 + Retry-After; another user at another address is served throughout', async () => {
    const config = writeConfig('rates.json', {bearer: {tokens: {'calm-token': 'calm', 'greedy-token': 'greedy', 'other-token': 'other'}}, providers: ['bearer']})
    const s = await serve(config, ['--rate-limit', '5', '--rate-limit-address', '20'])
    const calm = await openSession(s.url, '127.0.0.2', 'calm-token')
    const call = (n: number) => ({id: n, method: 'tools/call', params: {arguments: {a: n, b: 1}, name: 'everything__get-sum'}})
    const burst = async (from: string, token: string) => {
      const replies = await Promise.all(Array.from({length: 30}, () => rpc(s.url, {from, token}, {id: 1, method: 'tools/list'})))
      return replies.filter((r) => r.status === 429)
    }
    // The calm user, at its own address, calls all along; it is never refused.
    const calmRun = (async () => {
      for (let n = 0; n < 8; n++) {
        const r = await rpc(s.url, {from: '127.0.0.2', session: calm, token: 'calm-token'}, call(n))
        expect(r.status, JSON.stringify(r.body)).to.equal(200)
        expect(JSON.stringify(r.body.result)).to.include(String(n + 1))
      }
    })()
    // One user, from its own address: refused by the per-user bucket (burst 10).
    const greedy = await burst('127.0.0.3', 'greedy-token')
    expect(greedy.length).to.be.greaterThan(0)
    expect(Number(greedy[0].headers['retry-after'])).to.be.greaterThan(0)
    expect(JSON.stringify(greedy[0].body)).to.include('too many requests for \\"greedy\\"')
    // Many users' tokens from one address: refused by the per-address bucket (burst 40) before authentication.
    const tokens = ['greedy-token', 'other-token']
    const fromOne = await Promise.all(Array.from({length: 60}, (_, i) => rpc(s.url, {from: '127.0.0.4', token: tokens[i % 2]}, {id: 1, method: 'tools/list'})))
    const byAddress = fromOne.filter((r) => r.status === 429 && JSON.stringify(r.body).includes('too many requests from this address'))
    expect(byAddress.length).to.be.greaterThan(0)
    expect(Number(byAddress[0].headers['retry-after'])).to.be.greaterThan(0)
    await calmRun
    s.child.kill('SIGTERM')
  })

  it('--max-sessions closes the least recently used session to admit a new one; --session-idle closes idle sessions, not busy ones', async () => {
    const config = writeConfig('sessions.json', {bearer: {tokens: {'tok-a': 'a', 'tok-b': 'b', 'tok-c': 'c', 'tok-d': 'd'}}, providers: ['bearer']})
    const list = (session: string, token: string) => rpc(s.url, {from: '127.0.0.1', session, token}, {id: 2, method: 'tools/list'})
    let s = await serve(config, ['--max-sessions', '3'])
    const a = await openSession(s.url, '127.0.0.1', 'tok-a')
    const b = await openSession(s.url, '127.0.0.1', 'tok-b')
    const c = await openSession(s.url, '127.0.0.1', 'tok-c')
    // a is used again, so b is now the least recently used: the fourth user's session replaces it.
    expect((await list(a, 'tok-a')).status).to.equal(200)
    const d = await openSession(s.url, '127.0.0.1', 'tok-d')
    expect((await list(b, 'tok-b')).status, 'the least recently used session was closed').to.equal(404)
    for (const [session, token] of [[a, 'tok-a'], [c, 'tok-c'], [d, 'tok-d']]) expect((await list(session, token)).status).to.equal(200)
    s.child.kill('SIGTERM')

    s = await serve(config, ['--session-idle', '1'])
    const idle = await openSession(s.url, '127.0.0.1', 'tok-a')
    const busy = await openSession(s.url, '127.0.0.1', 'tok-b')
    // The sweep runs every second: busy sends a request every 200 ms for 3 s, idle sends none.
    for (let i = 0; i < 15; i++) {
      const r = await list(busy, 'tok-b')
      expect(r.status, 'a session in use is never closed for idleness').to.equal(200)
      await new Promise((r) => setTimeout(r, 200))
    }
    const gone = await list(idle, 'tok-a')
    expect(gone.status, 'the idle session was closed').to.equal(404)
    expect(JSON.stringify(gone.body)).to.include('Session not found')
    // Its user opens a new one and is served.
    expect((await list(await openSession(s.url, '127.0.0.1', 'tok-a'), 'tok-a')).status).to.equal(200)
    s.child.kill('SIGTERM')
  })
})
