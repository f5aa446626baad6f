import {expect} from 'chai'
import {execFileSync} from 'node:child_process'
import {writeFileSync} from 'node:fs'
import {createServer} from 'node:net'
import {join} from 'node:path'

import {cliEnv, runCli, startServer, type Started} from './helpers/cli.js'
import {cleanupTempDirs, gitOut, tempDir} from './helpers/tmp.js'

const NO_PROTOCOLS = ['--disable-redis', '--disable-sql']

describe('toolkit svc server (built CLI)', function () {
  this.timeout(60_000)
  const running: Started[] = []
  afterEach(() => {
    for (const s of running.splice(0)) if (s.child.exitCode === null) s.child.kill('SIGKILL')
  })
  after(cleanupTempDirs)

  it('serves REST, and on SIGTERM flushes to git and exits 0; a second instance is refused', async () => {
    const dir = tempDir()
    const s = await startServer(['--data-dir', dir, '--http-port', '0', ...NO_PROTOCOLS])
    running.push(s)
    expect(s.ready).to.include({dataDir: dir, status: 'listening'})
    const base = `http://127.0.0.1:${s.ready.rest}`
    const put = await fetch(`${base}/api/v1/documents/cfg:1`, {body: JSON.stringify({a: 1}), method: 'PUT'})
    expect(put.status).to.equal(200)

    const second = await runCli(['svc', 'server', '--data-dir', dir, '--http-port', '0', ...NO_PROTOCOLS])
    expect(second.code).to.not.equal(0)
    expect(second.stderr).to.match(/in use by another svc process \(pid \d+\)/)

    s.child.kill('SIGTERM')
    expect((await s.exited).code).to.equal(0)
    expect(s.stderr()).to.include('every acknowledged write is in git')
    expect(gitOut(join(dir, 'repo'), ['log', '--format=%s', 'main']).trim()).to.equal('put cfg:1')
  })

  it('reports a port in use with "Address already in use" and the port', async () => {
    const blocker = createServer()
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()))
    const port = (blocker.address() as {port: number}).port
    try {
      const r = await runCli(['svc', 'server', '--data-dir', tempDir(), '--http-port', String(port), ...NO_PROTOCOLS])
      expect(r.code).to.not.equal(0)
      expect(r.stderr).to.include('Address already in use').and.include(String(port))
    } finally {
      blocker.close()
    }
  })

  it('reads config.edn from the current directory; a named config that is missing or broken is a clear error', async () => {
    const cwd = tempDir()
    writeFileSync(join(cwd, 'config.edn'), `;; test config
{:storage {:data-dir "db"}
 :logging {:level :warn}
 :servers {:rest {:enabled true :port 0}
           :redis {:enabled false :port 6379}
           :postgresql {:enabled false :port 5432 :username "svc" :password "svc"}}}
`)
    const s = await startServer([], {cwd, env: cliEnv()})
    running.push(s)
    expect(s.ready).to.include({dataDir: join(cwd, 'db')})
    expect(s.ready).to.not.have.property('redis')
    s.child.kill('SIGINT')
    expect((await s.exited).code).to.equal(0)

    const missing = await runCli(['svc', 'server', '--config', join(cwd, 'nope.edn')])
    expect(missing.code).to.equal(2)
    expect(missing.stderr).to.match(/config file .*nope\.edn could not be found/)

    writeFileSync(join(cwd, 'broken.edn'), '{:servers {:rest {:port 3000}')
    const broken = await runCli(['svc', 'server', '--config', join(cwd, 'broken.edn')])
    expect(broken.code).to.equal(2)
    expect(broken.stderr).to.match(/broken\.edn:1: "\{" is never closed/)

    writeFileSync(join(cwd, 'typo.edn'), '{:servers {:rest {:prot 3000}}}')
    const typo = await runCli(['svc', 'server', '--config', join(cwd, 'typo.edn')])
    expect(typo.code).to.equal(2)
    expect(typo.stderr).to.include('unknown key :servers :rest :prot (did you mean :port?)')

    writeFileSync(join(cwd, 'type.edn'), '{:servers {:postgresql {:port "5432"}}}')
    const type = await runCli(['svc', 'server', '--config', join(cwd, 'type.edn')])
    expect(type.code).to.equal(2)
    expect(type.stderr).to.include(':servers :postgresql :port must be a port number')
  })

  it('SIGKILL during a concurrent write load loses no acknowledged write', async () => {
    const dir = tempDir()
    const s = await startServer(['--data-dir', dir, '--http-port', '0', ...NO_PROTOCOLS, '--log-level', 'warn'])
    running.push(s)
    const base = `http://127.0.0.1:${s.ready.rest}`
    // Per client: the last acknowledged body and the one in flight (which may or may not be durable).
    const acked = new Map<string, string>()
    const inflight = new Map<string, string>()
    let stop = false
    let ackCount = 0
    const client = async (c: number): Promise<void> => {
      for (let n = 0; !stop && n < 100_000; n++) {
        const id = `load:c${c}-${n % 25}`
        const body = JSON.stringify({c, n, pad: `${c}-${n}-${'z'.repeat(n % 50)}`})
        inflight.set(id, body)
        try {
          const r = await fetch(`${base}/api/v1/documents/${id}`, {body, method: 'PUT'})
          if (r.status !== 200) return
          await r.arrayBuffer()
          acked.set(id, body)
          ackCount++
        } catch {
          return
        }
      }
    }
    const load = Array.from({length: 32}, (_, c) => client(c))
    const until = Date.now() + 10_000
    while (ackCount < 600 && Date.now() < until) await new Promise((r) => setTimeout(r, 20))
    s.child.kill('SIGKILL')
    await s.exited
    stop = true
    await Promise.all(load)
    expect(ackCount).to.be.greaterThan(100)
    // The killed server's git fast-import gets EOF and still writes its last pack and refs; fsck
    // racing it can see a ref before its pack. Give it a bounded moment to finish, as a restart would.
    for (let attempt = 1; ; attempt++) {
      try {
        execFileSync('git', ['-C', join(dir, 'repo'), 'fsck', '--full'], {stdio: 'pipe'})
        break
      } catch (error) {
        if (attempt >= 10) throw error
        await new Promise((r) => setTimeout(r, 300))
      }
    }

    const s2 = await startServer(['--data-dir', dir, '--http-port', '0', ...NO_PROTOCOLS, '--log-level', 'warn'])
    running.push(s2)
    const base2 = `http://127.0.0.1:${s2.ready.rest}`
    for (const [id, body] of acked) {
      const r = await fetch(`${base2}/api/v1/documents/${id}`)
      expect(r.status, id).to.equal(200)
      const got = (await r.json()) as Record<string, unknown>
      const want = JSON.parse(body) as Record<string, unknown>
      const maybe = JSON.parse(inflight.get(id) ?? body) as Record<string, unknown>
      // The write in flight at the kill may have become durable; anything older may not show.
      expect([want.n, maybe.n], id).to.include(got.n)
    }
    let health: {checks: Array<{branches?: Array<{documents: number; expected: number; state: string}>; component: string; 'pending-entries'?: number}>} | undefined
    const deadline = Date.now() + 20_000
    for (;;) {
      health = (await (await fetch(`${base2}/health`)).json()) as typeof health
      const idx = health!.checks.find((c) => c.component === 'index')!.branches![0]
      const wal = health!.checks.find((c) => c.component === 'wal')!
      if ((idx.state === 'ready' && idx.documents === idx.expected && wal['pending-entries'] === 0) || Date.now() > deadline) break
      await new Promise((r) => setTimeout(r, 50))
    }
    const idx = health!.checks.find((c) => c.component === 'index')!.branches![0]
    expect(idx.documents).to.equal(idx.expected)
    // Every acknowledged id exists; an id whose first write was in flight may exist too.
    expect(idx.expected).to.be.within(acked.size, new Set([...acked.keys(), ...inflight.keys()]).size)
    s2.child.kill('SIGTERM')
    expect((await s2.exited).code).to.equal(0)
    execFileSync('git', ['-C', join(dir, 'repo'), 'fsck', '--full'], {stdio: 'pipe'})
  })
})
