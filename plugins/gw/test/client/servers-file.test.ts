import {expect} from 'chai'
import {mkdirSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {isEmptyCredential, loadServersConfig, resolveHeaders} from '../../src/client/servers-file.js'

describe('gw client: servers.json', () => {
  let dir: string
  let project: string
  let configDir: string
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'gw-config-'))
    project = join(dir, 'project')
    configDir = join(dir, 'config', 'gw')
    mkdirSync(project)
    mkdirSync(configDir, {recursive: true})
  })
  afterEach(() => rmSync(dir, {force: true, recursive: true}))

  const write = (file: string, data: unknown): void => writeFileSync(file, typeof data === 'string' ? data : JSON.stringify(data))

  it('looks in the project directory first, then the user config directory', async () => {
    write(join(configDir, 'servers.json'), {gwServers: {user: {url: 'https://user.example/mcp'}}})
    let c = await loadServersConfig({configDir, cwd: project, env: {}})
    expect(c.file).to.equal(join(configDir, 'servers.json'))
    expect(Object.keys(c.servers)).to.deep.equal(['user'])
    write(join(project, 'servers.json'), {gwServers: {proj: {url: 'https://proj.example/mcp'}}})
    c = await loadServersConfig({configDir, cwd: project, env: {}})
    expect(c.file).to.equal(join(project, 'servers.json'))
    expect(Object.keys(c.servers)).to.deep.equal(['proj'])
  })

  it('--config and GW_CONFIG win over both', async () => {
    write(join(project, 'servers.json'), {gwServers: {proj: {url: 'https://proj.example/mcp'}}})
    write(join(dir, 'other.json'), {gwServers: {other: {url: 'https://other.example/mcp'}}})
    expect(Object.keys((await loadServersConfig({cwd: project, env: {GW_CONFIG: join(dir, 'other.json')}})).servers)).to.deep.equal(['other'])
    expect(Object.keys((await loadServersConfig({cwd: project, env: {}, file: '../other.json'})).servers)).to.deep.equal(['other'])
  })

  it('XDG_CONFIG_HOME places the user directory', async () => {
    write(join(configDir, 'servers.json'), {gwServers: {user: {url: 'https://user.example/mcp'}}})
    const c = await loadServersConfig({cwd: project, env: {XDG_CONFIG_HOME: join(dir, 'config')}})
    expect(c.file).to.equal(join(configDir, 'servers.json'))
  })

  it('no file at all is an empty configuration, not an error', async () => {
    const c = await loadServersConfig({configDir, cwd: project, env: {}})
    expect(c).to.deep.equal({file: undefined, raw: {}, servers: {}})
  })

  it('keeps the raw object (serverAuth for the proxy) and reads mcpServers as well', async () => {
    write(join(project, 'servers.json'), {mcpServers: {a: {args: ['x'], command: 'node'}}, serverAuth: {providers: ['bearer']}})
    const c = await loadServersConfig({cwd: project, env: {}})
    expect(c.raw.serverAuth).to.deep.equal({providers: ['bearer']})
    expect(c.servers.a).to.deep.equal({args: ['x'], command: 'node'})
  })

  it('malformed JSON: InputError with file, line and column', async () => {
    const file = join(project, 'servers.json')
    write(file, '{\n  "gwServers": {\n    "a": {"url": "https://a"},\n  }\n}')
    try {
      await loadServersConfig({cwd: project, env: {}})
      expect.fail('parsed')
    } catch (error) {
      const e = error as {exitCode: number; file: string; line: number; message: string}
      expect(e.exitCode).to.equal(2)
      expect(e.file).to.equal(file)
      expect(e.line).to.equal(4)
      expect(e.message).to.match(new RegExp(`^${file.replaceAll('.', String.raw`\.`)}:4:\\d+: invalid JSON`))
    }
  })

  for (const [what, entry, message] of [
    ['a url that is not http(s)', {url: 'ftp://x'}, /"url" must be an http/],
    ['headers that are not strings', {headers: {A: 1}, url: 'https://x'}, /"headers" must be an object of strings/],
    ['args that are not strings', {args: [1], command: 'node'}, /"args" must be an array of strings/],
    ['an entry that is not an object', 'https://x', /must be an object/],
  ] as const) {
    it(`refuses ${what}, naming the line of the entry`, async () => {
      write(join(project, 'servers.json'), JSON.stringify({gwServers: {first: {url: 'https://ok'}, bad: entry}}, null, 2))
      try {
        await loadServersConfig({cwd: project, env: {}})
        expect.fail('accepted')
      } catch (error) {
        expect((error as Error).message).to.match(message)
        expect((error as {line: number}).line).to.equal(6)
      }
    })
  }

  describe('resolveHeaders', () => {
    it('replaces ${VAR} from the environment', () => {
      expect(resolveHeaders({headers: {Authorization: 'Bearer ${TOK}', 'X-Team': '${TEAM}-eu'}}, {TEAM: 'core', TOK: 'abc'})).to.deep.equal({
        Authorization: 'Bearer abc',
        'X-Team': 'core-eu',
      })
    })

    it('drops an Authorization header that resolves to "Bearer" with an empty token', () => {
      expect(resolveHeaders({headers: {authorization: 'Bearer ${MISSING}', 'X-Other': 'v'}}, {})).to.deep.equal({'X-Other': 'v'})
      expect(resolveHeaders({headers: {Authorization: 'Bearer ${EMPTY}'}}, {EMPTY: ''})).to.deep.equal({})
    })

    it('keeps a literal token and other schemes', () => {
      expect(resolveHeaders({headers: {Authorization: 'Token abc'}}, {})).to.deep.equal({Authorization: 'Token abc'})
      expect(isEmptyCredential('Bearer  ')).to.equal(true)
      expect(isEmptyCredential('Bearer x')).to.equal(false)
    })
  })
})
