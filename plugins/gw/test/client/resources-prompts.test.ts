import {expect} from 'chai'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {type Everything, startEverything} from '../proxy/helpers.js'
import {records, toolkit} from './cli.js'

const TOOLS_ONLY = fileURLToPath(new URL('../fixtures/tools-only-server.mjs', import.meta.url))

describe('gw resources | read | prompts | prompt (built CLI, server-everything over Streamable HTTP)', function () {
  this.timeout(120_000)
  let everything: Everything
  let dir: string
  const run = (args: string[]) => toolkit(args, {cwd: dir, home: dir, timeoutMs: 60_000})

  before(async () => {
    everything = await startEverything()
    dir = mkdtempSync(join(tmpdir(), 'gw-resources-'))
    writeFileSync(join(dir, 'servers.json'), JSON.stringify({gwServers: {everything: {url: everything.url}, plain: {args: [TOOLS_ONLY], command: process.execPath}}}))
  })

  after(async () => {
    await everything?.kill()
    rmSync(dir, {force: true, recursive: true})
  })

  it('lists resources and templates, and reads text and binary contents', async () => {
    const list = await run(['gw', 'resources', 'everything', '--format', 'json'])
    expect(list.code, list.stderr).to.equal(0)
    const found = records(list.stdout)
    expect(found.find((r) => r.uri === 'demo://resource/static/document/architecture.md')).to.deep.include({mimeType: 'text/markdown', server: 'everything', type: 'resource'})
    expect(found.filter((r) => r.type === 'template').map((r) => r.uriTemplate)).to.include('demo://resource/dynamic/blob/{resourceId}')

    const text = await run(['gw', 'read', 'everything', 'demo://resource/static/document/architecture.md'])
    expect(text.code, text.stderr).to.equal(0)
    expect(text.stdout).to.match(/^# Everything Server/)

    const blob = await run(['gw', 'read', 'everything', 'demo://resource/dynamic/blob/1'])
    expect(blob.code, blob.stderr).to.equal(0)
    expect(blob.stdout).to.match(/^\(binary [a-z]+\/[a-z-]+, \d+ bytes: use --format json\)/)
    const blobJson = records((await run(['gw', 'read', 'everything', 'demo://resource/dynamic/blob/1', '--format', 'json'])).stdout)[0]
    expect(blobJson).to.deep.include({server: 'everything', type: 'resource_contents', uri: 'demo://resource/dynamic/blob/1'})
    expect((blobJson.contents as Array<{blob?: string}>)[0].blob).to.be.a('string')
  })

  it('lists prompts and gets one with arguments; missing, unknown and non-text arguments are usage errors', async () => {
    const list = await run(['gw', 'prompts', 'everything', '--format', 'json'])
    expect(list.code, list.stderr).to.equal(0)
    const args = records(list.stdout).find((p) => p.name === 'args-prompt')
    expect(args?.arguments).to.deep.include({description: 'Name of the city', name: 'city', required: true})

    const got = await run(['gw', 'prompt', 'everything', 'args-prompt', 'city=Lisbon', 'state=Lisboa'])
    expect(got.code, got.stderr).to.equal(0)
    expect(got.stdout).to.match(/^user: What's weather in Lisbon, Lisboa\?/)
    const json = records((await run(['gw', 'prompt', 'everything', 'args-prompt', '{"city": "Porto"}', '--format', 'json'])).stdout)[0]
    expect(json).to.deep.include({prompt: 'args-prompt', server: 'everything', type: 'prompt_result'})
    expect(JSON.stringify(json.messages)).to.include('Porto')

    for (const [argv, message] of [
      [['args-prompt'], 'prompt "args-prompt" needs city=...'],
      [['args-promt', 'city=x'], 'has no prompt "args-promt"; did you mean "args-prompt"?'],
      [['args-prompt', 'city:=3'], 'prompt argument city: prompt arguments are text, got 3'],
    ] as const) {
      const r = await run(['gw', 'prompt', 'everything', ...argv])
      expect(r.code, argv.join(' ')).to.equal(2)
      expect(r.stderr).to.include(message)
    }
  })

  it('a server that offers no resources or prompts says so (exit 2)', async () => {
    for (const command of ['resources', 'prompts']) {
      const r = await run(['gw', command, 'plain', '--format', 'json'])
      expect(r.code, r.stderr).to.equal(2)
      expect(r.stderr).to.include(`server "plain" offers no ${command}`)
    }
  })
})
