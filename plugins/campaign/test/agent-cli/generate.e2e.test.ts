import {expect} from 'chai'
import {existsSync, readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'

import {type Line, readEvents, readJson, repoRoot, runCli, runDirIn, sharedExampleRun, tempDir} from '../helpers.js'
import {type Case, CASES, CSVS, KEY} from './cases.js'
import {cliPath} from './cli-env.js'

type Json = Record<string, unknown>

/**
 * One full run through each real agent CLI, every check of its stream on it. Each CLI runs a
 * different example (examples.e2e.test.ts runs the third), so each example is also covered once
 * through a CLI's MCP client; what every example shares is held to the offline planner's files.
 */
const EXAMPLE: Record<keyof typeof CASES, string> = {claude: 'acme-coffee', codex: 'cafe-serrano'}

/** codex always adds its three MCP-resource readers; they reach only the configured MCP servers, and ours is the only one. */
const MCP_RESOURCE_TOOLS = new Set(['list_mcp_resource_templates', 'list_mcp_resources', 'read_mcp_resource'])

/**
 * The sandbox: the tools a CLI offers the model in one request are the campaign MCP server's,
 * none of its own; returns our tools' names (each mission has its own set).
 */
const OWN_TOOLS_ONLY: Record<keyof typeof CASES, (tools: Json[]) => string[]> = {
  claude(tools) {
    const names = tools.map((t) => String(t.name ?? t.type))
    expect(names.filter((n) => !n.startsWith('mcp__campaign__')), 'tools that are not ours').to.deep.equal([])
    return names.map((n) => n.slice('mcp__campaign__'.length))
  },
  codex(tools) {
    expect(tools.filter((t) => t.type === 'namespace').map((t) => t.name)).to.deep.equal(['mcp__campaign'])
    const foreign = tools.filter((t) => !(t.type === 'namespace' || (t.type === 'function' && MCP_RESOURCE_TOOLS.has(String(t.name)))))
    expect(foreign.map((t) => `${String(t.type)} ${String(t.name ?? '')}`), 'tools that are not ours').to.deep.equal([])
    return tools.flatMap((t) => (t.tools ?? []) as Json[]).map((t) => String(t.name))
  },
}

for (const [provider, c] of Object.entries(CASES) as Array<[keyof typeof CASES, Case]>) {
  const example = EXAMPLE[provider]
  describe(`agent-cli end to end: ${provider} against a loopback model API (${example})`, function () {
    this.timeout(300_000)
    let fake: Awaited<ReturnType<Case['start']>>
    let runDir: string
    let events: Line[]
    let result: Awaited<ReturnType<typeof runCli>>
    const of = (type: string) => events.filter((l) => l.event.type === type)

    before(async () => {
      fake = await c.start()
      const out = tempDir()
      result = await runCli(['campaign', 'generate', join(repoRoot, 'examples', example, 'business.toml'), '--provider', provider, '--model', 'test-model', '--skip-url-check', '--format', 'json', '--out', out], {
        env: {ANTHROPIC_API_KEY: '', CODEX_API_KEY: '', OPENAI_API_KEY: '', ...c.env(fake.api), PATH: cliPath, TOOLKIT_CAMPAIGN_AGENT_TIMEOUT_MS: '120000'},
        timeoutMs: 280_000,
      })
      runDir = runDirIn(out)
      events = readEvents(runDir)
    })

    after(() => fake.close())

    it('ends with exit 0, valid, and the same import files as the offline planner', async () => {
      const failed = of('mission_finished').filter((l) => l.event.ok === false)
      expect(result.code, `${result.stderr}\n${JSON.stringify(failed)}`).to.equal(0)
      expect(readJson(join(runDir, 'run.json'))).to.include({model: 'test-model', provider, status: 'success'})
      const validation = of('validation')[0]?.event as unknown as {errors: unknown[]; warnings: unknown[]}
      expect(validation.errors).to.deep.equal([])
      expect(validation.warnings).to.deep.equal([])
      const offline = (await sharedExampleRun(example)).runDir
      for (const f of CSVS) expect(readFileSync(join(runDir, 'google-ads', f), 'utf8'), f).to.equal(readFileSync(join(offline, 'google-ads', f), 'utf8'))
    })

    it('the model drove every tool through the CLI\'s MCP client, refusals included', () => {
      const finished = of('tool_finished')
      expect(finished.length).to.be.greaterThan(10)
      // The brain's wrong calls were refused, and the model read that and made the call right.
      const refused = finished.filter((l) => l.event.ok === false)
      expect(refused.length).to.be.greaterThan(0)
      for (const r of refused) {
        const fixed = finished.some((l) => l.seq > r.seq && l.event.ok === true && l.event.mission === r.event.mission && l.event.tool === r.event.tool)
        expect(fixed, JSON.stringify(r.event)).to.equal(true)
      }
      // One model request per tool result at least: each result went back through the CLI.
      const modelRequests = fake.api.requests.filter((r) => JSON.stringify(r.body ?? '').includes('set_account_plan') || JSON.stringify(r.body ?? '').includes('get_brief'))
      expect(modelRequests.length).to.be.at.least(finished.length)
      for (const r of fake.api.requests) expect(String(r.headers['x-api-key'] ?? r.headers.authorization)).to.include(KEY)
    })

    it('offers the model our MCP tools and nothing else: no shell, file, patch, web, task or ask-the-user tools', () => {
      const offered = fake.offered()
      expect(offered.length, 'requests that offered tools').to.be.greaterThan(0)
      const seen = new Set<string>()
      for (const tools of offered) {
        const ours = OWN_TOOLS_ONLY[provider](tools)
        expect(ours).to.include('finish')
        for (const name of ours) seen.add(name)
      }
      expect([...seen]).to.include.members(['set_account_plan', 'upsert_ad_group', 'finish'])
    })

    it('writes each mission\'s raw stream to transcripts/<mission>.cli.jsonl', () => {
      const missions = of('mission_finished').map((l) => String(l.event.mission))
      expect(missions).to.include('plan')
      for (const m of missions) {
        const file = join(runDir, 'transcripts', `${m.replaceAll(':', '-')}.cli.jsonl`)
        expect(existsSync(file), file).to.equal(true)
        const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as {type: string})
        expect(lines.map((l) => l.type)).to.include(c.turnEnd)
      }
    })

    it('reports agent_text and usage events from the stream', () => {
      const missions = new Set(of('mission_started').map((l) => l.event.mission))
      const usage = of('usage')
      expect(new Set(usage.map((l) => l.event.mission))).to.deep.equal(missions)
      for (const u of usage) {
        expect(u.event.input_tokens).to.be.greaterThan(0)
        expect(u.event.output_tokens).to.be.greaterThan(0)
        if (c.reportsCost) expect(u.event.cost_usd).to.be.a('number')
        else expect(u.event.cost_usd).to.equal(null)
      }
      const totals = readJson<{totals: {input_tokens: number}}>(join(runDir, 'run.json')).totals
      expect(totals.input_tokens).to.equal(usage.reduce((s, u) => s + Number(u.event.input_tokens), 0))
      expect(of('agent_text').map((l) => l.event.text)).to.include('The mission is finished.')
    })

    it('never writes the API key to the run directory or the output', () => {
      const files = (dir: string): string[] => readdirSync(dir, {withFileTypes: true}).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)]))
      for (const f of files(runDir).filter((x) => !x.endsWith('.jpg') && !x.endsWith('.png'))) expect(readFileSync(f, 'utf8'), f).not.to.include(KEY)
      expect(result.stdout + result.stderr).not.to.include(KEY)
    })
  })
}
