import {expect} from 'chai'
import {execFile} from 'node:child_process'
import {existsSync} from 'node:fs'
import {join} from 'node:path'
import {promisify} from 'node:util'

import {openEngine} from '../src/engine/index.js'
import {cliEnv, RUN_JS} from './helpers/cli.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'

const exec = promisify(execFile)

/** Runs the built CLI on a pseudo-terminal (util-linux `script`), as an operator at a terminal would. */
async function onTerminal(args: string[]): Promise<string> {
  const {CI: _ci, ...env} = cliEnv()
  const command = [process.execPath, RUN_JS, ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ')
  // A sized terminal: spinners are drawn only where they can be cleared.
  const {stdout} = await exec('script', ['-qec', `stty cols 100 rows 30; ${command}`, '/dev/null'], {env, maxBuffer: 1 << 20, timeout: 120_000})
  return stdout
}

describe('svc operations show their progress on a terminal (built CLI)', function () {
  this.timeout(300_000)

  after(() => cleanupTempDirs())

  it('backup and restore report their steps and the result on a terminal, and print only the record with --format json', async () => {
    const data = join(tempDir(), 'data')
    const db = await openEngine(data, {fullText: false})
    for (let i = 0; i < 10; i++) await db.put({id: `p:${i}`, v: i})
    await db.close()
    const out = join(tempDir(), 'full.tar.gz')

    const shown = await onTerminal(['svc', 'backup', '--data-dir', data, '--output', out])
    // The spinner's steps, then its result, then the record.
    expect(shown).to.include(`writing ${out}`)
    expect(shown).to.include('full backup written')
    expect(shown).to.match(/full tar\.gz backup .*10 documents on main/)
    expect(existsSync(out)).to.equal(true)

    const restored = await onTerminal(['svc', 'restore', '--data-dir', join(tempDir(), 'restored'), '--input', out])
    expect(restored).to.match(/restore/i)
    expect(restored).to.include('10')

    // A script reading JSON gets one record and no spinner frames, terminal or not.
    const quiet = await onTerminal(['svc', 'backup', '--data-dir', data, '--output', join(tempDir(), 'again.tar.gz'), '--format', 'json'])
    expect(quiet).not.to.include('full backup written')
    expect((JSON.parse(quiet.trim().split('\n').at(-1)!) as {documents: number}).documents).to.equal(10)
  })
})
