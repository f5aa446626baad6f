import {expect} from 'chai'
import {chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {EVERYTHING} from '../proxy/helpers.js'
import {records, toolkit} from './cli.js'

/** A servers.json as a person writes it: four-space indent, the Claude Desktop key, a proxy section. */
const HANDWRITTEN = `{
    "mcpServers": {
        "remote": {
            "url": "https://mcp.example.com/mcp"
        }
    },
    "serverAuth": {"providers": ["bearer"], "bearer": {"tokens": {"\${CI_TOKEN}": "ci"}}}
}
`

describe('gw add | remove | config path | config edit (built CLI)', function () {
  this.timeout(120_000)
  let dir: string
  let home: string
  let project: string
  const userFile = () => join(home, '.config', 'gw', 'servers.json')
  const run = (args: string[], env: Record<string, string> = {}, cwd = project) => toolkit(args, {cwd, env, home})

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'gw-registry-'))
    home = join(dir, 'home')
    project = join(dir, 'project')
    mkdirSync(project, {recursive: true})
  })
  afterEach(() => rmSync(dir, {force: true, recursive: true}))

  it('config path names the user file before any exists; gw add creates it (0600) and the server it adds works', async () => {
    const path = await run(['gw', 'config', 'path', '--format', 'json'])
    expect(path.code, path.stderr).to.equal(0)
    expect(records(path.stdout)[0]).to.deep.include({exists: false, file: userFile()})

    const add = await run(['gw', 'add', 'everything', '--format', 'json', '--', process.execPath, EVERYTHING, 'stdio'])
    expect(add.code, add.stderr).to.equal(0)
    expect(records(add.stdout)[0]).to.deep.include({file: userFile(), name: 'everything', replaced: false, type: 'server_added'})
    expect(statSync(userFile()).mode & 0o777).to.equal(0o600)
    expect(JSON.parse(readFileSync(userFile(), 'utf8'))).to.deep.equal({gwServers: {everything: {args: [EVERYTHING, 'stdio'], command: process.execPath}}})

    const call = await run(['gw', 'call', 'everything', 'get-sum', 'a=2', 'b=3', '--format', 'json'])
    expect(call.code, call.stderr).to.equal(0)
    expect(JSON.stringify(records(call.stdout)[0].content)).to.include('5')
    expect(records((await run(['gw', 'config', 'path', '--format', 'json'])).stdout)[0]).to.deep.include({exists: true, file: userFile()})
  })

  it('adds to and removes from a hand-written file, leaving the rest of it byte for byte', async () => {
    const file = join(project, 'servers.json')
    writeFileSync(file, HANDWRITTEN)
    chmodSync(file, 0o640)
    const add = await run(['gw', 'add', 'github', '--url', 'https://api.githubcopilot.com/mcp/', '--header', 'Authorization: Bearer ${GITHUB_TOKEN}'])
    expect(add.code, add.stderr).to.equal(0)
    expect(add.stdout).to.include(`added "github" to ${file}`)
    const text = readFileSync(file, 'utf8')
    expect(text).to.include('        "github": {\n            "url": "https://api.githubcopilot.com/mcp/",')
    expect(text).to.include('"serverAuth": {"providers": ["bearer"], "bearer": {"tokens": {"${CI_TOKEN}": "ci"}}}')
    expect(statSync(file).mode & 0o777, 'the file keeps its mode').to.equal(0o640)
    const servers = await run(['gw', 'servers', '--format', 'json'])
    expect(records(servers.stdout).map((r) => r.name)).to.deep.equal(['remote', 'github'])

    const rm = await run(['gw', 'remove', 'github', '--format', 'json'])
    expect(rm.code, rm.stderr).to.equal(0)
    expect(records(rm.stdout)[0]).to.deep.include({file, name: 'github', type: 'server_removed'})
    expect(readFileSync(file, 'utf8')).to.equal(HANDWRITTEN)
  })

  it('refuses what would break the file or lose an entry, and leaves the file as it was', async () => {
    const file = join(project, 'servers.json')
    writeFileSync(file, HANDWRITTEN)
    const cases: Array<{args: string[]; message: RegExp}> = [
      {args: ['gw', 'add', 'remote', '--url', 'https://other.example.com/mcp'], message: /server "remote" already exists in .*; add --force to replace it/},
      {args: ['gw', 'add', 'bad', '--url', 'ftp://files.example.com/'], message: /servers\.json: the change would make the file invalid: .*"url" must be an http:\/\/ or https:\/\/ URL/},
      {args: ['gw', 'add', 'a__b', '--url', 'https://x.example.com/mcp'], message: /not "__"/},
      {args: ['gw', 'add', 'both', '--url', 'https://x.example.com/mcp', '--', 'npx', 'pkg'], message: /either --url .* or a command/},
      {args: ['gw', 'add', 'none'], message: /give --url URL for an HTTP server, or the command after --/},
      {args: ['gw', 'add', 'h', '--url', 'https://x.example.com/mcp', '--header', 'no-colon'], message: /header "no-colon" is not "Name: value"/},
      {args: ['gw', 'add', 'e', '--url', 'https://x.example.com/mcp', '--env', 'A=1'], message: /--env is for local \(command\) servers/},
      {args: ['gw', 'remove', 'remot'], message: /unknown server "remot" in .*; did you mean "remote"\?/},
    ]
    for (const c of cases) {
      const r = await run([...c.args, '--format', 'json'])
      expect(r.code, `${c.args.join(' ')}: ${r.stderr}`).to.equal(2)
      expect(r.stderr).to.match(c.message)
      expect((records(r.stdout)[0].error as {exit: number}).exit).to.equal(2)
      expect(readFileSync(file, 'utf8'), c.args.join(' ')).to.equal(HANDWRITTEN)
    }
    const forced = await run(['gw', 'add', 'remote', '--url', 'https://other.example.com/mcp', '--force'])
    expect(forced.code, forced.stderr).to.equal(0)
    expect(forced.stdout).to.include('replaced "remote"')
    expect(JSON.parse(readFileSync(file, 'utf8')).mcpServers.remote).to.deep.equal({url: 'https://other.example.com/mcp'})

    writeFileSync(file, '{"gwServers": {')
    const broken = await run(['gw', 'add', 'x', '--url', 'https://x.example.com/mcp'])
    expect(broken.code).to.equal(2)
    expect(broken.stderr).to.include('servers.json')
    expect(readFileSync(file, 'utf8')).to.equal('{"gwServers": {')
  })

  it('a credential written in clear works but is warned about, and is never echoed', async () => {
    const add = await run(['gw', 'add', 'api', '--url', 'https://api.example.com/mcp', '--header', 'Authorization: Bearer sk-live-1234567890abcdef', '--format', 'json'])
    expect(add.code, add.stderr).to.equal(0)
    expect(add.stderr).to.match(/Warning: header Authorization of "api" are written in clear/)
    expect(add.stdout + add.stderr).not.to.include('sk-live-1234567890abcdef')
    expect(records(add.stdout)[0].entry).to.deep.equal({headers: {Authorization: '***'}, url: 'https://api.example.com/mcp'})
  })

  it('config edit: a valid edit replaces the file; an invalid one changes nothing and keeps the draft; a failed editor changes nothing', async () => {
    const file = join(project, 'servers.json')
    writeFileSync(file, HANDWRITTEN)
    const editor = (script: string) => {
      const path = join(dir, `editor-${Math.random().toString(36).slice(2)}.sh`)
      writeFileSync(path, `#!/bin/sh\n${script}\n`, {mode: 0o755})
      return path
    }
    const ok = await run(['gw', 'config', 'edit', '--format', 'json'], {EDITOR: editor(`sed -i 's#mcp.example.com#mcp2.example.com#' "$1"`)})
    expect(ok.code, ok.stderr).to.equal(0)
    expect(records(ok.stdout)[0]).to.deep.include({changed: true, created: false, file})
    expect(readFileSync(file, 'utf8')).to.equal(HANDWRITTEN.replace('mcp.example.com', 'mcp2.example.com'))

    const before = readFileSync(file, 'utf8')
    const bad = await run(['gw', 'config', 'edit'], {EDITOR: editor(`printf '{"gwServers": {"x": {"url": 5}}}' > "$1"`)})
    expect(bad.code).to.equal(2)
    expect(bad.stderr).to.match(/"url" must be an http:\/\/ or https:\/\/ URL.*servers\.json was not changed, your edit is kept in .*servers\.edit\.json/)
    expect(readFileSync(file, 'utf8')).to.equal(before)
    expect(existsSync(join(project, 'servers.edit.json'))).to.equal(true)

    const failed = await run(['gw', 'config', 'edit'], {EDITOR: editor('exit 3')})
    expect(failed.code).to.equal(1)
    expect(failed.stderr).to.match(/the editor .* exited with 3; servers.json was not changed/)
    expect(readFileSync(file, 'utf8')).to.equal(before)

    const unchanged = await run(['gw', 'config', 'edit'], {VISUAL: 'true'})
    expect(unchanged.code, unchanged.stderr).to.equal(0)
    expect(unchanged.stdout).to.include('unchanged')
  })
})
