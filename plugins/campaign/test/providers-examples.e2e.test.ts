import {expect} from 'chai'
import {readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'

import {startAnthropic} from './fakes/anthropic.js'
import {startGemini} from './fakes/gemini.js'
import {startOpenAI} from './fakes/openai.js'
import type {Fake, FakeOptions} from './fakes/server.js'
import {type Line, readEvents, readJson, repoRoot, runCli, runDirIn, sharedExampleRun, tempDir} from './helpers.js'

/**
 * The examples other than acme-coffee (which providers-*.e2e.test.ts run through every provider
 * with faults) through the API providers against their loopback fakes: the fake's model replays
 * the offline planner over the tool results, so each run must end valid with the offline
 * planner's import files, byte for byte. outdoor-depot's 2,000 products reach the model as the
 * catalog summary by category, so its plan fits the providers' 400,000 characters of tool results.
 *
 * Each example runs through two providers and each provider through at least one of them
 * (every provider already runs acme-coffee in its own file): six runs instead of twelve, about
 * 25 s of CPU less on CI's two cores. outdoor-depot, the largest, goes through the two SDKs with
 * the most users. The runs of an example go at once (each is a bin/run.js process against its
 * own fake), and the offline reference is the in-process run other test files share.
 */
const EXAMPLES: Record<string, string[]> = {
  'bright-pipes-plumbing': ['anthropic', 'gemini'],
  'cafe-serrano': ['openai', 'openai-compatible'],
  'outdoor-depot': ['anthropic', 'openai'],
}
const KEY = 'sk-examples-test-0123456789abcdef'

interface Provider {
  args: (fake: Fake) => string[]
  env: (fake: Fake) => Record<string, string>
  name: string
  start: (options: FakeOptions) => Promise<Fake>
}

const PROVIDERS: Provider[] = [
  {args: () => [], env: (f) => ({ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: f.url}), name: 'anthropic', start: startAnthropic},
  {args: () => [], env: (f) => ({OPENAI_API_KEY: KEY, OPENAI_BASE_URL: `${f.url}/v1`}), name: 'openai', start: startOpenAI},
  {args: (f) => ['--base-url', `${f.url}/v1`, '--model', 'qwen3:8b'], env: () => ({}), name: 'openai-compatible', start: startOpenAI},
  {args: () => [], env: (f) => ({GEMINI_API_KEY: KEY, GOOGLE_GEMINI_BASE_URL: f.url}), name: 'gemini', start: startGemini},
]

async function generate(example: string, args: string[], env: Record<string, string>) {
  const out = tempDir()
  const res = await runCli(['campaign', 'generate', join(repoRoot, 'examples', example, 'business.toml'), '--out', out, '--skip-url-check', '--format', 'json', ...args], {env, timeoutMs: 240_000})
  const runDir = readdirSync(out).length === 1 ? runDirIn(out) : ''
  return {...res, events: runDir ? readEvents(runDir) : [], runDir}
}

const csvFiles = (runDir: string) => readdirSync(join(runDir, 'google-ads')).filter((f) => f.endsWith('.csv')).sort()

interface Outcome {
  code: null | number
  events: Line[]
  fake: Fake
  runDir: string
  stderr: string
}

async function throughProvider(example: string, provider: Provider): Promise<Outcome> {
  const fake = await provider.start({apiKey: provider.name === 'openai-compatible' ? undefined : KEY})
  try {
    return {...(await generate(example, ['--provider', provider.name, ...provider.args(fake)], provider.env(fake))), fake}
  } finally {
    await fake.close()
  }
}

describe('the other examples through every API provider (real SDKs against loopback APIs)', function () {
  this.timeout(300_000)

  for (const [example, names] of Object.entries(EXAMPLES)) {
    describe(example, () => {
      let offline: string
      const outcomes = new Map<string, Outcome>()
      const providers = PROVIDERS.filter((p) => names.includes(p.name))

      before(async () => {
        offline = (await sharedExampleRun(example)).runDir
        const runs = await Promise.all(providers.map((p) => throughProvider(example, p)))
        for (const [i, p] of providers.entries()) outcomes.set(p.name, runs[i])
      })

      for (const provider of providers) {
        it(`${provider.name}: a valid account with the offline planner's import files`, () => {
          const r = outcomes.get(provider.name) as Outcome
          expect(r.code, r.stderr.slice(-2000)).to.equal(0)
          expect(r.fake.requests.length).to.be.greaterThan(0)
          const validation = r.events.find((l: Line) => l.event.type === 'validation')?.event as unknown as {errors: unknown[]; warnings: unknown[]}
          expect(validation.errors).to.deep.equal([])
          expect(validation.warnings).to.deep.equal([])
          const run = readJson<{provider: string; status: string; totals: {failed_missions: number; input_tokens: number}}>(join(r.runDir, 'run.json'))
          expect(run).to.deep.include({provider: provider.name, status: 'success'})
          expect(run.totals.failed_missions).to.equal(0)
          expect(run.totals.input_tokens).to.be.greaterThan(0)
          // The spec's file table: a transcript per mission, the report, the import files.
          const missions = Object.keys(readJson<{missions: Record<string, unknown>}>(join(r.runDir, 'workspace.json')).missions)
          expect(readdirSync(join(r.runDir, 'transcripts')).sort()).to.deep.equal(missions.map((m) => `${m.replaceAll(':', '-')}.jsonl`).sort())
          expect(readdirSync(r.runDir)).to.include.members(['report.md', 'run.json', 'workspace.json', 'events.ndjson', 'input'])
          expect(csvFiles(r.runDir)).to.deep.equal(csvFiles(offline))
          for (const f of csvFiles(offline)) {
            expect(readFileSync(join(r.runDir, 'google-ads', f), 'utf8'), f).to.equal(readFileSync(join(offline, 'google-ads', f), 'utf8'))
          }
        })
      }
    })
  }
})
