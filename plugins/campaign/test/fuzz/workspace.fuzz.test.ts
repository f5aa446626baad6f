import {expect} from 'chai'
import fc from 'fast-check'
import {createHash} from 'node:crypto'
import {readdirSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {exportRun} from '../../src/pipeline.js'
import {WORKSPACE_FILE} from '../../src/run/workspace-store.js'
import {sharedExampleRunCopy} from '../helpers.js'
import {FUZZ_SEED, fuzzRuns, fuzzTimeout} from './runs.js'

type Json = boolean | null | number | string | Json[] | {[key: string]: Json}

/** Every path to a value in `v`, as key lists (objects and arrays alike). */
function paths(v: Json, at: Array<number | string> = [], out: Array<Array<number | string>> = []): Array<Array<number | string>> {
  out.push(at)
  if (Array.isArray(v)) v.forEach((x, i) => paths(x, [...at, i], out))
  else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) paths(x, [...at, k], out)
  return out
}

/** `v` with the value at `path` replaced (or, for the root, `value` itself). */
function replaced(v: Json, path: Array<number | string>, value: Json): Json {
  if (path.length === 0) return value
  const copy = structuredClone(v) as {[key: string]: Json}
  let node = copy
  for (const k of path.slice(0, -1)) node = node[k] as {[key: string]: Json}
  node[path.at(-1) as string] = value
  return copy
}

/** The bytes of every file of the run directory but workspace.json (and the lock `export` takes), by name. */
function otherFiles(dir: string, base = dir, out = new Map<string, string>()): Map<string, string> {
  for (const e of readdirSync(dir, {withFileTypes: true})) {
    const p = join(dir, e.name)
    if (e.isDirectory()) otherFiles(p, base, out)
    else if (p !== join(base, WORKSPACE_FILE) && !e.name.endsWith('.lock')) out.set(p.slice(base.length + 1), createHash('sha256').update(readFileSync(p)).digest('hex'))
  }
  return out
}

// Issue 20: workspace.json is a file users edit by hand between `generate` and `export`. Any
// mutation of a real run's workspace.json is exported (or fails validation with its report), or
// is refused with exit 2 naming the file and the field, with nothing in the run directory written.
describe('campaign export: a mutated workspace.json is exported or refused with exit 2 naming the file, nothing written (fast-check)', function () {
  this.timeout(fuzzTimeout(120_000))

  it('structural and textual mutations of a real run (fixed seed)', async () => {
    const {runDir} = await sharedExampleRunCopy()
    const file = join(runDir, WORKSPACE_FILE)
    const original = readFileSync(file, 'utf8')
    const parsed = JSON.parse(original) as Json
    const all = paths(parsed)
    const structural = fc.tuple(fc.nat({max: all.length - 1}), fc.oneof(fc.jsonValue({maxDepth: 2}) as fc.Arbitrary<Json>, fc.constantFrom<Json>(null, -1, 1e308, '', 'x'.repeat(100_000), [], {}))).map(([i, value]) => JSON.stringify(replaced(parsed, all[i], value)))
    const textual = fc.oneof(
      fc.tuple(fc.nat({max: original.length}), fc.nat({max: 30})).map(([i, n]) => original.slice(0, i) + original.slice(i + n)),
      fc.nat({max: original.length}).map((i) => original.slice(0, i)),
      fc.string({maxLength: 40}),
    )
    // The run as written exports: what the mutations are measured against.
    expect((await exportRun(runDir, {skipUrlCheck: true})).exitCode).to.equal(0)
    const outcomes: Record<string, number> = {}
    await fc.assert(
      fc.asyncProperty(fc.oneof({arbitrary: structural, weight: 3}, {arbitrary: textual, weight: 1}), async (text) => {
        writeFileSync(file, text)
        const before = otherFiles(runDir)
        let outcome: string
        try {
          const result = await exportRun(runDir, {skipUrlCheck: true})
          outcome = result.exitCode === 0 ? 'exported' : `validation refused (exit ${result.exitCode})`
        } catch (error) {
          const e = error as {exit?: number; exitCode?: number; message: string; name: string}
          expect(e.exitCode ?? e.exit, `${e.name}: ${e.message}\nfor: ${text.slice(0, 300)}`).to.equal(2)
          expect(e.message, text.slice(0, 300)).to.include(file)
          expect([...otherFiles(runDir)], `a refused workspace.json changed the run directory: ${e.message}`).to.deep.equal([...before])
          outcome = 'refused'
        }
        outcomes[outcome] = (outcomes[outcome] ?? 0) + 1
      }),
      {endOnFailure: true, numRuns: fuzzRuns(40), seed: FUZZ_SEED},
    )
    if (process.env.FUZZ_REPORT) console.log('workspace.json outcomes', outcomes)
    expect(outcomes.refused).to.be.greaterThan(0)
  })

  it('refuses the counterexamples it found (missions holding null, a number for the logo) naming the field', async () => {
    const {runDir} = await sharedExampleRunCopy()
    const file = join(runDir, WORKSPACE_FILE)
    const good = JSON.parse(readFileSync(file, 'utf8')) as {account: {brand_kit: Record<string, Json>}; missions: Json}
    const cases: Array<[Json, RegExp]> = [
      [{...good, missions: [null]}, /missions must be an object/],
      [{...good, missions: {plan: null}}, /missions\.plan must be an object/],
      [{...good, missions: {plan: {attempts: 1, status: 'done', usage: {cost_usd: null, input_tokens: 0, output_tokens: 0}}}}, /missions\.plan\.status must be "finished", "pending", "running"/],
      [{...good, account: {...good.account, brand_kit: {...good.account.brand_kit, logo: -13.9}}}, /account\.brand_kit must be null or an object/],
    ]
    for (const [ws, message] of cases) {
      writeFileSync(file, JSON.stringify(ws))
      const error = (await exportRun(runDir, {skipUrlCheck: true}).then(() => undefined, (e: unknown) => e)) as {exitCode?: number; message: string} | undefined
      expect(error?.exitCode, String(message)).to.equal(2)
      expect(error?.message).to.include(file).and.match(message)
    }
  })

  it('exports a workspace written before search_bid_strategy existed, and refuses an unknown strategy', async () => {
    const {runDir} = await sharedExampleRunCopy()
    const file = join(runDir, WORKSPACE_FILE)
    const good = JSON.parse(readFileSync(file, 'utf8')) as {input: Record<string, Json>}
    const {search_bid_strategy: _dropped, ...older} = good.input
    writeFileSync(file, JSON.stringify({...good, input: older}))
    await exportRun(runDir, {skipUrlCheck: true})
    writeFileSync(file, JSON.stringify({...good, input: {...good.input, search_bid_strategy: 'cheapest'}}))
    const error = (await exportRun(runDir, {skipUrlCheck: true}).then(() => undefined, (e: unknown) => e)) as {exitCode?: number; message: string} | undefined
    expect(error?.exitCode).to.equal(2)
    expect(error?.message).to.match(/input\.search_bid_strategy must be one of/)
  })
})
