import {expect} from 'chai'
import {createServer} from 'node:net'

import {jsonLines} from '../../../test/helpers/cli.js'
import {startOpenAI} from './fakes/openai.js'
import {runCli} from './helpers.js'

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const s = createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
  const {port} = s.address() as {port: number}
  await new Promise((r) => s.close(r))
  return port
}

describe('campaign providers', function () {
  this.timeout(60_000)

  it('lists every provider with its kind, whether it is usable and its default model', async () => {
    const r = await runCli(['campaign', 'providers', '--format', 'json'], {env: {ANTHROPIC_API_KEY: 'sk-ant-secret-1', GEMINI_API_KEY: '', OPENAI_API_KEY: ''}})
    expect(r.code, r.stderr).to.equal(0)
    const rows = jsonLines(r.stdout)
    const by = Object.fromEntries(rows.map((x) => [x.name, x]))
    expect(Object.keys(by)).to.include.members(['local', 'anthropic', 'openai', 'openai-compatible', 'gemini'])
    expect(by.local).to.include({default: true, kind: 'offline', usable: true})
    expect(by.anthropic).to.include({default_model: 'claude-opus-4-5', kind: 'api', usable: true})
    expect(by.openai).to.include({kind: 'api', usable: false})
    expect(String(by.openai.detail)).to.include('OPENAI_API_KEY')
    expect(r.stdout).not.to.include('sk-ant-secret-1')
  })

  it('takes the default provider, model and base URL from the configuration, and --check reaches the endpoint', async () => {
    const fake = await startOpenAI()
    try {
      const env = {TOOLKIT_CAMPAIGN_BASE_URL: `${fake.url}/v1`, TOOLKIT_CAMPAIGN_MODEL: 'qwen3:8b', TOOLKIT_CAMPAIGN_PROVIDER: 'openai-compatible'}
      const r = await runCli(['campaign', 'providers', '--check', '--format', 'json'], {env})
      expect(r.code, r.stderr).to.equal(0)
      const row = jsonLines(r.stdout).find((x) => x.name === 'openai-compatible')
      expect(row).to.include({base_url: `${fake.url}/v1`, default: true, default_model: 'qwen3:8b', usable: true})
      expect(String(row?.detail)).to.include('answers')
      expect(fake.requests.length).to.be.greaterThan(0)

      const down = await runCli(['campaign', 'providers', '--check', '--format', 'json'], {env: {...env, TOOLKIT_CAMPAIGN_BASE_URL: `http://127.0.0.1:${await closedPort()}/v1`}})
      const off = jsonLines(down.stdout).find((x) => x.name === 'openai-compatible')
      expect(off).to.include({usable: false})
      expect(String(off?.detail)).to.include('unreachable')
    } finally {
      await fake.close()
    }
  })
})
