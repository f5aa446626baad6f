import {expect} from 'chai'
import fc from 'fast-check'
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {toolkit} from '../client/cli.js'
import {FUZZ_SEED, fuzzRuns, fuzzTimeout} from './runs.js'

const VALID = JSON.stringify(
  {
    gwServers: {
      local: {args: ['server.js'], command: 'node', env: {LOG_LEVEL: 'warn'}},
      remote: {headers: {'x-team': 'a'}, url: 'https://mcp.example.com/mcp'},
    },
    serve: {maxSessions: 10, port: 8080},
  },
  null,
  2,
)

// Issue 20: a mutated servers.json is a clear error naming the file (and the line when it has
// one), exit 2, and the file is left exactly as it was, by a command that only reads it and by
// one that would write it.
describe('gw servers.json: random and mutated files give exit 2 naming the file, the file unchanged (built CLI)', function () {
  this.timeout(fuzzTimeout(180_000))
  let home: string

  before(() => {
    home = mkdtempSync(join(tmpdir(), 'gw-fuzz-files-'))
  })

  after(() => rmSync(home, {force: true, recursive: true}))

  it('never crashes on a mutated servers.json and never rewrites one it refused (fast-check, fixed seed)', async () => {
    const values = ['5', '-1', 'null', 'true', '"x"', '[]', '{}', '[1,2]', '"ftp://x"', '"http://"', '"\\u0000"', '1e400', '{"a":{"b":{}}}']
    const mutated = fc.oneof(
      fc.tuple(fc.nat({max: VALID.length}), fc.nat({max: 6})).map(([i, n]) => VALID.slice(0, i) + VALID.slice(i + n)),
      fc.tuple(fc.constantFrom('"args": ', '"command": ', '"env": ', '"url": ', '"headers": ', '"maxSessions": ', '"port": ', '"gwServers": ', '"serve": ', '"LOG_LEVEL": '), fc.constantFrom(...values)).map(([k, v]) => VALID.replace(new RegExp(`${k}("[^"]*"|\\[[^\\]]*\\]|\\{[^}]*\\}|\\d+)`), `${k}${v}`)),
      fc.string({maxLength: 40}),
      fc.jsonValue({maxDepth: 3}).map((v) => JSON.stringify(v)),
    )
    const outcomes: Record<string, number> = {}
    await fc.assert(
      fc.asyncProperty(mutated, fc.constantFrom('servers', 'add'), async (text, command) => {
        const file = join(home, 'servers.json')
        writeFileSync(file, text)
        const args = command === 'servers' ? ['gw', 'servers', '--config', file, '--format', 'json'] : ['gw', 'add', 'fresh', '--url', 'http://127.0.0.1:9/mcp', '--config', file, '--format', 'json']
        const r = await toolkit(args, {cwd: home, home})
        outcomes[`${command} ${r.code}`] = (outcomes[`${command} ${r.code}`] ?? 0) + 1
        expect(r.stderr, text).to.not.match(/TypeError|RangeError|at .*\.js:\d+/)
        if (r.code === 0) return
        expect(r.code, `${text}\n${r.stderr}`).to.equal(2)
        const record = JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '{}') as {error?: {message?: string}}
        expect(record.error?.message, `${text}\n${r.stdout}`).to.include(file)
        expect(readFileSync(file, 'utf8'), 'a refused file was rewritten').to.equal(text)
      }),
      {numRuns: fuzzRuns(6), seed: FUZZ_SEED},
    )
    if (process.env.FUZZ_REPORT) console.log('servers.json outcomes', outcomes)
    expect(Object.keys(outcomes).some((o) => o.endsWith(' 2'))).to.equal(true)
  })
})
