import {expect} from 'chai'
import {spawn} from 'node:child_process'
import {randomBytes} from 'node:crypto'
import {readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'
import {setTimeout as sleep} from 'node:timers/promises'

import {startAnthropic} from '../fakes/anthropic.js'
import {createBrain} from '../fakes/brain.js'
import {startOpenAI} from '../fakes/openai.js'
import type {Fake} from '../fakes/server.js'
import {exampleDir, type Line, readEvents, readJson, runCli, runDirIn, runJs, sharedExampleRun, tempDir} from '../helpers.js'
import {cliPath} from './cli-env.js'
import {startCodexDialect} from './codex-dialect.js'

const KEY = 'sk-test-agent-cli-0123456789abcdef'
const CSVS = ['1-campaign.csv', '2-ad-groups.csv', '3-keywords.csv', '4-negative-keywords.csv', '5-responsive-search-ads.csv']
const BASE_ENV = {ANTHROPIC_API_KEY: '', CODEX_API_KEY: '', OPENAI_API_KEY: '', PATH: cliPath, TOOLKIT_CAMPAIGN_AGENT_TIMEOUT_MS: '120000'}

const of = (events: Line[], type: string) => events.filter((l) => l.event.type === type).map((l) => l.event)

async function sameFilesAsOffline(runDir: string): Promise<void> {
  const offline = (await sharedExampleRun()).runDir
  for (const f of CSVS) expect(readFileSync(join(runDir, 'google-ads', f), 'utf8'), f).to.equal(readFileSync(join(offline, 'google-ads', f), 'utf8'))
}

interface Api {
  close(): Promise<void>
  env: Record<string, string>
  fake: Fake
  /** The API provider that speaks to the same loopback API: resuming through it costs no CLI processes. */
  resumeWith: string[]
}

const APIS: Record<'claude' | 'codex', {model: string; start(latencyMs?: number): Promise<Api>}> = {
  claude: {
    model: 'claude-sonnet-4-5',
    async start(latencyMs = 0) {
      const fake = await startAnthropic({apiKey: KEY, latencyMs})
      return {close: () => fake.close(), env: {ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: fake.url}, fake, resumeWith: ['--provider', 'anthropic', '--base-url', fake.url]}
    },
  },
  codex: {
    model: 'gpt-5-mini',
    async start(latencyMs = 0) {
      const inner = await startOpenAI({apiKey: KEY, latencyMs})
      const fake = await startCodexDialect(inner)
      return {
        async close() {
          await fake.close()
          await inner.close()
        },
        env: {OPENAI_API_KEY: KEY, OPENAI_BASE_URL: `${fake.url}/v1`},
        fake,
        resumeWith: ['--provider', 'openai', '--base-url', `${inner.url}/v1`],
      }
    },
  },
}

for (const [provider, api] of Object.entries(APIS)) {
  describe(`agent-cli --max-cost: ${provider} against a loopback model API`, function () {
    this.timeout(900_000)

    it('no mission starts once the cost the CLI reported reaches the limit; the run is incomplete and --resume finishes it', async () => {
      const a = await api.start()
      try {
        const out = tempDir()
        const env = {...BASE_ENV, ...a.env}
        // The plan alone costs more than this: after it, no campaign mission may start.
        const first = await runCli(['campaign', 'generate', join(exampleDir, 'business.toml'), '--provider', provider, '--model', api.model, '--max-cost', '0.000001', '--parallel', '1', '--skip-url-check', '--out', out], {env, timeoutMs: 420_000})
        expect(first.code, first.stderr).to.equal(1)
        const runDir = runDirIn(out)
        const events = readEvents(runDir)
        expect(of(events, 'mission_started').map((e) => e.mission)).to.deep.equal(['plan'])
        expect(of(events, 'mission_finished')).to.deep.equal([{mission: 'plan', ok: true, reason: null, type: 'mission_finished'}])
        const costs = of(events, 'usage').map((e) => e.cost_usd)
        expect(costs.length).to.be.greaterThan(0)
        for (const c of costs) expect(c).to.be.a('number').and.greaterThan(0)
        const run = readJson<{status: string; totals: {cost_usd: number; failed_missions: number; missions: number}}>(join(runDir, 'run.json'))
        expect(run.status).to.equal('incomplete')
        expect(run.totals.failed_missions).to.equal(run.totals.missions - 1)
        const ws = readJson<{missions: Record<string, {status: unknown}>}>(join(runDir, 'workspace.json'))
        for (const [id, m] of Object.entries(ws.missions)) expect(m.status, id).to.equal(id === 'plan' ? 'finished' : 'pending')

        // What is left is a resume like any other (kill-resume.e2e covers it); an API provider on
        // the same loopback API finishes it without seven more CLI processes.
        const res = await runCli(['campaign', 'generate', '--resume', runDir, '--skip-url-check', ...a.resumeWith], {env, timeoutMs: 420_000})
        expect(res.code, res.stderr).to.equal(0)
        await sameFilesAsOffline(runDir)
      } finally {
        await a.close()
      }
    })
  })
}

/** Processes (other than this one) whose environment holds the marker: the CLI run and anything it started. */
function processesMarked(marker: string): number[] {
  const found: number[] = []
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    if (Number(pid) === process.pid) continue
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'latin1').includes(marker)) found.push(Number(pid))
    } catch {
      // gone, or not ours to read
    }
  }
  return found
}

describe('agent-cli: Ctrl-C (SIGINT) while claude works on a mission', function () {
  this.timeout(900_000)

  it('stops the CLI, ends the run incomplete (exit 1) with the mission resumable, and --resume finishes it', async () => {
    // Each model response takes 3 s, so the CLI is surely mid-mission when the signal comes.
    const a = await APIS.claude.start(3000)
    const marker = `TOOLKIT_TEST_MARK_${randomBytes(6).toString('hex')}`
    try {
      const out = tempDir()
      const home = tempDir('campaign-home-')
      const tmp = tempDir('campaign-tmp-')
      const env = {...process.env, ...BASE_ENV, ...a.env, HOME: home, NO_COLOR: '1', TMPDIR: tmp, TOOLKIT_CONFIG_DIR: join(home, '.config', 'toolkit'), XDG_CONFIG_HOME: join(home, '.config'), [marker]: '1'}
      const child = spawn(process.execPath, [runJs, 'campaign', 'generate', join(exampleDir, 'business.toml'), '--provider', 'claude', '--skip-url-check', '--out', out], {env, stdio: ['ignore', 'pipe', 'pipe']})
      let stderr = ''
      child.stderr.on('data', (d) => (stderr += d))
      const exited = new Promise<null | number>((resolve) => child.on('close', (code) => resolve(code)))
      // Wait for the plan's second model request: the CLI has started and has called our tools.
      const planRequests = () => a.fake.requests.filter((r) => JSON.stringify(r.body ?? '').includes('set_account_plan')).length
      while (planRequests() < 2 && child.exitCode === null) await sleep(100)
      expect(processesMarked(marker).length, 'toolkit and the claude CLI are running').to.be.at.least(2)
      child.kill('SIGINT')
      const code = await exited
      expect(code, stderr).to.equal(1)
      expect(processesMarked(marker), 'no process of the run is left').to.deep.equal([])

      const runDir = runDirIn(out)
      const events = readEvents(runDir)
      expect(of(events, 'mission_finished')).to.deep.equal([{mission: 'plan', ok: false, reason: 'interrupted', type: 'mission_finished'}])
      expect(readJson(join(runDir, 'run.json'))).to.include({status: 'incomplete'})
      const ws = readJson<{missions: {plan: {status: unknown}}}>(join(runDir, 'workspace.json'))
      expect(ws.missions.plan.status).to.deep.equal({failed: {reason: 'interrupted'}})
      // The mission's scratch folder (MCP config with its token, the CLI's home) is gone.
      expect(readdirSync(tmp).filter((d) => d.startsWith('toolkit-claude-'))).to.deep.equal([])

      // The interrupted plan resumes at a quick endpoint (--base-url wins over the recorded one),
      // through the API provider so the resume starts no CLI processes.
      const quick = await APIS.claude.start()
      try {
        const res = await runCli(['campaign', 'generate', '--resume', runDir, '--skip-url-check', ...quick.resumeWith], {env: {...BASE_ENV, ...quick.env}, timeoutMs: 420_000})
        expect(res.code, res.stderr).to.equal(0)
        await sameFilesAsOffline(runDir)
      } finally {
        await quick.close()
      }
    } finally {
      await a.close()
    }
  })
})

describe('agent-cli --max-turns: claude with a model that never calls finish', function () {
  this.timeout(300_000)

  it('the first tool call past the limit stops the CLI and fails the mission saying so', async () => {
    const fake = await startAnthropic({apiKey: KEY, brain: createBrain({neverFinish: true})})
    try {
      const out = tempDir()
      const res = await runCli(['campaign', 'generate', join(exampleDir, 'business.toml'), '--provider', 'claude', '--max-turns', '3', '--skip-url-check', '--out', out], {env: {...BASE_ENV, ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: fake.url}, timeoutMs: 280_000})
      expect(res.code, res.stderr).to.equal(1)
      const events = readEvents(runDirIn(out))
      const reasons = of(events, 'mission_finished').map((e) => e.reason)
      expect(reasons).to.deep.equal(['claude: the model did not call finish within 3 tool calls (--max-turns)', 'claude: the model did not call finish within 3 tool calls (--max-turns)'])
      // Each attempt stopped at its fourth call: no CLI went on asking.
      expect(of(events, 'tool_called').length).to.equal(8)
    } finally {
      await fake.close()
    }
  })
})
