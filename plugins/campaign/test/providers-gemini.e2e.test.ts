import {expect} from 'chai'
import {readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'

import {startGemini} from './fakes/gemini.js'
import type {Fake, Fault} from './fakes/server.js'
import {exampleDir, readEvents, readJson, runCli, runDirIn, sharedExampleRun, tempDir} from './helpers.js'

const KEY = 'AIza-gemini-test-0123456789'

async function generate(fake: Fake, env: Record<string, string> = {}) {
  const out = tempDir()
  const res = await runCli(['campaign', 'generate', join(exampleDir, 'business.toml'), '--provider', 'gemini', '--out', out, '--skip-url-check', '--format', 'json'], {
    env: {GEMINI_API_KEY: KEY, GOOGLE_GEMINI_BASE_URL: fake.url, ...env},
    timeoutMs: 120_000,
  })
  const runDir = readdirSync(out).length === 1 ? runDirIn(out) : ''
  return {...res, events: runDir ? readEvents(runDir) : [], runDir}
}

const FAULTS: Record<number, Fault> = {1: {kind: 'status', status: 429}, 3: {kind: 'cut'}, 5: {kind: 'malformed'}, 7: {kind: 'stream-error'}}

describe('campaign generate --provider gemini (@google/genai against a loopback generateContent API)', function () {
  this.timeout(180_000)
  let fake: Fake
  afterEach(async () => fake?.close())

  it('plans the example with function calling through a 429, a cut stream, a malformed call and an error event', async () => {
    fake = await startGemini({apiKey: KEY, script: (n) => FAULTS[n]})
    const r = await generate(fake)
    expect(r.code, r.stderr).to.equal(0)
    const local = (await sharedExampleRun()).runDir
    for (const f of readdirSync(join(local, 'google-ads')).filter((x) => x.endsWith('.csv'))) {
      expect(readFileSync(join(r.runDir, 'google-ads', f), 'utf8'), f).to.equal(readFileSync(join(local, 'google-ads', f), 'utf8'))
    }
    expect(fake.requests[0].path).to.match(/^\/v1beta\/models\/gemini-2\.5-pro:streamGenerateContent\?alt=sse/)
    const run = readJson<{model: string; totals: {cost_usd: number}}>(join(r.runDir, 'run.json'))
    expect(run.model).to.equal('gemini-2.5-pro')
    expect(run.totals.cost_usd).to.be.greaterThan(0)
    const texts = r.events.filter((l) => l.event.type === 'agent_text').map((l) => String(l.event.text))
    expect(texts.some((t) => t.includes('rate limited (429)'))).to.equal(true)
    expect(JSON.stringify(fake.requests.map((q) => q.body))).to.include('MALFORMED_FUNCTION_CALL')
    expect(r.stdout + r.stderr + readFileSync(join(r.runDir, 'events.ndjson'), 'utf8')).not.to.include(KEY)
  })

  it('a key the API rejects names GEMINI_API_KEY; no key at all exits 2', async () => {
    fake = await startGemini({apiKey: 'another-key'})
    const rejected = await generate(fake)
    expect(rejected.code).to.equal(1)
    expect(String(rejected.events.find((l) => l.event.type === 'mission_finished')?.event.reason)).to.include('check GEMINI_API_KEY')
    const none = await generate(fake, {GEMINI_API_KEY: ''})
    expect(none.code).to.equal(2)
    expect(none.stderr).to.include('GEMINI_API_KEY')
  })
})
