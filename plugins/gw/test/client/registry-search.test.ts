import {expect} from 'chai'
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import getPort from 'get-port'

import {type Everything, startEverything} from '../proxy/helpers.js'
import {records, toolkit} from './cli.js'

/**
 * A loopback stand-in for the official MCP registry's read API (registry.modelcontextprotocol.io,
 * /v0.1): the list and latest-version routes, with the response shape the registry serves.
 */
function standIn(servers: Array<Record<string, unknown>>, seen: string[]): Promise<Server> {
  const wrap = (server: Record<string, unknown>) => ({_meta: {'io.modelcontextprotocol.registry/official': {isLatest: true, status: 'active'}}, server})
  const http = createServer((req, res) => {
    seen.push(req.url ?? '')
    const url = new URL(req.url ?? '/', 'http://registry')
    const json = (status: number, body: unknown) => {
      res.writeHead(status, {'content-type': 'application/json'})
      res.end(JSON.stringify(body))
    }
    if (url.pathname === '/v0.1/servers') {
      const q = (url.searchParams.get('search') ?? '').toLowerCase()
      const hits = servers.filter((s) => String(s.name).toLowerCase().includes(q)).slice(0, Number(url.searchParams.get('limit') ?? 30))
      return json(200, {metadata: {count: hits.length}, servers: hits.map((s) => wrap(s))})
    }
    const m = /^\/v0\.1\/servers\/([^/]+)\/versions\/latest$/.exec(url.pathname)
    const found = m && servers.find((s) => s.name === decodeURIComponent(m[1]))
    if (found) return json(200, wrap(found))
    json(404, {detail: 'Server not found', status: 404, title: 'Not Found'})
  })
  return new Promise((resolve) => http.listen(0, '127.0.0.1', () => resolve(http)))
}

describe('gw search and gw add --from-registry (built CLI, a loopback stand-in of the MCP registry API)', function () {
  this.timeout(120_000)
  let everything: Everything
  let registry: Server
  let base: string
  let dir: string
  const seen: string[] = []
  const run = (args: string[], env: Record<string, string> = {}) => toolkit(args, {cwd: dir, env, home: dir})

  before(async () => {
    everything = await startEverything()
    registry = await standIn(
      [
        {
          description: 'Every MCP feature, for testing clients',
          name: 'io.github.example/everything',
          remotes: [{headers: [{description: 'your key', isRequired: true, isSecret: true, name: 'X-Api-Key'}], type: 'streamable-http', url: everything.url}],
          version: '2.0.0',
        },
        {
          description: 'Files on disk',
          name: 'io.github.example/files',
          packages: [
            {
              environmentVariables: [{isSecret: true, name: 'FILES_TOKEN'}, {default: 'warn', name: 'LOG_LEVEL'}],
              identifier: '@example/files-mcp',
              packageArguments: [{type: 'positional', value: '/srv/data'}],
              registryType: 'npm',
              transport: {type: 'stdio'},
              version: '1.2.3',
            },
          ],
          version: '1.2.3',
        },
        {name: 'io.github.example/dotnet-only', packages: [{identifier: 'Example.Mcp', registryType: 'nuget', transport: {type: 'stdio'}, version: '1.0.0'}], version: '1.0.0'},
      ],
      seen,
    )
    base = `http://127.0.0.1:${(registry.address() as AddressInfo).port}`
    dir = mkdtempSync(join(tmpdir(), 'gw-registry-search-'))
    writeFileSync(join(dir, 'servers.json'), '{"gwServers": {}}\n')
  })

  after(async () => {
    registry?.close()
    await everything?.kill()
    rmSync(dir, {force: true, recursive: true})
  })

  it('search lists matching servers with how they run, asking the registry for the latest versions', async () => {
    const r = await run(['gw', 'search', 'example', '--registry', base, '--limit', '5', '--format', 'json'])
    expect(r.code, r.stderr).to.equal(0)
    const found = records(r.stdout)
    expect(found.map((s) => s.name)).to.deep.equal(['io.github.example/everything', 'io.github.example/files', 'io.github.example/dotnet-only'])
    expect(found[1]).to.deep.include({packages: ['npm:@example/files-mcp@1.2.3'], remotes: [], type: 'registry_server', version: '1.2.3'})
    expect(seen).to.include('/v0.1/servers?search=example&version=latest&limit=5')
    const none = await run(['gw', 'search', 'nothing-like-this'], {GW_REGISTRY_URL: base})
    expect(none.code, none.stderr).to.equal(0)
    expect(none.stderr).to.include(`nothing in ${base} matches "nothing-like-this"`)
  })

  it('adds a remote server with its secret header as ${VAR}; the added server answers a call', async () => {
    const add = await run(['gw', 'add', 'ev', '--from-registry', 'io.github.example/everything', '--registry', base, '--format', 'json'])
    expect(add.code, add.stderr).to.equal(0)
    expect(seen).to.include('/v0.1/servers/io.github.example%2Feverything/versions/latest')
    expect(add.stderr).to.include('"ev" reads ${X_API_KEY} from the environment')
    expect(JSON.parse(readFileSync(join(dir, 'servers.json'), 'utf8')).gwServers.ev).to.deep.equal({headers: {'X-Api-Key': '${X_API_KEY}'}, url: everything.url})
    const call = await run(['gw', 'call', 'ev', 'echo', 'message=from the registry', '--format', 'json'], {X_API_KEY: 'k'})
    expect(call.code, call.stderr).to.equal(0)
    expect(JSON.stringify(records(call.stdout)[0].content)).to.include('from the registry')
  })

  it('adds a package server as a pinned npx command, its secret as ${VAR} and its defaults as values', async () => {
    const add = await run(['gw', 'add', 'files', '--from-registry', 'io.github.example/files'], {GW_REGISTRY_URL: base})
    expect(add.code, add.stderr).to.equal(0)
    expect(JSON.parse(readFileSync(join(dir, 'servers.json'), 'utf8')).gwServers.files).to.deep.equal({
      args: ['-y', '@example/files-mcp@1.2.3', '/srv/data'],
      command: 'npx',
      env: {FILES_TOKEN: '${FILES_TOKEN}', LOG_LEVEL: 'warn'},
    })
  })

  it('unknown names, servers gw cannot run and an unreachable registry are clear errors; the file is left as it was', async () => {
    const before = readFileSync(join(dir, 'servers.json'), 'utf8')
    const unknown = await run(['gw', 'add', 'x', '--from-registry', 'io.github.example/nope', '--registry', base])
    expect(unknown.code).to.equal(2)
    expect(unknown.stderr).to.include('has no server "io.github.example/nope"')
    const dotnet = await run(['gw', 'add', 'x', '--from-registry', 'io.github.example/dotnet-only', '--registry', base])
    expect(dotnet.code).to.equal(2)
    expect(dotnet.stderr).to.include('offers neither an HTTP remote nor an npm, PyPI or OCI package')
    const mixed = await run(['gw', 'add', 'x', '--from-registry', 'io.github.example/files', '--url', 'https://x.example.com/mcp', '--registry', base])
    expect(mixed.code).to.equal(2)
    const closed = `http://127.0.0.1:${await getPort({host: '127.0.0.1'})}`
    const down = await run(['gw', 'search', 'x', '--registry', closed, '--format', 'json'])
    expect(down.code).to.equal(4)
    expect(down.stderr).to.include(`cannot reach the registry at ${closed}: connection refused`)
    expect(readFileSync(join(dir, 'servers.json'), 'utf8')).to.equal(before)
  })
})
