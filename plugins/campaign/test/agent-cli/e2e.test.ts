import {expect} from 'chai'
import {existsSync, readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'

import {exampleDir, type Line, readEvents, readJson, runCli, runDirIn, sharedExampleRun, tempDir} from '../helpers.js'
import {cliPath} from './cli-env.js'
import {type FakeApi, startAnthropicFake, startResponsesFake} from './fake-apis.js'
import {PuppetBrain} from './puppet-brain.js'


const CSVS = ['1-campaign.csv', '2-ad-groups.csv', '3-keywords.csv', '4-negative-keywords.csv', '5-responsive-search-ads.csv']
const KEY = 'sk-test-agent-cli-0123456789abcdef'

interface Case {
  env(api: FakeApi): Record<string, string>
  fake(brain: PuppetBrain): Promise<FakeApi>
  /** Whether the CLI reports money. */
  reportsCost: boolean
}

const CASES: Record<'claude' | 'codex', Case> = {
  claude: {env: (api) => ({ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: api.url}), fake: startAnthropicFake, reportsCost: true},
  codex: {env: (api) => ({OPENAI_API_KEY: KEY, OPENAI_BASE_URL: `${api.url}/v1`}), fake: startResponsesFake, reportsCost: false},
}

for (const [provider, c] of Object.entries(CASES)) {
  describe(`agent-cli end to end: ${provider} against a loopback model API`, function () {
    this.timeout(300_000)
    const brain = new PuppetBrain()
    let api: FakeApi
    let runDir: string
    let events: Line[]
    let result: Awaited<ReturnType<typeof runCli>>

    before(async () => {
      api = await c.fake(brain)
      const out = tempDir()
      result = await runCli(['campaign', 'generate', join(exampleDir, 'business.toml'), '--provider', provider, '--model', 'test-model', '--skip-url-check', '--format', 'json', '--out', out], {
        env: {...c.env(api), OPENAI_API_KEY: provider === 'codex' ? KEY : '', PATH: cliPath, TOOLKIT_CAMPAIGN_AGENT_TIMEOUT_MS: '120000'},
        timeoutMs: 280_000,
      })
      runDir = runDirIn(out)
      events = readEvents(runDir)
    })

    after(() => api.close())

    it('ends with exit 0 and the same import files as the offline planner', async () => {
      expect(result.code, result.stderr).to.equal(0)
      const run = readJson(join(runDir, 'run.json'))
      expect(run).to.include({model: 'test-model', provider, status: 'success'})
      const offline = (await sharedExampleRun()).runDir
      for (const f of CSVS) expect(readFileSync(join(runDir, 'google-ads', f), 'utf8'), f).to.equal(readFileSync(join(offline, 'google-ads', f), 'utf8'))
    })

    it('the model drove every tool through the CLI\'s MCP client, refusals included', () => {
      const called = events.filter((l) => l.event.type === 'tool_called')
      const finished = events.filter((l) => l.event.type === 'tool_finished')
      expect(called.length).to.be.greaterThan(10)
      // Every call the engine ran came back to the model as a tool result in the CLI's next request.
      expect(brain.outcomes).to.have.length(finished.length)
      const campaigns = events.filter((l) => l.event.type === 'mission_started' && String(l.event.mission).startsWith('campaign:'))
      const refused = finished.filter((l) => l.event.ok === false)
      expect(refused.length, JSON.stringify(refused.map((l) => [l.event.mission, l.event.tool, l.event.summary]))).to.equal(campaigns.length)
      expect(brain.outcomes.filter((o) => o.isError || !o.text.startsWith('{')).length).to.be.at.least(refused.length)
      expect(api.requests.every((r) => r.auth.includes(KEY))).to.equal(true)
    })

    it('writes each mission\'s raw stream to transcripts/<mission>.cli.jsonl', () => {
      const missions = events.filter((l) => l.event.type === 'mission_finished').map((l) => String(l.event.mission))
      expect(missions).to.include('plan')
      for (const m of missions) {
        const file = join(runDir, 'transcripts', `${m.replaceAll(':', '-')}.cli.jsonl`)
        expect(existsSync(file), file).to.equal(true)
        const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as {type: string})
        expect(lines.map((l) => l.type)).to.include(provider === 'claude' ? 'result' : 'turn.completed')
      }
    })

    it('reports agent_text and usage events from the stream', () => {
      const missions = new Set(events.filter((l) => l.event.type === 'mission_started').map((l) => l.event.mission))
      const usage = events.filter((l) => l.event.type === 'usage')
      expect(new Set(usage.map((l) => l.event.mission))).to.deep.equal(missions)
      for (const u of usage) {
        expect(u.event.input_tokens).to.be.greaterThan(0)
        expect(u.event.output_tokens).to.be.greaterThan(0)
        if (c.reportsCost) expect(u.event.cost_usd).to.be.a('number')
        else expect(u.event.cost_usd).to.equal(null)
      }
      const texts = events.filter((l) => l.event.type === 'agent_text').map((l) => String(l.event.text))
      expect(texts).to.include('Mission complete.')
      expect(texts.some((t) => t.startsWith('That ad group was incomplete'))).to.equal(true)
    })

    it('never writes the API key to the run directory or the output', () => {
      const files = (dir: string): string[] => readdirSync(dir, {withFileTypes: true}).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)]))
      for (const f of files(runDir).filter((x) => !x.endsWith('.jpg') && !x.endsWith('.png'))) expect(readFileSync(f, 'utf8'), f).not.to.include(KEY)
      expect(result.stdout + result.stderr).not.to.include(KEY)
    })
  })
}
