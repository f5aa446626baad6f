import {expect} from 'chai'
import {join} from 'node:path'

import {startOpenAI} from './fakes/openai.js'
import {exampleDir, readJson, runCli, runDirIn, tempDir} from './helpers.js'

describe('campaign generate --resume with an API provider', function () {
  this.timeout(240_000)

  it('reuses the provider, model and --base-url that run.json recorded, with no flag or variable given again', async () => {
    let refuse = true
    const fake = await startOpenAI({script: () => (refuse ? {kind: 'status', message: 'the server is not ready', status: 400} : undefined)})
    try {
      const out = tempDir()
      const first = await runCli(['campaign', 'generate', join(exampleDir, 'business.toml'), '--out', out, '--skip-url-check', '--provider', 'openai-compatible', '--base-url', `${fake.url}/v1`, '--model', 'qwen3:8b'], {timeoutMs: 120_000})
      expect(first.code, first.stderr).to.equal(1)
      const runDir = runDirIn(out)
      expect(readJson(join(runDir, 'run.json'))).to.include({base_url: `${fake.url}/v1`, model: 'qwen3:8b', provider: 'openai-compatible', status: 'incomplete'})
      const before = fake.requests.length

      refuse = false
      const res = await runCli(['campaign', 'generate', '--resume', runDir, '--skip-url-check'], {env: {OPENAI_COMPATIBLE_BASE_URL: ''}, timeoutMs: 120_000})
      expect(res.code, res.stderr).to.equal(0)
      expect(fake.requests.length).to.be.greaterThan(before)
      expect(readJson(join(runDir, 'run.json'))).to.include({base_url: `${fake.url}/v1`, model: 'qwen3:8b', provider: 'openai-compatible', status: 'success'})
    } finally {
      await fake.close()
    }
  })

})
