import {expect} from 'chai'
import {readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'

import {startOpenAI} from './fakes/openai.js'
import type {Fake, Fault} from './fakes/server.js'
import {exampleDir, type Line, readEvents, readJson, runCli, runDirIn, sharedExampleRun, tempDir} from './helpers.js'

const KEY = 'sk-openai-test-0123456789abcdef'

async function generate(args: string[], env: Record<string, string>) {
  const out = tempDir()
  const res = await runCli(['campaign', 'generate', join(exampleDir, 'business.toml'), '--out', out, '--skip-url-check', '--format', 'json', ...args], {env, timeoutMs: 120_000})
  const runDir = readdirSync(out).length === 1 ? runDirIn(out) : ''
  return {...res, events: runDir ? readEvents(runDir) : [], runDir}
}

const ofType = (events: Line[], type: string) => events.filter((l) => l.event.type === type).map((l) => l.event)

async function sameFilesAsOffline(runDir: string): Promise<void> {
  const local = (await sharedExampleRun()).runDir
  for (const f of readdirSync(join(local, 'google-ads')).filter((x) => x.endsWith('.csv'))) {
    expect(readFileSync(join(runDir, 'google-ads', f), 'utf8'), f).to.equal(readFileSync(join(local, 'google-ads', f), 'utf8'))
  }
}

// Faults a user meets, one per request early in the run: the provider retries each and goes on.
const FAULTS: Record<number, Fault> = {1: {kind: 'status', retryAfter: 0, status: 429}, 3: {kind: 'cut'}, 5: {kind: 'malformed'}, 7: {kind: 'status', retryAfter: 0, status: 503}}

describe('campaign generate --provider openai / openai-compatible (the real openai SDK against a loopback API)', function () {
  this.timeout(180_000)
  let fake: Fake
  afterEach(async () => fake?.close())

  it('openai: plans the example over the Responses API through retries, a cut stream and a broken call', async () => {
    fake = await startOpenAI({apiKey: KEY, script: (n) => FAULTS[n]})
    const r = await generate(['--provider', 'openai'], {OPENAI_API_KEY: KEY, OPENAI_BASE_URL: `${fake.url}/v1`})
    expect(r.code, r.stderr).to.equal(0)
    await sameFilesAsOffline(r.runDir)
    expect(fake.requests.every((q) => q.path === '/v1/responses')).to.equal(true)
    expect((fake.requests[0].body as {store: boolean}).store).to.equal(false)
    const run = readJson<{model: string; totals: {cost_usd: number}}>(join(r.runDir, 'run.json'))
    expect(run.model).to.equal('gpt-5')
    expect(run.totals.cost_usd).to.be.greaterThan(0)
    const texts = ofType(r.events, 'agent_text').map((e) => String(e.text))
    expect(texts.some((t) => t.includes('rate limited (429)'))).to.equal(true)
    expect(texts.some((t) => t.includes('server error 503'))).to.equal(true)
    expect(JSON.stringify(fake.requests.map((q) => q.body))).to.include('were not valid JSON')
    expect(r.stdout + r.stderr + readFileSync(join(r.runDir, 'events.ndjson'), 'utf8')).not.to.include(KEY)
  })

  it('openai: without OPENAI_API_KEY exits 2 naming the variable, before any run directory exists', async () => {
    fake = await startOpenAI()
    const r = await generate(['--provider', 'openai'], {OPENAI_API_KEY: '', OPENAI_BASE_URL: `${fake.url}/v1`})
    expect(r.code).to.equal(2)
    expect(r.stderr).to.include('OPENAI_API_KEY')
    expect(r.runDir).to.equal('')
  })

  it('openai-compatible: plans over Chat Completions with --base-url and no key, and never sends OPENAI_API_KEY', async () => {
    fake = await startOpenAI({script: (n) => FAULTS[n]})
    const r = await generate(['--provider', 'openai-compatible', '--base-url', `${fake.url}/v1`, '--model', 'qwen3:8b'], {OPENAI_API_KEY: KEY})
    expect(r.code, r.stderr).to.equal(0)
    await sameFilesAsOffline(r.runDir)
    expect(fake.requests.every((q) => q.path === '/v1/chat/completions')).to.equal(true)
    expect(JSON.stringify(fake.requests.map((q) => q.headers))).not.to.include(KEY)
    const run = readJson<{model: string; totals: {cost_usd: null; input_tokens: number}}>(join(r.runDir, 'run.json'))
    expect(run.model).to.equal('qwen3:8b')
    // A model without a price: tokens are counted, the cost is unknown.
    expect(run.totals.input_tokens).to.be.greaterThan(0)
    expect(run.totals.cost_usd).to.equal(null)
  })

  it('openai-compatible: without a base URL or a model exits 2 and says what to give', async () => {
    const noUrl = await generate(['--provider', 'openai-compatible', '--model', 'm'], {})
    expect(noUrl.code).to.equal(2)
    expect(noUrl.stderr).to.include('--base-url').and.include('OPENAI_COMPATIBLE_BASE_URL')
    const noModel = await generate(['--provider', 'openai-compatible', '--base-url', 'http://127.0.0.1:9/v1'], {})
    expect(noModel.code).to.equal(2)
    expect(noModel.stderr).to.include('--model')
    const badUrl = await generate(['--provider', 'openai-compatible', '--base-url', 'localhost:11434', '--model', 'm'], {})
    expect(badUrl.code).to.equal(2)
    expect(badUrl.stderr).to.include('http(s) URL')
  })
})
