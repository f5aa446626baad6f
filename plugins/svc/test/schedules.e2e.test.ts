import {expect} from 'chai'
import {readdirSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {runCli, startServer, type Started} from './helpers/cli.js'
import {cleanupTempDirs, gitOut, tempDir} from './helpers/tmp.js'

interface View {
  files?: string[]
  id: string
  lastError?: string
  runs?: number
  state: string
}

async function list(dir: string): Promise<View[]> {
  const r = await runCli(['svc', 'list-schedules', '--data-dir', dir, '--format', 'json'])
  expect(r.code, r.stderr).to.equal(0)
  return r.stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as View)
}

async function until(what: () => Promise<boolean>, ms: number): Promise<void> {
  const end = Date.now() + ms
  while (!(await what())) {
    if (Date.now() > end) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 500))
  }
}

describe('toolkit svc schedule (built CLI, server runs the schedules)', function () {
  this.timeout(300_000)
  let s: Started | undefined

  after(() => {
    if (s && s.child.exitCode === null) s.child.kill('SIGKILL')
    cleanupTempDirs()
  })

  it('chains incrementals across a restart, prunes to --keep, restores to the last backup; a failing schedule shows in list-schedules and /health', async () => {
    const root = tempDir()
    const data = join(root, 'data')
    const out = join(root, 'backups')
    s = await startServer(['--data-dir', data, '--http-port', '0', '--disable-redis', '--disable-sql', '--log-level', 'warn'])
    let rest = `http://127.0.0.1:${s.ready.rest}`
    let n = 0
    const write = async (): Promise<void> => {
      expect((await fetch(`${rest}/api/v1/documents/s:${n++}`, {body: '{"v": 1}', method: 'PUT'})).status).to.equal(200)
    }
    await write()
    const added = await runCli(['svc', 'schedule', '--data-dir', data, '--mode', 'incremental', '--interval', '0.04', '--output-dir', out, '--keep', '3', '--format', 'json'])
    expect(added.code, added.stderr).to.equal(0)
    const id = (JSON.parse(added.stdout) as {id: string}).id
    const blocked = join(root, 'not-a-dir')
    writeFileSync(blocked, '')
    const bad = await runCli(['svc', 'schedule', '--data-dir', data, '--mode', 'full', '--interval', '0.04', '--output-dir', join(blocked, 'x'), '--format', 'json'])
    const badId = (JSON.parse(bad.stdout) as {id: string}).id
    await until(async () => {
      await write()
      return ((await list(data)).find((v) => v.id === id)?.runs ?? 0) >= 2
    }, 60_000)

    s.child.kill('SIGTERM')
    expect((await s.exited).code).to.equal(0)
    const before = (await list(data)).find((v) => v.id === id)!
    s = await startServer(['--data-dir', data, '--http-port', '0', '--disable-redis', '--disable-sql', '--log-level', 'warn'])
    rest = `http://127.0.0.1:${s.ready.rest}`
    await until(async () => {
      await write()
      return ((await list(data)).find((v) => v.id === id)?.runs ?? 0) >= (before.runs ?? 0) + 3
    }, 90_000)
    const views = await list(data)
    const failing = views.find((v) => v.id === badId)!
    expect(failing.state).to.equal('failing')
    expect(failing.lastError).to.match(/not a directory|ENOTDIR|EEXIST/i)
    const health = (await (await fetch(`${rest}/health`)).json()) as {checks: Array<{component: string; failing: Array<{id: string}>; status: string}>}
    const check = health.checks.find((c) => c.component === 'schedules')!
    expect(check.status).to.equal('warning')
    expect(check.failing.map((f) => f.id)).to.deep.equal([badId])

    s.child.kill('SIGTERM')
    expect((await s.exited).code).to.equal(0)

    // At most --keep files of the current chain remain, and they restore, in order, to the last backup.
    const chain = (await list(data)).find((v) => v.id === id)!.files ?? []
    expect((await runCli(['svc', 'cancel-schedule', '--data-dir', data, '--id', id])).code).to.equal(0)
    expect((await runCli(['svc', 'cancel-schedule', '--data-dir', data, '--id', badId])).code).to.equal(0)
    const none = await runCli(['svc', 'cancel-schedule', '--data-dir', data, '--id', 'nope'])
    expect(none.code).to.equal(1)
    expect(none.stderr).to.include('no schedule with id nope')
    expect(await list(data)).to.deep.equal([])
    expect(chain.length).to.be.within(1, 3)
    const kept = readdirSync(out).filter((f) => !f.endsWith('.manifest.json'))
    expect(kept.sort()).to.deep.equal(chain.map((f) => f.slice(out.length + 1)).sort())
    const restored = join(root, 'restored')
    for (const f of chain) {
      const r = await runCli(['svc', 'restore', '--input', f, '--data-dir', restored], {timeoutMs: 120_000})
      expect(r.code, r.stderr).to.equal(0)
    }
    const last = (JSON.parse(readFileSync(`${chain.at(-1)}.manifest.json`, 'utf8')) as {refs: Array<{commit: string; name: string}>}).refs
    expect(gitOut(join(restored, 'repo'), ['rev-parse', 'main']).trim()).to.equal(last.find((r) => r.name === 'refs/heads/main')!.commit)
  })
})
