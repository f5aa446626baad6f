import {expect} from 'chai'
import {readFileSync, statSync} from 'node:fs'
import {join} from 'node:path'

import {startOpenAI} from './fakes/openai.js'
import type {Fake} from './fakes/server.js'
import {exampleDir, runCli, tempDir} from './helpers.js'
import {filesUnder} from '../../../packages/kit/test/helpers/files-under.js'

const KEY = 'sk-planted-secret-5e8f1a2b3c4d'
const WRONG = 'sk-wrong-secret-9a8b7c6d5e4f'

function assertNowhere(secret: string, printed: string, dirs: string[]): void {
  expect(printed.includes(secret), 'the key was printed').to.equal(false)
  for (const f of dirs.flatMap((d) => filesUnder(d))) {
    if (statSync(f).size > 50_000_000) continue
    expect(readFileSync(f).includes(secret), `the key found in ${f}`).to.equal(false)
  }
}

// Issue 20: the model provider's API key (and a wrong one the API refuses) never reaches stdout,
// stderr, --format json records, error messages, events, transcripts or any file of the run.
// campaign keeps no key in a file of its own: keys come from the environment only.
describe('campaign never prints or stores the API key (built CLI, the openai SDK against a loopback API)', function () {
  this.timeout(240_000)
  let fake: Fake
  afterEach(async () => fake?.close())

  it('a run with a planted key: not in stdout, stderr, json records, events, transcripts or any run file', async () => {
    fake = await startOpenAI({apiKey: KEY})
    const out = tempDir()
    const home = tempDir()
    const r = await runCli(['campaign', 'generate', join(exampleDir, 'business.toml'), '--out', out, '--skip-url-check', '--provider', 'openai', '--format', 'json'], {
      env: {HOME: home, OPENAI_API_KEY: KEY, OPENAI_BASE_URL: `${fake.url}/v1`, TOOLKIT_CONFIG_DIR: join(home, 'cfg'), XDG_CONFIG_HOME: home},
      timeoutMs: 200_000,
    })
    expect(r.code, r.stderr).to.equal(0)
    expect(fake.requests.length, 'the key was sent to the API: the test would prove nothing otherwise').to.be.greaterThan(0)
    const files = filesUnder(out)
    expect(files.some((f) => f.endsWith('events.ndjson'))).to.equal(true)
    assertNowhere(KEY, r.stdout + r.stderr, [out, home])
  })

  it('a key the API refuses: a clear error and a non-zero exit, the key in no message or file', async () => {
    fake = await startOpenAI({apiKey: KEY})
    const out = tempDir()
    const home = tempDir()
    const r = await runCli(['campaign', 'generate', join(exampleDir, 'business.toml'), '--out', out, '--skip-url-check', '--provider', 'openai', '--format', 'json'], {
      env: {HOME: home, OPENAI_API_KEY: WRONG, OPENAI_BASE_URL: `${fake.url}/v1`, TOOLKIT_CONFIG_DIR: join(home, 'cfg'), XDG_CONFIG_HOME: home},
      timeoutMs: 200_000,
    })
    expect(r.code).to.not.equal(0)
    expect(r.stdout + r.stderr).to.match(/401|unauthori[sz]ed|API key|invalid/i)
    assertNowhere(WRONG, r.stdout + r.stderr, [out, home])
  })
})
