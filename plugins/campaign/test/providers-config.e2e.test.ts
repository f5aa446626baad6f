import {expect} from 'chai'
import {readdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {exampleDir, runCli, tempDir} from './helpers.js'

// An image provider without its key exits 2 before the run starts: which variable the message
// names shows which provider the configuration chose, without making a single picture.
describe('campaign generate: the image provider chosen by configuration', function () {
  this.timeout(60_000)

  it('campaign.json "images", then TOOLKIT_CAMPAIGN_IMAGES over it, then --images over both', async () => {
    const configDir = tempDir()
    writeFileSync(join(configDir, 'campaign.json'), '{"images": "openai"}')
    const out = tempDir()
    const run = (env: Record<string, string>, extra: string[] = []) =>
      runCli(['campaign', 'generate', join(exampleDir, 'business.toml'), '--out', out, '--skip-url-check', ...extra], {env: {GEMINI_API_KEY: '', GOOGLE_API_KEY: '', OPENAI_API_KEY: '', TOOLKIT_CONFIG_DIR: configDir, ...env}})

    const file = await run({})
    expect(file.code, file.stderr).to.equal(2)
    expect(file.stderr).to.include('OPENAI_API_KEY')

    const env = await run({TOOLKIT_CAMPAIGN_IMAGES: 'gemini'})
    expect(env.code, env.stderr).to.equal(2)
    expect(env.stderr).to.include('GEMINI_API_KEY').and.not.include('OPENAI_API_KEY')

    const flag = await run({TOOLKIT_CAMPAIGN_IMAGES: 'gemini'}, ['--images', 'dalle'])
    expect(flag.code, flag.stderr).to.equal(2)
    expect(flag.stderr).to.include('unknown image provider')
    expect(readdirSync(out)).to.have.length(0)
  })
})
