import {expect} from 'chai'
import {existsSync, readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'

import {createBrain} from './fakes/brain.js'
import {startAnthropic} from './fakes/anthropic.js'
import type {Fake, FakeOptions} from './fakes/server.js'
import {exampleDir, type Line, readEvents, readJson, runCli, runDirIn, sharedExampleRun, tempDir} from './helpers.js'

const KEY = 'sk-ant-test-0123456789abcdef'

async function generate(fake: Fake, extra: string[] = [], env: Record<string, string | undefined> = {}) {
  const out = tempDir()
  const res = await runCli(['campaign', 'generate', join(exampleDir, 'business.toml'), '--provider', 'anthropic', '--out', out, '--skip-url-check', '--format', 'json', ...extra], {
    env: {ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: fake.url, ...env} as Record<string, string>,
    timeoutMs: 120_000,
  })
  const runDir = readdirSync(out).length === 1 ? runDirIn(out) : ''
  return {...res, events: runDir ? readEvents(runDir) : [], out, runDir}
}

const ofType = (events: Line[], type: string) => events.filter((l) => l.event.type === type).map((l) => l.event)

async function withFake<T>(options: FakeOptions, body: (fake: Fake) => Promise<T>): Promise<T> {
  const fake = await startAnthropic(options)
  try {
    return await body(fake)
  } finally {
    await fake.close()
  }
}

describe('campaign generate --provider anthropic (the real SDK against a loopback Messages API)', function () {
  this.timeout(180_000)

  it('plans the example through tool use, fixes refused calls, and writes the same files as the offline planner', async () => {
    await withFake({apiKey: KEY}, async (fake) => {
      const r = await generate(fake)
      expect(r.code, r.stderr).to.equal(0)
      const local = (await sharedExampleRun()).runDir
      for (const f of readdirSync(join(local, 'google-ads')).filter((x) => x.endsWith('.csv'))) {
        expect(readFileSync(join(r.runDir, 'google-ads', f), 'utf8'), f).to.equal(readFileSync(join(local, 'google-ads', f), 'utf8'))
      }
      const run = readJson<{model: string; provider: string; totals: {cost_usd: number; input_tokens: number}}>(join(r.runDir, 'run.json'))
      expect(run).to.include({model: 'claude-opus-4-5', provider: 'anthropic'})
      expect(run.totals.input_tokens).to.be.greaterThan(0)
      expect(run.totals.cost_usd).to.be.greaterThan(0)
      // The brain's wrong calls came back refused and the model went on.
      const refused = ofType(r.events, 'tool_finished').filter((e) => e.ok === false)
      expect(refused.length).to.be.greaterThan(0)
      // A usage event after every model response: one per request the fake answered.
      expect(ofType(r.events, 'usage').length).to.equal(fake.requests.length)
      expect(ofType(r.events, 'agent_text').length).to.be.greaterThan(0)
      // Prompt caching: the system prompt and the last tool definition carry cache_control.
      const body = fake.requests[0].body as {system: Array<{cache_control?: unknown}>; tools: Array<{cache_control?: unknown}>}
      expect(body.system[0].cache_control).to.deep.equal({type: 'ephemeral'})
      expect(body.tools.at(-1)?.cache_control).to.deep.equal({type: 'ephemeral'})
      // Every message sent and received is in the transcript; the key is nowhere.
      const transcript = readFileSync(join(r.runDir, 'transcripts', 'plan.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>)
      expect(transcript[0]).to.include({provider: 'anthropic', type: 'request'})
      expect(transcript.filter((m) => m.role === 'assistant').length).to.equal(fake.requests.filter((q) => JSON.stringify(q.body).includes('set_account_plan')).length)
      for (const f of readdirSync(r.runDir, {recursive: true}) as string[]) {
        const p = join(r.runDir, f)
        if (existsSync(p) && !p.endsWith('.jpg') && !p.endsWith('.png') && f.includes('.')) expect(readFileSync(p, 'utf8'), f).not.to.include(KEY)
      }
      expect(r.stdout + r.stderr).not.to.include(KEY)
    })
  })

  it('without ANTHROPIC_API_KEY exits 2 before any mission starts, naming the variable', async () => {
    await withFake({}, async (fake) => {
      const r = await generate(fake, [], {ANTHROPIC_API_KEY: ''})
      expect(r.code).to.equal(2)
      expect(r.stderr).to.include('ANTHROPIC_API_KEY')
      expect(r.runDir).to.equal('')
      expect(fake.requests).to.have.length(0)
    })
  })

  it('a rejected key fails the plan with a message naming the variable, exit 1, and the key is not printed', async () => {
    await withFake({apiKey: 'the-right-key'}, async (fake) => {
      const r = await generate(fake)
      expect(r.code).to.equal(1)
      const reason = ofType(r.events, 'mission_finished')[0].reason as string
      expect(reason).to.match(/anthropic rejected the credentials \(401\): check ANTHROPIC_API_KEY/)
      // Another attempt cannot fix a refused key: one attempt, recorded as not worth retrying.
      expect(readJson<{missions: {plan: {status: unknown}}}>(join(r.runDir, 'workspace.json')).missions.plan.status).to.deep.equal({failed: {reason, retry: false}})
      expect(ofType(r.events, 'mission_started')).to.have.length(1)
      expect(r.stdout + r.stderr + readFileSync(join(r.runDir, 'events.ndjson'), 'utf8')).not.to.include(KEY)
    })
  })

  it('a key refused access (403) fails the plan naming the variable and the model, exit 1, and the key is not printed', async () => {
    await withFake({script: () => ({kind: 'status', message: 'Your API key does not have permission to use the specified resource.', status: 403})}, async (fake) => {
      const r = await generate(fake)
      expect(r.code, r.stderr).to.equal(1)
      const reason = 'anthropic refused access (403): check ANTHROPIC_API_KEY and that the key may use claude-opus-4-5'
      expect(ofType(r.events, 'mission_finished')).to.deep.equal([{mission: 'plan', ok: false, reason, type: 'mission_finished'}])
      expect(r.stdout + r.stderr).to.include(reason)
      // Access does not come back on another attempt: one model request, the mission not retried.
      expect(fake.requests).to.have.length(1)
      expect(readJson<{missions: {plan: {status: unknown}}}>(join(r.runDir, 'workspace.json')).missions.plan.status).to.deep.equal({failed: {reason, retry: false}})
      expect(r.stdout + r.stderr + readFileSync(join(r.runDir, 'events.ndjson'), 'utf8')).not.to.include(KEY)
    })
  })

  it('waits out 429 (retry-after) and 529 overloaded, saying so, and retries a 500, a cut stream and an error event', async () => {
    const faults: Record<number, FakeOptions['script'] extends infer S ? (S extends (...a: never[]) => infer R ? R : never) : never> = {
      1: {kind: 'status', retryAfter: 1, status: 429},
      2: {kind: 'status', retryAfter: 0, status: 529},
      4: {kind: 'status', status: 500},
      6: {kind: 'cut'},
      8: {kind: 'stream-error'},
    }
    await withFake({script: (n) => faults[n]}, async (fake) => {
      const r = await generate(fake)
      expect(r.code, r.stderr).to.equal(0)
      const texts = ofType(r.events, 'agent_text').map((e) => e.text as string)
      expect(texts.some((t) => /rate limited \(429\); waiting 1\.0 s/.test(t))).to.equal(true)
      expect(texts.some((t) => /overloaded \(529\)/.test(t))).to.equal(true)
      expect(texts.some((t) => /server error 500/.test(t))).to.equal(true)
      expect(texts.filter((t) => /connection failed|overloaded \(stream\)/.test(t)).length).to.be.greaterThanOrEqual(2)
      expect(ofType(r.events, 'mission_finished').every((e) => e.ok)).to.equal(true)
    })
  })

  it('answers a tool call with broken JSON as refused, and the model sends it again', async () => {
    await withFake({script: (n) => (n === 3 ? {kind: 'malformed'} : undefined)}, async (fake) => {
      const r = await generate(fake)
      expect(r.code, r.stderr).to.equal(0)
      const results = JSON.stringify((fake.requests[3].body as {messages: unknown[]}).messages.at(-1))
      expect(results).to.include('were not valid JSON').and.to.include('"is_error":true')
    })
  })

  it('trims old tool results when the context fills up, and the model asks again for what it needs', async () => {
    // The plan mission's requests (about 5,000 tokens at most with the catalog summary) held to
    // 4,000, so it has to trim; the campaign missions, whose briefs are larger and cannot be
    // trimmed, are left unlimited.
    await withFake({contextTokens: 4000, contextTokensFor: 'plan'}, async (fake) => {
      const r = await generate(fake)
      expect(r.code, r.stderr).to.equal(0)
      expect(ofType(r.events, 'agent_text').some((e) => /context is full/.test(e.text as string))).to.equal(true)
      expect(JSON.stringify(fake.requests.map((q) => q.body))).to.include('trimmed to keep the conversation')
    })
  })

  it('a model that never calls finish is stopped by --max-turns; the run is incomplete and --resume completes it', async () => {
    const out = await withFake({brain: createBrain({neverFinish: true})}, async (fake) => {
      const r = await generate(fake, ['--max-turns', '5'])
      expect(r.code).to.equal(1)
      const finished = ofType(r.events, 'mission_finished')
      expect(finished[0].reason).to.match(/did not call finish within 5 tool calls \(--max-turns\)/)
      expect(readJson<{status: string}>(join(r.runDir, 'run.json')).status).to.equal('incomplete')
      return r.runDir
    })
    await withFake({}, async (fake) => {
      const res = await runCli(['campaign', 'generate', '--resume', out, '--skip-url-check', '--format', 'json'], {env: {ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: fake.url}, timeoutMs: 120_000})
      expect(res.code, res.stderr).to.equal(0)
      expect(readJson<{provider: string; status: string}>(join(out, 'run.json'))).to.include({provider: 'anthropic', status: 'success'})
    })
  })

  it('--max-cost stops starting model requests once the reported cost reaches it; --resume finishes the run', async () => {
    const runDir = await withFake({}, async (fake) => {
      const r = await generate(fake, ['--max-cost', '0.05', '--parallel', '1'])
      expect(r.code).to.equal(1)
      const run = readJson<{status: string; totals: {cost_usd: number}}>(join(r.runDir, 'run.json'))
      expect(run.status).to.equal('incomplete')
      // The limit stops new requests; the one under way when it was crossed still counts.
      const costs = ofType(r.events, 'usage').map((e) => e.cost_usd as number)
      expect(costs.slice(0, -1).reduce((a, b) => a + b, 0)).to.be.lessThan(0.05)
      expect(run.totals.cost_usd).to.be.at.least(0.05)
      expect(ofType(r.events, 'mission_finished').some((e) => /--max-cost/.test(String(e.reason)))).to.equal(true)
      return r.runDir
    })
    await withFake({}, async (fake) => {
      const res = await runCli(['campaign', 'generate', '--resume', runDir, '--skip-url-check'], {env: {ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: fake.url}, timeoutMs: 120_000})
      expect(res.code, res.stderr).to.equal(0)
    })
  })
})
