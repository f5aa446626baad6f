import {expect} from 'chai'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {openEngine} from '../src/engine/index.js'
import {dataDirLayout} from '../src/ops/data-dir.js'
import {cliEnv, runCli} from './helpers/cli.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'

describe('svc diagnose and dump find the data directory the server uses (built CLI)', function () {
  this.timeout(60_000)
  after(cleanupTempDirs)

  it('read config.edn from the current directory or --config, as svc server does', async () => {
    const cwd = tempDir()
    writeFileSync(join(cwd, 'config.edn'), '{:storage {:data-dir "db"} :servers {:rest {:port 0}}}\n')
    const db = await openEngine(join(cwd, 'db'), {fullText: false})
    await db.put({id: 'cfg:1', v: 1})
    await db.close()
    const env = cliEnv()

    const diag = await runCli(['svc', 'diagnose', '--no-fsck', '--format', 'json'], {cwd, env})
    expect(diag.code, diag.stderr).to.equal(0)
    expect(diag.stdout).to.include('1 branch(es): main')
    const dump = await runCli(['svc', 'dump', '--output', '-'], {cwd, env})
    expect(dump.code, dump.stderr).to.equal(0)
    expect((JSON.parse(dump.stdout) as {count: number}).count).to.equal(1)

    const elsewhere = tempDir()
    const viaFlag = await runCli(['svc', 'dump', '--config', join(cwd, 'config.edn'), '--output', '-'], {cwd, env: {...env}})
    expect((JSON.parse(viaFlag.stdout) as {count: number}).count).to.equal(1)
    // Without a config.edn and without --data-dir, ./data is meant, and a clear error says it is not one.
    const none = await runCli(['svc', 'diagnose'], {cwd: elsewhere, env})
    expect(none.code).to.not.equal(0)
    expect(none.stderr).to.include(join(elsewhere, 'data')).and.include('not an svc data directory')
  })

  it('names every file of a data directory in one layout', () => {
    const l = dataDirLayout('/srv/svc', {indexDir: '/fast/index'})
    expect(l).to.deep.equal({
      index: '/fast/index',
      indexDefinitions: '/srv/svc/indexes.json',
      instanceLock: '/srv/svc/svc.lock',
      repo: '/srv/svc/repo',
      root: '/srv/svc',
      wal: '/srv/svc/wal',
      writerPid: '/srv/svc/fast-import.pid',
    })
  })
})
