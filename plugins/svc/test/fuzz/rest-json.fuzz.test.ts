import {expect} from 'chai'
import fc from 'fast-check'
import {join} from 'node:path'

import {startServer, type Started} from '../helpers/cli.js'
import {cleanupTempDirs, tempDir} from '../helpers/tmp.js'
import {stopServer} from './server.js'
import {FUZZ_SEED, fuzzRuns, fuzzTimeout} from './runs.js'

const SEED = FUZZ_SEED

describe('svc REST: random JSON bodies get a 2xx or a 4xx naming the problem, and what is acknowledged reads back exactly (built CLI, fetch)', function () {
  this.timeout(fuzzTimeout(180_000))
  let s: Started
  let base: string
  const kept = {id: 'kept:1', n: 12_345_678_901, nested: {list: [1, 'two', null, true]}, text: 'stored before the fuzzing'}

  before(async () => {
    s = await startServer(['--data-dir', join(tempDir(), 'data'), '--http-port', '0', '--disable-redis', '--disable-sql', '--log-level', 'error'])
    base = `http://127.0.0.1:${(s.ready as {rest: number}).rest}`
    expect((await fetch(`${base}/api/v1/documents/kept:1`, {body: JSON.stringify(kept), method: 'PUT'})).status).to.equal(200)
  })

  after(async () => {
    await stopServer(s)
    cleanupTempDirs()
  })

  async function stillServing(): Promise<void> {
    expect(s.child.exitCode, `server exited; stderr: ${s.stderr()}`).to.equal(null)
    const r = await fetch(`${base}/api/v1/documents/kept:1`)
    expect(r.status).to.equal(200)
    expect(await r.json()).to.deep.equal(kept)
  }

  it('stores any JSON object it accepts exactly as sent, and refuses the rest with a 4xx error body (fast-check, fixed seed)', async () => {
    const statuses: Record<number, number> = {}
    const body = fc.oneof(
      {weight: 4, arbitrary: fc.dictionary(fc.string({maxLength: 12}), fc.jsonValue({maxDepth: 4}), {maxKeys: 6})},
      {weight: 1, arbitrary: fc.jsonValue({maxDepth: 3})},
    )
    await fc.assert(
      fc.asyncProperty(body, fc.nat({max: 1_000_000}), async (value, key) => {
        const text = JSON.stringify(value)
        const r = await fetch(`${base}/api/v1/documents/fuzz:${key}`, {body: text, method: 'PUT'})
        statuses[r.status] = (statuses[r.status] ?? 0) + 1
        const answer = (await r.json()) as {error?: {code: string; message: string}}
        if (r.status === 200) {
          const back = await fetch(`${base}/api/v1/documents/fuzz:${key}`)
          expect(back.status).to.equal(200)
          // JSON.stringify already turned -0 into 0; what was sent is what comes back.
          expect(await back.json()).to.deep.equal({...(value as object), id: `fuzz:${key}`})
        } else {
          expect(r.status, text).to.be.within(400, 499)
          expect(answer.error?.message, text).to.be.a('string').and.not.equal('')
        }
      }),
      {numRuns: fuzzRuns(120), seed: SEED},
    )
    if (process.env.FUZZ_REPORT) console.log('rest random objects', statuses)
    expect(statuses[200]).to.be.greaterThan(0)
    await stillServing()
  })

  it('answers malformed, deep, huge and wrongly typed bodies on every JSON route with a 4xx (fast-check, fixed seed)', async () => {
    const routes: Array<[string, string]> = [
      ['PUT', '/api/v1/documents/fuzz:m'],
      ['POST', '/api/v1/documents'],
      ['POST', '/api/v1/save'],
      ['POST', '/api/v1/branches'],
      ['POST', '/api/v1/query'],
      ['POST', '/api/v1/backup'],
    ]
    const nasty = fc.oneof(
      fc.string({maxLength: 64}),
      fc.nat({max: 20_000}).map((d) => '['.repeat(d) + ']'.repeat(d)),
      fc.nat({max: 20_000}).map((d) => '{"a":'.repeat(d) + '1' + '}'.repeat(d)),
      fc.constantFrom('{"n":12345678901234567890}', '{"f":1e400}', '{"m":9007199254740993}', '{"id":5}', '{"id":null}', '{"id":"_pg_schema:x"}', '{"name":"x."}', '{"name":5}', '{"sql":5}', '{"output":"/etc/passwd"}', '{"a":"\\ud800"}', '{"__proto__":{"x":1}}', '', 'null', '[]', '{"a":1,"a":2}', '\u0000', '{"id":"t:' + 'k'.repeat(3000) + '"}'),
      fc.nat({max: 3}).map((k) => `{"blob":"${'x'.repeat((k + 1) * 700 * 1024)}"}`),
    )
    const statuses: Record<number, number> = {}
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...routes), nasty, async ([method, path], text) => {
        const r = await fetch(`${base}${path}`, {body: text, headers: {'content-type': 'application/json'}, method})
        statuses[r.status] = (statuses[r.status] ?? 0) + 1
        expect(r.status, `${method} ${path} ${text.slice(0, 80)}`).to.be.below(500)
        await r.arrayBuffer()
      }),
      {numRuns: fuzzRuns(100), seed: SEED},
    )
    if (process.env.FUZZ_REPORT) console.log('rest malformed bodies', statuses)
    await stillServing()
  })
})
