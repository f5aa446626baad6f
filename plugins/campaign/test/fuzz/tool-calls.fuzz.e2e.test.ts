import {expect} from 'chai'
import fc from 'fast-check'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'

import {EventLog} from '../../src/run/events.js'
import {loadWorkspace, saveWorkspace} from '../../src/run/workspace-store.js'
import {callTool} from '../../src/tools/call.js'
import {toolSpecs, toolsFor} from '../../src/tools/registry.js'
import type {ToolContext} from '../../src/tools/tool.js'
import type {Workspace} from '../../src/types.js'
import {sharedExampleRun, tempDir} from '../helpers.js'
import {FUZZ_SEED, fuzzRuns, fuzzTimeout} from './runs.js'

/** A value of roughly the schema's shape, mutated: the kind of arguments a confused model sends. */
function argumentsLike(schema: unknown, depth = 0): fc.Arbitrary<unknown> {
  const s = (schema ?? {}) as {enum?: unknown[]; items?: unknown; properties?: Record<string, unknown>; type?: string}
  const wild = fc.oneof(fc.jsonValue({maxDepth: 2}), fc.constantFrom('', -1, 1e308, null, [], {}, 'x'.repeat(20_000), '\u0000', '<script>'))
  if (depth > 3) return wild
  let shaped: fc.Arbitrary<unknown>
  if (s.enum) shaped = fc.constantFrom(...s.enum)
  else if (s.type === 'object' && s.properties) {
    const keys = Object.fromEntries(Object.entries(s.properties).map(([k, v]) => [k, argumentsLike(v, depth + 1)]))
    shaped = fc.record(keys, {requiredKeys: []})
  } else if (s.type === 'array') shaped = fc.array(argumentsLike(s.items, depth + 1), {maxLength: 4})
  else if (s.type === 'string') shaped = fc.string({maxLength: 40})
  else if (s.type === 'integer' || s.type === 'number') shaped = fc.oneof(fc.integer(), fc.double())
  else if (s.type === 'boolean') shaped = fc.boolean()
  else shaped = wild
  return fc.oneof({arbitrary: shaped, weight: 4}, {arbitrary: wild, weight: 1})
}

// Issue 20: a model's tool calls are untrusted input. Random and mutated arguments to every tool
// get either a result or a refusal with a message the model can act on; a refused call changes
// nothing, in memory or in workspace.json; no call crashes the run.
describe('campaign tools: mutated model tool-call arguments (fast-check, the example run)', function () {
  this.timeout(fuzzTimeout(300_000))
  let base: Workspace

  before(async () => {
    base = loadWorkspace((await sharedExampleRun()).runDir)
  })

  for (const kind of ['plan', 'campaign'] as const) {
    it(`${kind} mission tools answer or refuse, and a refusal changes nothing (fixed seed)`, async () => {
      const slug = base.account.campaigns[0]?.slug ?? null
      const specs = toolSpecs(kind)
      const call = fc.oneof(
        ...specs.map((t) => argumentsLike(t.input_schema).map((args) => [t.name, args] as const)),
        fc.tuple(fc.string({maxLength: 12}), fc.jsonValue({maxDepth: 2})).map(([n, a]) => [n, a] as const),
      )
      const outcomes: Record<string, number> = {}
      const dir = tempDir()
      const ws = structuredClone(base)
      saveWorkspace(dir, ws)
      const events = new EventLog(join(dir, 'events.ndjson'), [])
      const ctx: ToolContext = {finished: false, mission: kind === 'plan' ? 'plan' : `campaign:${slug}`, slug: kind === 'plan' ? null : slug, ws}
      await fc.assert(
        fc.asyncProperty(call, async ([name, args]) => {
          const memory = JSON.stringify(ctx.ws)
          const disk = readFileSync(join(dir, 'workspace.json'), 'utf8')
          const r = await callTool(toolsFor(kind), ctx, events, () => saveWorkspace(dir, ctx.ws), name, args)
          outcomes[`${r.ok ? 'ok' : 'refused'}`] = (outcomes[`${r.ok ? 'ok' : 'refused'}`] ?? 0) + 1
          if (r.ok) return
          expect(r.error, name).to.be.a('string').and.not.equal('')
          expect(r.error.length, 'a refusal the model can read').to.be.below(20_000)
          expect(JSON.stringify(ctx.ws), `refused ${name} changed the workspace in memory`).to.equal(memory)
          expect(readFileSync(join(dir, 'workspace.json'), 'utf8'), `refused ${name} changed workspace.json`).to.equal(disk)
        }),
        {numRuns: fuzzRuns(150), seed: FUZZ_SEED},
      )
      events.close()
      if (process.env.FUZZ_REPORT) console.log(`${kind} tool calls`, outcomes)
      expect(outcomes.refused).to.be.greaterThan(0)
    })
  }
})
