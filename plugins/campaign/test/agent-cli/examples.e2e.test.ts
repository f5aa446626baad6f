import {expect} from 'chai'
import {readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'

import {type Line, readEvents, readJson, repoRoot, runCli, runDirIn, sharedExampleRun, tempDir} from '../helpers.js'
import {CASES} from './cases.js'
import {cliPath} from './cli-env.js'

/**
 * The example the full runs leave out (generate.e2e.test.ts runs acme-coffee through claude and
 * cafe-serrano through codex, with every check of the stream), so each example but one is covered
 * once through a CLI's MCP client. A run must end valid with the offline planner's import files.
 * outdoor-depot (22 missions, so 22 CLI processes) is left to the API providers' examples test,
 * which runs the same tools and catalog summary.
 */
const RUNS = [{example: 'bright-pipes-plumbing', provider: 'claude'}] as const

const csvFiles = (runDir: string) => readdirSync(join(runDir, 'google-ads')).filter((f) => f.endsWith('.csv')).sort()

describe('agent-cli end to end: the other examples', function () {
  this.timeout(400_000)
  const outcomes = new Map<string, {code: null | number; events: Line[]; requests: number; runDir: string; stderr: string}>()

  before(async () => {
    await Promise.all(
      RUNS.map(async ({example, provider}) => {
        const c = CASES[provider]
        const fake = await c.start()
        try {
          const out = tempDir()
          const res = await runCli(['campaign', 'generate', join(repoRoot, 'examples', example, 'business.toml'), '--provider', provider, '--model', 'test-model', '--skip-url-check', '--format', 'json', '--out', out], {
            env: {ANTHROPIC_API_KEY: '', CODEX_API_KEY: '', OPENAI_API_KEY: '', ...c.env(fake.api), PATH: cliPath, TOOLKIT_CAMPAIGN_AGENT_TIMEOUT_MS: '120000'},
            timeoutMs: 380_000,
          })
          const runDir = readdirSync(out).length === 1 ? runDirIn(out) : ''
          outcomes.set(example, {code: res.code, events: runDir ? readEvents(runDir) : [], requests: fake.api.requests.length, runDir, stderr: res.stderr})
        } finally {
          await fake.close()
        }
      }),
    )
  })

  for (const {example, provider} of RUNS) {
    it(`${example} through ${provider}: exit 0, valid, the offline planner's import files`, async () => {
      const r = outcomes.get(example)
      expect(r, 'the run did not start').to.not.equal(undefined)
      const failed = r!.events.filter((l) => l.event.type === 'mission_finished' && l.event.ok === false)
      expect(r!.code, `${r!.stderr.slice(-2000)}\n${JSON.stringify(failed)}`).to.equal(0)
      expect(r!.requests).to.be.greaterThan(0)
      expect(readJson(join(r!.runDir, 'run.json'))).to.include({provider, status: 'success'})
      const validation = r!.events.find((l) => l.event.type === 'validation')?.event as unknown as {errors: unknown[]; warnings: unknown[]}
      expect(validation.errors).to.deep.equal([])
      expect(validation.warnings).to.deep.equal([])
      const missions = r!.events.filter((l) => l.event.type === 'mission_finished').map((l) => String(l.event.mission))
      for (const m of missions) expect(readdirSync(join(r!.runDir, 'transcripts'))).to.include(`${m.replaceAll(':', '-')}.cli.jsonl`)
      const offline = (await sharedExampleRun(example)).runDir
      expect(csvFiles(r!.runDir)).to.deep.equal(csvFiles(offline))
      for (const f of csvFiles(offline)) expect(readFileSync(join(r!.runDir, 'google-ads', f), 'utf8'), f).to.equal(readFileSync(join(offline, 'google-ads', f), 'utf8'))
    })
  }
})
