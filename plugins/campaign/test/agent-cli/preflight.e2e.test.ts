import {expect} from 'chai'
import {chmodSync, existsSync, mkdirSync, readdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {compareVersions, probeCli} from '../../src/providers/agent-cli/cli-check.js'
import {CLAUDE} from '../../src/providers/agent-cli/claude.js'
import {CODEX} from '../../src/providers/agent-cli/codex.js'
import {describeAgentCli} from '../../src/providers/agent-cli/describe.js'
import {exampleDir, runCli, tempDir} from '../helpers.js'
import {cliPath} from './cli-env.js'

/** No credentials of the machine may reach these runs. */
const NO_KEYS = {ANTHROPIC_API_KEY: '', ANTHROPIC_AUTH_TOKEN: '', CLAUDE_CODE_OAUTH_TOKEN: '', CODEX_API_KEY: '', OPENAI_API_KEY: '', OPENAI_BASE_URL: ''}

/** A folder holding `name`, a script that prints `output` for --version. */
function stub(name: string, output: string): string {
  const dir = tempDir('agent-cli-stub-')
  const file = join(dir, name)
  writeFileSync(file, `#!/bin/sh\necho '${output}'\n`)
  chmodSync(file, 0o755)
  return dir
}

async function generate(provider: string, env: Record<string, string>) {
  const out = tempDir()
  const home = tempDir('agent-cli-home-')
  mkdirSync(join(home, '.codex'))
  const result = await runCli(['campaign', 'generate', join(exampleDir, 'business.toml'), '--provider', provider, '--skip-url-check', '--out', out], {
    env: {...NO_KEYS, CODEX_HOME: join(home, '.codex'), HOME: home, XDG_CACHE_HOME: join(home, '.cache'), ...env},
    timeoutMs: 60_000,
  })
  return {...result, runDirs: existsSync(out) ? readdirSync(out) : []}
}

describe('agent-cli: checks before any mission starts', function () {
  this.timeout(90_000)

  for (const provider of ['claude', 'codex']) {
    it(`${provider} missing from PATH: exit 2, says how to install it, no run directory`, async () => {
      const r = await generate(provider, {PATH: tempDir('empty-path-')})
      expect(r.code).to.equal(2)
      expect(r.stderr).to.include(`the ${provider} CLI was not found on PATH`)
      expect(r.stderr).to.include('npm install -g')
      expect(r.runDirs).to.deep.equal([])
    })
  }

  it('claude of an unsupported version: exit 2 naming the version needed', async () => {
    const r = await generate('claude', {ANTHROPIC_API_KEY: 'sk-test-not-used-0123456789', PATH: stub('claude', '1.0.3 (Claude Code)')})
    expect(r.code).to.equal(2)
    expect(r.stderr).to.match(/claude 1\.0\.3 at .* is not supported: toolkit needs claude 2\.1\.330 or newer/)
    expect(r.stderr).not.to.include('sk-test-not-used')
    expect(r.runDirs).to.deep.equal([])
  })

  it('codex of an unsupported version: exit 2', async () => {
    const r = await generate('codex', {OPENAI_API_KEY: 'sk-test-not-used-0123456789', PATH: stub('codex', 'codex-cli 0.20.0')})
    expect(r.code).to.equal(2)
    expect(r.stderr).to.include('codex 0.20.0')
    expect(r.stderr).to.include('0.169.0 or newer')
  })

  it('a program that is not the CLI: exit 2', async () => {
    const r = await generate('claude', {ANTHROPIC_API_KEY: 'sk-test-not-used-0123456789', PATH: stub('claude', 'hello')})
    expect(r.code).to.equal(2)
    expect(r.stderr).to.include('did not print a claude version')
  })

  it('the real claude CLI with no key and no login: exit 2, says what to set', async () => {
    const r = await generate('claude', {PATH: cliPath})
    expect(r.code, r.stderr).to.equal(2)
    expect(r.stderr).to.include('claude is not logged in: set ANTHROPIC_API_KEY')
    expect(r.runDirs).to.deep.equal([])
  })

  it('the real codex CLI with no key and no login: exit 2, says what to set', async () => {
    const r = await generate('codex', {PATH: cliPath})
    expect(r.code, r.stderr).to.equal(2)
    expect(r.stderr).to.include('codex is not logged in: set OPENAI_API_KEY, or run `codex login`')
    expect(r.runDirs).to.deep.equal([])
  })

  it('probes the installed CLIs for the providers list', () => {
    const env = {...process.env, PATH: cliPath}
    expect(probeCli(CLAUDE, env)).to.deep.include({ok: true})
    expect(probeCli(CODEX, env)).to.deep.include({ok: true})
    const missing = probeCli(CLAUDE, {PATH: tempDir('empty-path-')})
    expect(missing).to.deep.include({found: null, ok: false})
  })

  it('describes each CLI for the providers list: version, credentials, and why not usable', async () => {
    const home = tempDir('agent-cli-home-')
    const env = {CODEX_HOME: home, HOME: home, PATH: cliPath}
    const keyed = await describeAgentCli('claude', {check: false, model: null}, {...env, ANTHROPIC_API_KEY: 'sk-test-0123456789', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9'})
    expect(keyed).to.deep.equal({base_url: 'http://127.0.0.1:9', default_model: null, detail: 'claude 2.1.330; ANTHROPIC_API_KEY is set', kind: 'agent-cli', name: 'claude', usable: true, version: '2.1.330'})
    expect(JSON.stringify(keyed)).not.to.include('sk-test')
    const unchecked = await describeAgentCli('codex', {check: false, model: 'gpt-x'}, env)
    expect(unchecked).to.include({default_model: 'gpt-x', usable: true, version: '0.169.0'})
    expect(unchecked.detail).to.include('stored login not checked')
    const checked = await describeAgentCli('codex', {check: true, model: null}, env)
    expect(checked).to.include({usable: false})
    expect(checked.detail).to.include('codex is not logged in')
    const missing = await describeAgentCli('claude', {check: false, model: null}, {PATH: tempDir('empty-path-')})
    expect(missing).to.include({usable: false, version: null})
    expect(missing.detail).to.include('not found on PATH')
  })

  it('compares versions by number, not text', () => {
    expect(compareVersions('2.1.330', '2.1.99')).to.be.greaterThan(0)
    expect(compareVersions('0.169.0', '0.169.0')).to.equal(0)
    expect(compareVersions('0.99.9', '0.169.0')).to.be.lessThan(0)
  })
})
