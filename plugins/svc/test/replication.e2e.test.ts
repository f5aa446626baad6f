import {expect} from 'chai'
import {type ChildProcess, execFile, execFileSync, spawn} from 'node:child_process'
import {mkdirSync} from 'node:fs'
import {createServer} from 'node:net'
import {join} from 'node:path'
import {promisify} from 'node:util'

import {runCli, startServer, type Started} from './helpers/cli.js'
import {cleanupTempDirs, gitOut, tempDir} from './helpers/tmp.js'

const exec = promisify(execFile)

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const {port} = srv.address() as {port: number}
      srv.close(() => resolve(port))
    })
  })
}

async function until(what: () => Promise<boolean> | boolean, ms: number): Promise<void> {
  const end = Date.now() + ms
  while (!(await what())) {
    if (Date.now() > end) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 250))
  }
}

// The dashed program itself: `git daemon` would leave git-daemon running when the wrapper is killed.
const GIT_DAEMON = join(execFileSync('git', ['--exec-path'], {encoding: 'utf8'}).trim(), 'git-daemon')

function daemon(base: string, port: number): ChildProcess {
  return spawn(GIT_DAEMON, [ '--reuseaddr', '--export-all', '--enable=receive-pack', `--base-path=${base}`, '--listen=127.0.0.1', `--port=${port}`, base], {stdio: 'ignore'})
}

interface Health {
  checks: Array<{component: string; remotes?: Array<{failures: number; lastError?: string; pending: boolean; remote: string}>; status: string}>
}

describe('toolkit svc replication to Git remotes (built CLI)', function () {
  this.timeout(300_000)
  let s: Started | undefined
  let d: ChildProcess | undefined

  after(() => {
    if (s && s.child.exitCode === null) s.child.kill('SIGKILL')
    d?.kill('SIGKILL')
    cleanupTempDirs()
  })

  it('pushes every branch to a local bare repository and to git daemon; with the daemon killed mid-stream it retries, then catches up', async () => {
    const root = tempDir()
    const data = join(root, 'data')
    const base = join(root, 'served')
    mkdirSync(base)
    await exec('git', ['init', '--bare', '-q', join(root, 'mirror.git')])
    await exec('git', ['init', '--bare', '-q', join(base, 'svc.git')])
    const port = await freePort()
    d = daemon(base, port)
    s = await startServer(['--data-dir', data, '--http-port', '0', '--disable-redis', '--disable-sql', '--log-level', 'warn'])
    const rest = `http://127.0.0.1:${s.ready.rest}`
    const put = async (id: string, branch?: string): Promise<void> => {
      expect((await fetch(`${rest}/api/v1/documents/${id}${branch ? `?branch=${branch}` : ''}`, {body: `{"id": "${id}"}`, method: 'PUT'})).status).to.equal(200)
    }
    await put('a:0')
    let r = await runCli(['svc', 'remote', 'add', 'mirror', join(root, 'mirror.git'), '--data-dir', data])
    expect(r.code, r.stderr).to.equal(0)
    r = await runCli(['svc', 'remote', 'add', 'daemon', `git://127.0.0.1:${port}/svc.git`, '--data-dir', data])
    expect(r.code, r.stderr).to.equal(0)
    r = await runCli(['svc', 'remote', 'add', 'daemon', 'x', '--data-dir', data])
    expect(r.code).to.equal(1)
    expect(r.stderr).to.include('already exists')
    await fetch(`${rest}/api/v1/branches`, {body: '{"name": "dev"}', method: 'POST'})
    await put('b:0', 'dev')
    const local = (): string => gitOut(join(data, 'repo'), ['for-each-ref', '--format=%(objectname) %(refname)', 'refs/heads/'])
    const remote = (repo: string): string => gitOut(repo, ['for-each-ref', '--format=%(objectname) %(refname)', 'refs/heads/'])
    await until(() => remote(join(root, 'mirror.git')) === local() && remote(join(base, 'svc.git')) === local(), 30_000)

    // The network side dies while writes keep coming: pushes fail and are retried with back-off.
    d.kill('SIGKILL')
    for (let i = 1; i <= 30; i++) await put(`a:${i}`)
    await until(async () => {
      const h = (await (await fetch(`${rest}/health`)).json()) as Health
      const rep = h.checks.find((c) => c.component === 'replication')
      return rep?.status === 'warning' && (rep.remotes?.find((x) => x.remote === 'daemon')?.failures ?? 0) > 0
    }, 30_000).catch(async (error: Error) => {
      throw new Error(`${error.message}: ${await (await fetch(`${rest}/health`)).text()} ${s?.stderr()}`)
    })
    const h = (await (await fetch(`${rest}/health`)).json()) as Health
    const st = h.checks.find((c) => c.component === 'replication')!.remotes!
    expect(st.find((x) => x.remote === 'daemon')!.lastError).to.include('git push daemon failed')
    expect(st.find((x) => x.remote === 'mirror')!.failures).to.equal(0)

    d = daemon(base, port)
    await until(() => remote(join(base, 'svc.git')) === local(), 90_000)
    s.child.kill('SIGTERM')
    expect((await s.exited).code).to.equal(0)
    // After the server's final flush the heads may have moved once more; both remotes get there at the next start.
    s = await startServer(['--data-dir', data, '--http-port', '0', '--disable-redis', '--disable-sql', '--log-level', 'warn'])
    await until(() => remote(join(root, 'mirror.git')) === local() && remote(join(base, 'svc.git')) === local(), 30_000).catch((error: Error) => {
      throw new Error(`${error.message}: local ${local()} mirror ${remote(join(root, 'mirror.git'))} daemon ${remote(join(base, 'svc.git'))} ${s?.stderr()}`)
    })
    expect(gitOut(join(base, 'svc.git'), ['rev-list', '--count', 'main']).trim()).to.equal('31')
    await exec('git', ['-C', join(base, 'svc.git'), 'fsck', '--full', '--no-progress'])
    const diag = await runCli(['svc', 'diagnose', '--data-dir', data, '--no-fsck', '--format', 'json'])
    const remoteCheck = diag.stdout.trim().split('\n').map((l) => JSON.parse(l) as {check: string; status: string}).find((c) => c.check === 'remote')!
    expect(remoteCheck.status).to.equal('ok')
    s.child.kill('SIGTERM')
    expect((await s.exited).code).to.equal(0)
    r = await runCli(['svc', 'remote', 'remove', 'daemon', '--data-dir', data])
    expect(r.code).to.equal(0)
    r = await runCli(['svc', 'remote', 'list', '--data-dir', data, '--format', 'json'])
    expect(r.stdout.trim().split('\n').map((l) => (JSON.parse(l) as {name: string}).name)).to.deep.equal(['mirror'])
  })
})
