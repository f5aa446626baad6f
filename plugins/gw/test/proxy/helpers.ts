import type {TokenFile, TokenStore} from '@toolkit/kit'
import {type ChildProcess, spawn} from 'node:child_process'
import {rmSync} from 'node:fs'
import {createRequire} from 'node:module'
import {dirname, join} from 'node:path'

import {McpError} from '@modelcontextprotocol/sdk/types.js'
import {expect} from 'chai'
import getPort from 'get-port'
import {Redis} from 'ioredis'

const require = createRequire(import.meta.url)
export const EVERYTHING = join(dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')), 'dist/index.js')
export const RUN_JS = new URL('../../../../bin/run.js', import.meta.url).pathname

export interface Everything {
  kill(): Promise<void>
  /** SIGSTOP / SIGCONT: a process that is there but answers nothing, as on a machine under heavy load. */
  pause(): void
  resume(): void
  port: number
  /** Starts it again on the same port. */
  restart(): Promise<void>
  url: string
}

/** `@modelcontextprotocol/server-everything` in Streamable HTTP mode, on a free port. */
export async function startEverything(): Promise<Everything> {
  const port = await getPort({host: '127.0.0.1'})
  let child: ChildProcess | undefined
  const launch = () =>
    new Promise<void>((resolve, reject) => {
      const c = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {env: {...process.env, PORT: String(port)}, stdio: ['ignore', 'ignore', 'pipe']})
      child = c
      let err = ''
      const timer = setTimeout(() => reject(new Error(`server-everything did not start: ${err}`)), 60_000)
      c.stderr!.on('data', (d: Buffer) => {
        err += d.toString()
        if (/listening on port/i.test(err)) {
          clearTimeout(timer)
          resolve()
        }
      })
      c.once('exit', (code) => {
        clearTimeout(timer)
        reject(new Error(`server-everything exited (${code}): ${err}`))
      })
    })
  const kill = async () => {
    const c = child
    if (!c || c.exitCode !== null || (c.signalCode !== null && c.signalCode !== 'SIGSTOP' && c.signalCode !== 'SIGCONT')) return
    await new Promise<void>((resolve) => {
      c.once('exit', () => resolve())
      c.kill('SIGKILL')
    })
  }
  await launch()
  return {kill, pause: () => child?.kill('SIGSTOP'), port, restart: launch, resume: () => child?.kill('SIGCONT'), url: `http://127.0.0.1:${port}/mcp`}
}

/** An in-memory store with the shape of the host's token store, for in-process proxy tests. */
export function memoryTokenStore(): TokenStore {
  let data: TokenFile = {clients: {}, tokens: {}}
  return {
    file: '(memory)',
    async get(url) {
      return {client: data.clients[url], token: data.tokens[url]}
    },
    async read() {
      return structuredClone(data)
    },
    async remove(url, what = 'all') {
      if (what !== 'token') delete data.clients[url]
      if (what !== 'client') delete data.tokens[url]
    },
    async setClient(url, client) {
      data.clients[url] = client
    },
    async setToken(url, token) {
      data.tokens[url] = token
    },
    async update(mutate) {
      const copy = structuredClone(data)
      await mutate(copy)
      data = copy
      return structuredClone(data)
    },
  }
}

/** Polls `check` every 50 ms until it returns true, failing after `ms`. */
export async function until(check: () => boolean | Promise<boolean>, ms = 15_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (await check()) return
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`timed out waiting for ${what}`)
}

export interface ServingCli {
  child: ChildProcess
  stderr: () => string
  /** The MCP endpoint from the listening record. */
  url: string
}

/**
 * Starts `toolkit gw serve --http --format json` from the built CLI and resolves with its
 * listening record; a start that fails rejects with the exit code and stderr.
 */
export function serveCli(args: string[], env: NodeJS.ProcessEnv, started?: (child: ChildProcess) => void): Promise<ServingCli> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [RUN_JS, 'gw', 'serve', '--http', '--format', 'json', ...args], {env})
    started?.(child)
    let out = ''
    let err = ''
    child.stderr!.on('data', (d) => (err += d))
    child.stdout!.on('data', (d) => {
      out += d
      const first = out.includes('\n') ? (JSON.parse(out.split('\n')[0]) as {type?: string; url?: string}) : undefined
      // An error record comes before the exit: the exit handler reports it.
      if (first && first.type !== 'error') resolve({child, stderr: () => err, url: String(first.url)})
    })
    child.once('exit', (code) => reject(Object.assign(new Error(`gw serve exited ${code}: ${err}`), {code, stderr: err})))
  })
}

/** The JSON-RPC error a client call ends with (fails the test when it succeeds or fails otherwise). */
export async function rpcError(p: Promise<unknown>): Promise<McpError> {
  try {
    await p
  } catch (error) {
    expect(error).to.be.instanceOf(McpError)
    return error as McpError
  }
  throw new Error('expected a JSON-RPC error')
}

/** A real redis-server on loopback, its data in `dir` (append-only, fsync always) so a restart keeps it. */
export async function startRedis(port: number, dir: string, kind: 'redis-server' | 'svc' = 'redis-server'): Promise<ChildProcess> {
  // The other Redis-protocol store the docs name: `toolkit svc server`'s Redis port, its data in `dir` (kept across a restart).
  const child =
    kind === 'svc'
      ? spawn(process.execPath, [RUN_JS, 'svc', 'server', '--data-dir', join(dir, 'svc-store'), '--redis-port', String(port), '--disable-rest', '--disable-sql', '--log-level', 'error'], {stdio: 'ignore'})
      : spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir], {stdio: 'ignore'})
  const probe = new Redis({lazyConnect: true, port, retryStrategy: () => 100})
  probe.on('error', () => {})
  await until(async () => probe.ping().then(() => true, () => false), 60_000, kind)
  probe.disconnect()
  return child
}


/** Ends what a replicas test started: the replicas, its redis-server, the upstream and the scratch directory. */
export async function stopReplicas(replicas: Array<ServingCli | undefined>, redis: ChildProcess | undefined, upstream: Everything | undefined, dir: string | undefined): Promise<void> {
  for (const s of replicas) if (s && s.child.exitCode === null) s.child.kill('SIGKILL')
  if (redis && redis.exitCode === null) redis.kill('SIGKILL')
  await upstream?.kill()
  if (dir) rmSync(dir, {force: true, recursive: true})
}

/**
 * `gw serve --http` in process on a free loopback port, with bearer tokens and a role ACL
 * (default deny): the set-up the in-process proxy tests share. `extra` adds or overrides
 * request fields (limits, timeouts, log).
 */
export async function serveBearer(
  servers: Record<string, {args?: string[]; command?: string; url?: string}>,
  auth: {roles: Record<string, unknown[]>; tokens: Record<string, {roles: string[]; subject: string}>},
  extra: Partial<import('../../src/proxy/serve.js').ServeRequest> = {},
): Promise<import('../../src/proxy/serve.js').RunningProxy> {
  const {startServe} = await import('../../src/proxy/serve.js')
  return startServe({
    config: {
      file: '/virtual/servers.json',
      raw: {gwServers: servers, serverAuth: {acl: {default: 'deny', roles: auth.roles}, bearer: {tokens: auth.tokens}, providers: ['bearer']}},
      servers,
    },
    env: {},
    http: {host: '127.0.0.1', port: 0},
    log: () => {},
    store: memoryTokenStore(),
    ...extra,
  })
}
