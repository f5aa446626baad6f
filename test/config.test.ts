import {expect} from 'chai'
import {mkdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {envName, loadLayeredConfig} from '../src/lib/layered-config.js'
import {freshHome, jsonLines, runCli} from './helpers/cli.js'
import {scratchDir} from './helpers/scratch.js'

const defaults = {hosts: ['a'], port: 80, verbose: false, name: 'x'}

function configDir(files: Record<string, string>): string {
  const dir = scratchDir('toolkit-config-')
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text)
  return dir
}

describe('config loading hook', () => {
  it('merges defaults < config.json section < <namespace>.json < environment < flags', () => {
    const dir = configDir({
      'config.json': JSON.stringify({demo: {name: 'from-config', port: 81, verbose: true}, other: {ignored: 1}}),
      'demo.json': '// comments are allowed\n{"port": 82, "hosts": ["b", "c"]}\n',
    })
    const {sources, values} = loadLayeredConfig(dir, {
      defaults,
      env: {TOOLKIT_DEMO_VERBOSE: 'false'},
      flags: {name: 'from-flag'},
      namespace: 'demo',
    })
    expect(values).to.deep.equal({hosts: ['b', 'c'], name: 'from-flag', port: 82, verbose: false})
    expect(sources.port).to.equal(`file:${join(dir, 'demo.json')}:2`)
    expect(sources.verbose).to.equal('env:TOOLKIT_DEMO_VERBOSE')
    expect(sources.name).to.equal('flag')
    expect(sources.hosts).to.match(/demo\.json:2$/)
  })

  it("puts a plugin's own file (a layer) above toolkit's files and below the environment", () => {
    const dir = configDir({'demo.json': '{"port": 82, "name": "from-demo-json"}'})
    const {files, sources, values} = loadLayeredConfig(dir, {
      defaults,
      env: {TOOLKIT_DEMO_NAME: 'from-env'},
      layers: [{file: '/srv/demo.edn', lines: {port: 7}, values: {name: 'from-edn', port: 90, verbose: true}}],
      namespace: 'demo',
    })
    expect(values).to.deep.include({name: 'from-env', port: 90, verbose: true})
    expect(sources).to.deep.include({name: 'env:TOOLKIT_DEMO_NAME', port: 'file:/srv/demo.edn:7', verbose: 'file:/srv/demo.edn'})
    expect(files).to.deep.equal([join(dir, 'demo.json'), '/srv/demo.edn'])
    const bad = {defaults, env: {}, namespace: 'demo'}
    expect(() => loadLayeredConfig(dir, {...bad, layers: [{file: '/srv/demo.edn', lines: {port: 3}, values: {port: 'x'}}]})).to.throw('/srv/demo.edn:3: "port" must be a number, not string')
    expect(() => loadLayeredConfig(dir, {...bad, layers: [{file: '/srv/demo.edn', values: {prot: 1}}]})).to.throw('/srv/demo.edn: unknown key "prot"')
  })

  it('uses the defaults when there are no files', () => {
    const {files, values} = loadLayeredConfig(configDir({}), {defaults, env: {}, namespace: 'demo'})
    expect(files).to.deep.equal([])
    expect(values).to.deep.equal(defaults)
  })

  it('names file and line for a syntax error', () => {
    const dir = configDir({'demo.json': '{\n  "port": 82,\n  "name": \n}\n'})
    expect(() => loadLayeredConfig(dir, {defaults, env: {}, namespace: 'demo'})).to.throw(`${join(dir, 'demo.json')}:4:1: invalid JSON: value expected`)
  })

  it('names file and line for an unknown key and for a wrong type', () => {
    const dir = configDir({'config.json': '{\n  "demo": {\n    "prot": 1\n  }\n}\n'})
    expect(() => loadLayeredConfig(dir, {defaults, env: {}, namespace: 'demo'})).to.throw(/config\.json:3:5: unknown key "prot"/)
    const dir2 = configDir({'demo.json': '{\n\n  "port": "eighty"\n}'})
    expect(() => loadLayeredConfig(dir2, {defaults, env: {}, namespace: 'demo'})).to.throw(/demo\.json:3:11: "port" must be a number, not string/)
  })

  it('rejects an environment value of the wrong type, naming the variable', () => {
    expect(() => loadLayeredConfig(configDir({}), {defaults, env: {TOOLKIT_DEMO_PORT: 'many'}, namespace: 'demo'})).to.throw('TOOLKIT_DEMO_PORT=many is not a number')
  })

  it('derives environment names from camelCase keys', () => {
    expect(envName('gw', 'callbackPort')).to.equal('TOOLKIT_GW_CALLBACK_PORT')
  })

  it('reports a malformed config file from the CLI with file, line and exit 2', async () => {
    const home = freshHome()
    const dir = join(home.dir, 'cfg')
    mkdirSync(dir)
    writeFileSync(join(dir, 'toolkit.json'), '{\n  "logLevel": "debug",\n  "logLevel" "x"\n}\n')
    const r = await runCli(['config', 'show', '--format', 'json'], {env: {...home.env, TOOLKIT_CONFIG_DIR: dir}})
    expect(r.code).to.equal(2)
    expect(r.stderr).to.include(`${join(dir, 'toolkit.json')}:3:`)
    expect(jsonLines(r.stdout)[0]).to.deep.include({type: 'error'})
  })
})
