import {expect} from 'chai'
import fc from 'fast-check'
import {spawn} from 'node:child_process'
import {existsSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {cliEnv, RUN_JS} from '../helpers/cli.js'
import {cleanupTempDirs, tempDir} from '../helpers/tmp.js'
import {FUZZ_SEED, fuzzRuns, fuzzTimeout} from './runs.js'

const SEED = FUZZ_SEED

/** Starts `svc server --config file`; resolves with the exit code and stderr, or 'listening' (then stops it). */
function serve(config: string, dataDir: string): Promise<{code: null | number | 'listening'; stderr: string}> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [RUN_JS, 'svc', 'server', '--format', 'json', '--config', config, '--data-dir', dataDir, '--http-port', '0', '--redis-port', '0', '--pg-port', '0'], {env: cliEnv()})
    let stderr = ''
    let listening = false
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.stdout.on('data', (d: Buffer) => {
      if (!listening && d.toString().includes('"listening"')) {
        listening = true
        child.kill('SIGTERM')
      }
    })
    child.on('close', (code) => resolve({code: listening ? 'listening' : code, stderr}))
  })
}

// Issue 20: a broken config.edn is a clear error naming the file (and the key or line), exit 2,
// and nothing is written: the data directory is not even created.
describe('svc config.edn: random and mutated files give exit 2 with the file named, nothing written (built CLI)', function () {
  this.timeout(fuzzTimeout(180_000))
  after(cleanupTempDirs)

  it('never crashes on a mutated config.edn (fast-check, fixed seed)', async () => {
    const valid = '{:servers {:rest {:enabled true :port 0} :redis {:enabled false} :postgresql {:enabled false :username "u" :password "p"}} :index {:enabled true}}'
    const values = ['"x"', '5', '-1', '70000', 'nil', 'true', ':kw', '[1 2]', '{}', '#{1}', '"\\u0000"', '1.5', '9999999999999999999999', '#inst "x"', '\\c', '(a b)']
    const edn = fc.oneof(
      fc.tuple(fc.nat({max: valid.length}), fc.nat({max: 8})).map(([i, n]) => valid.slice(0, i) + valid.slice(i + n)),
      fc.tuple(fc.constantFrom(':port', ':enabled', ':username', ':password', ':host', ':max-body-bytes', ':data-dir', ':index', ':servers'), fc.constantFrom(...values)).map(([k, v]) => valid.replace(`${k} `, `${k} ${v} :ignored `).replace(/:port 0/, `:port ${v}`)),
      fc.string({maxLength: 40}),
    )
    const outcomes: Record<string, number> = {}
    await fc.assert(
      fc.asyncProperty(edn, async (text) => {
        const root = tempDir()
        const file = join(root, 'config.edn')
        writeFileSync(file, text)
        const data = join(root, 'data')
        const r = await serve(file, data)
        outcomes[String(r.code)] = (outcomes[String(r.code)] ?? 0) + 1
        if (r.code === 'listening') return
        expect(r.code, `${text}\n${r.stderr}`).to.equal(2)
        expect(r.stderr, text).to.include(file)
        expect(r.stderr, text).to.not.match(/TypeError|at .*\.js:\d+/)
        expect(existsSync(data), `data directory created for ${text}`).to.equal(false)
      }),
      {numRuns: fuzzRuns(8), seed: SEED},
    )
    if (process.env.FUZZ_REPORT) console.log('config.edn outcomes', outcomes)
    expect(outcomes['2']).to.be.greaterThan(0)
  })
})
