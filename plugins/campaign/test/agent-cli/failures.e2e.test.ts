import {expect} from 'chai'
import {join} from 'node:path'

import {startAnthropic} from '../fakes/anthropic.js'
import {startOpenAI} from '../fakes/openai.js'
import type {Fake} from '../fakes/server.js'
import {exampleDir, readEvents, readJson, runCli, runDirIn, tempDir} from '../helpers.js'
import {cliPath} from './cli-env.js'
import {startCodexDialect} from './codex-dialect.js'

const KEY = 'sk-test-agent-cli-0123456789abcdef'
const WRONG = 'sk-test-wrong-key-9876543210fedcba'

async function generate(env: Record<string, string>, extra: string[] = []) {
  const out = tempDir()
  const result = await runCli(['campaign', 'generate', join(exampleDir, 'business.toml'), '--skip-url-check', '--model', 'test-model', '--out', out, ...extra], {
    env: {ANTHROPIC_API_KEY: '', CODEX_API_KEY: '', OPENAI_API_KEY: '', PATH: cliPath, ...env},
    timeoutMs: 170_000,
  })
  const runDir = runDirIn(out)
  return {result, runDir, events: readEvents(runDir)}
}

describe('agent-cli: a mission the CLI cannot finish', function () {
  this.timeout(180_000)
  const fakes: Fake[] = []
  after(async () => {
    for (const f of fakes) await f.close()
  })

  it('claude refused by the API (401): the mission fails with the CLI\'s reason, exit 1, resumable, no key in the output', async () => {
    const api = await startAnthropic({apiKey: KEY})
    fakes.push(api)
    const {events, result, runDir} = await generate({ANTHROPIC_API_KEY: WRONG, ANTHROPIC_BASE_URL: api.url}, ['--provider', 'claude'])
    expect(result.code, result.stderr).to.equal(1)
    const finished = events.filter((l) => l.event.type === 'mission_finished')
    expect(finished).to.have.length(2)
    for (const f of finished) expect(f.event).to.include({ok: false, reason: 'claude: the API refused the credentials (401 authentication_failed); check ANTHROPIC_API_KEY'})
    expect(readJson(join(runDir, 'run.json'))).to.include({status: 'incomplete'})
    expect(readJson<{missions: {plan: {status: unknown}}}>(join(runDir, 'workspace.json')).missions.plan.status).to.have.property('failed')
    expect(result.stdout + result.stderr + JSON.stringify(events)).not.to.include(WRONG)
  })

  it('a CLI that does not end in time is stopped and the mission fails saying so', async () => {
    // Every model response takes a minute; the mission may run for 4 seconds.
    const api = await startAnthropic({apiKey: KEY, latencyMs: 60_000})
    fakes.push(api)
    const started = Date.now()
    const {events, result} = await generate({ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: api.url, TOOLKIT_CAMPAIGN_AGENT_TIMEOUT_MS: '4000'}, ['--provider', 'claude'])
    expect(result.code, result.stderr).to.equal(1)
    const reasons = events.filter((l) => l.event.type === 'mission_finished').map((l) => l.event.reason)
    expect(reasons).to.deep.equal(['claude did not end within 4 s (TOOLKIT_CAMPAIGN_AGENT_TIMEOUT_MS); it was stopped', 'claude did not end within 4 s (TOOLKIT_CAMPAIGN_AGENT_TIMEOUT_MS); it was stopped'])
    expect(Date.now() - started).to.be.below(60_000)
  })

  it('codex refused by the API (401): the mission fails with the CLI\'s reason, exit 1', async () => {
    const fake = await startOpenAI({apiKey: KEY})
    const api = await startCodexDialect(fake)
    fakes.push(api, fake)
    const {events, result} = await generate({OPENAI_API_KEY: WRONG, OPENAI_BASE_URL: `${api.url}/v1`, TOOLKIT_CAMPAIGN_AGENT_TIMEOUT_MS: '60000'}, ['--provider', 'codex'])
    expect(result.code, result.stderr).to.equal(1)
    const reasons = events.filter((l) => l.event.type === 'mission_finished').map((l) => String(l.event.reason))
    expect(reasons).to.have.length(2)
    for (const r of reasons) expect(r).to.match(/^codex: .*401|^codex: .*(Unauthorized|API key)/i)
    expect(result.stdout + result.stderr + JSON.stringify(events)).not.to.include(WRONG)
  })
})
