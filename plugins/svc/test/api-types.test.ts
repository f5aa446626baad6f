import {expect} from 'chai'
import {spawnSync} from 'node:child_process'
import {symlinkSync, writeFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {join, resolve} from 'node:path'
import {fileURLToPath} from 'node:url'

import {cleanupTempDirs, tempDir} from './helpers/tmp.js'

const here = fileURLToPath(new URL('.', import.meta.url))
const tscPath = createRequire(import.meta.url).resolve('typescript/bin/tsc')

/** Type-checks files of a TypeScript project that depends on the built plugin package, in one tsc run (each run costs seconds). */
function typeCheck(dir: string, files: string[]) {
  const flags = ['--noEmit', '--strict', '--module', 'NodeNext', '--moduleResolution', 'NodeNext', '--target', 'ES2022', '--types', 'node']
  return spawnSync(process.execPath, [tscPath, ...flags, ...files], {cwd: dir, encoding: 'utf8'})
}

describe('svc Node.js API declarations', function () {
  this.timeout(240_000)
  after(cleanupTempDirs)

  it('a TypeScript program using @toolkit/plugin-svc type-checks, and a misuse is a type error', () => {
    const dir = tempDir()
    // The workspace's node_modules links @toolkit/plugin-svc to this package, as npm would install it.
    symlinkSync(resolve(here, '../../../node_modules'), join(dir, 'node_modules'))
    writeFileSync(join(dir, 'package.json'), '{"type": "module"}\n')
    writeFileSync(
      join(dir, 'ok.ts'),
      `import {EngineError, openEngine, type Doc, type SearchResult} from '@toolkit/plugin-svc'
const db = await openEngine('./data', {fullText: false, maxPendingEntries: 100})
const written: number = (await db.put({id: 'users:1', name: 'Ada'}, {meta: {user: 'me'}})).seq
const doc: Doc | undefined = await db.get('users:1')
const found: SearchResult = await db.search('ada', {limit: 5})
const code: string = new EngineError('invalid_id', 'bad id').code
await db.close()
export {code, doc, found, written}
`,
    )
    writeFileSync(join(dir, 'bad.ts'), `import {openEngine} from '@toolkit/plugin-svc'\nconst db = await openEngine('./data')\nconst n: number = await db.get('users:1')\nexport {n}\n`)
    // Both files in one program: every error must be bad.ts's misuse, none may come from ok.ts.
    const r = typeCheck(dir, ['ok.ts', 'bad.ts'])
    const errors = r.stdout.split('\n').filter((l) => /error TS\d+/.test(l))
    expect(r.status).to.not.equal(0)
    expect(errors, r.stdout + r.stderr).to.have.length(1)
    expect(errors[0]).to.match(/^bad\.ts.*error TS2322/)
  })
})
