import {expect} from 'chai'
import {execFile, execFileSync} from 'node:child_process'
import {chmodSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {promisify} from 'node:util'

import {docPath, parseId} from '../src/engine/ids.js'
import {openEngine} from '../src/engine/index.js'
import {cliEnv, runCli, startServer, type Started} from './helpers/cli.js'
import {cleanupTempDirs, gitOut, loseObject, tempDir} from './helpers/tmp.js'

const run = promisify(execFile)
const REST_ONLY = ['--disable-redis', '--disable-sql']

/** Runs a client program; resolves with its output and exit code instead of throwing on failure. */
async function client(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{code: number; out: string}> {
  try {
    const r = await run(cmd, args, {env})
    return {code: 0, out: r.stdout + r.stderr}
  } catch (error) {
    const e = error as {code?: number; stderr?: string; stdout?: string}
    return {code: typeof e.code === 'number' ? e.code : 1, out: (e.stdout ?? '') + (e.stderr ?? '')}
  }
}

async function waitFor(what: string, check: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const until = Date.now() + ms
  while (Date.now() < until) {
    if (await check()) return
    await new Promise((r) => setTimeout(r, 50))
  }
  expect.fail(`timed out waiting for ${what}`)
}

describe('svc: it stores what it acknowledged, and one request cannot stop it (built CLI)', function () {
  this.timeout(120_000)
  const running: Started[] = []
  afterEach(() => {
    for (const s of running.splice(0)) if (s.child.exitCode === null) s.child.kill('SIGKILL')
  })
  after(cleanupTempDirs)

  async function start(dir: string, args: string[] = REST_ONLY, env?: NodeJS.ProcessEnv): Promise<{base: string; s: Started}> {
    const s = await startServer(['--data-dir', dir, '--http-port', '0', '--redis-port', '0', '--pg-port', '0', '--log-level', 'error', ...args], env ? {env} : {})
    running.push(s)
    return {base: `http://127.0.0.1:${s.ready.rest}`, s}
  }

  async function stop(s: Started): Promise<void> {
    s.child.kill('SIGTERM')
    expect((await s.exited).code).to.equal(0)
  }

  it('refuses branch names git refuses on REST, Redis and SQL, and keeps writing on every branch', async () => {
    const dir = tempDir()
    const {base, s} = await start(dir, [])
    expect((await fetch(`${base}/api/v1/documents/t:1`, {body: '{"a":1}', method: 'PUT'})).status).to.equal(200)
    for (const name of ['x.', 'x.lock', 'a..b', 'a@{1}', 'HEAD', '-x']) {
      const r = await fetch(`${base}/api/v1/branches`, {body: JSON.stringify({name}), headers: {'content-type': 'application/json'}, method: 'POST'})
      expect(r.status, name).to.equal(400)
      expect(((await r.json()) as {error: {message: string}}).error.message).to.include('invalid branch name')
    }
    const redis = await client('redis-cli', ['-p', String(s.ready.redis), 'BRANCH', 'CREATE', 'x.'])
    expect(redis.out).to.include('invalid branch name "x.": it ends with "."')
    const psql = await client('psql', ['-h', '127.0.0.1', '-p', String(s.ready.pg), '-U', 'svc', '-X', '-A', '-t', '-c', 'CREATE SCHEMA "x."'], {...process.env, PGPASSWORD: 'svc'})
    expect(psql.code).to.not.equal(0)
    expect(psql.out).to.include('invalid branch name')
    expect((await fetch(`${base}/api/v1/branches`, {body: '{"name":"dev"}', headers: {'content-type': 'application/json'}, method: 'POST'})).status).to.equal(201)
    expect((await fetch(`${base}/api/v1/documents/t:2?branch=dev`, {body: '{"a":2}', method: 'PUT'})).status).to.equal(200)
    expect((await fetch(`${base}/api/v1/documents/t:3`, {body: '{"a":3}', method: 'PUT'})).status).to.equal(200)
    expect((await fetch(`${base}/healthz`)).status).to.equal(200)
    await stop(s)
    expect(gitOut(join(dir, 'repo'), ['for-each-ref', '--format=%(refname:strip=2)', 'refs/heads/']).trim().split('\n')).to.deep.equal(['dev', 'main'])
  })

  it('restarts a killed git writer by itself, answers /healthz 503 while writes cannot be made, and loses nothing acknowledged', async () => {
    const dir = tempDir()
    // A git that refuses to run fast-import while a flag file exists: the writer then cannot come back.
    const bin = tempDir('svc-git-')
    const flag = join(bin, 'no-fast-import')
    const realGit = execFileSync('sh', ['-c', 'command -v git'], {encoding: 'utf8'}).trim()
    writeFileSync(join(bin, 'git'), `#!/bin/sh\nif [ -e "${flag}" ]; then for a in "$@"; do [ "$a" = fast-import ] && { echo "fast-import refused by the test" >&2; exit 1; }; done; fi\nexec ${realGit} "$@"\n`)
    chmodSync(join(bin, 'git'), 0o755)
    // fast-import, whatever SVC_WRITER says: the test kills it by the pid it records (the pack writer is a thread).
    const env = {...cliEnv(), PATH: `${bin}:${process.env.PATH}`, SVC_WRITER: 'fast-import'}
    const {base, s} = await start(dir, REST_ONLY, env)
    const writerPid = (): number => Number(readFileSync(join(dir, 'fast-import.pid'), 'utf8'))
    const put = (i: number): Promise<number> => fetch(`${base}/api/v1/documents/k:${i}`, {body: JSON.stringify({i}), method: 'PUT'}).then((r) => r.status)

    // 1. Killed in the middle of a stream of writes: every write is acknowledged, none is lost.
    const first = writerPid()
    const burst: Array<Promise<number>> = []
    for (let i = 0; i < 200; i++) {
      burst.push(put(i))
      if (i === 100) process.kill(first, 'SIGKILL')
    }
    expect(new Set(await Promise.all(burst))).to.deep.equal(new Set([200]))
    await waitFor('a new fast-import', async () => writerPid() !== first)

    // 2. Killed while it cannot come back: /healthz says so and writes are refused, not lost.
    writeFileSync(flag, '')
    process.kill(writerPid(), 'SIGKILL')
    await waitFor('/healthz 503', async () => (await fetch(`${base}/healthz`)).status === 503)
    expect(await (await fetch(`${base}/healthz`)).text()).to.include('git writer failed')
    const health = (await (await fetch(`${base}/health`)).json()) as {checks: Array<{component: string; status: string}>}
    expect(health.checks.find((c) => c.component === 'wal')?.status).to.equal('critical')
    const refused = await fetch(`${base}/api/v1/documents/k:refused`, {body: '{}', method: 'PUT'})
    expect(refused.status).to.equal(503)

    // 3. Once git works again the writer is back without a restart of svc.
    rmSync(flag)
    await waitFor('/healthz 200', async () => (await fetch(`${base}/healthz`)).status === 200, 60_000)
    for (let i = 200; i < 220; i++) expect(await put(i)).to.equal(200)
    const after = (await (await fetch(`${base}/health`)).json()) as {checks: Array<Record<string, unknown>>}
    expect(after.checks.find((c) => c.component === 'wal')?.['writer-restarts']).to.be.at.least(2)
    await stop(s)
    const files = gitOut(join(dir, 'repo'), ['ls-tree', '-r', '--name-only', 'main']).trim().split('\n')
    expect(files).to.have.length(220)
    expect(files.some((f) => f.includes('refused'))).to.equal(false)
    gitOut(join(dir, 'repo'), ['fsck', '--full'])
  })

  it('stores ids whose file name would pass 255 bytes so a git clone checks out, and reads them back unchanged', async () => {
    const dir = tempDir()
    const ids = [`long:${'k'.repeat(512)}`, `long:${'é'.repeat(256)}`]
    let {base, s} = await start(dir)
    for (const id of ids) {
      const r = await fetch(`${base}/api/v1/documents/${encodeURIComponent(id)}`, {body: '{"v":1}', method: 'PUT'})
      expect(r.status).to.equal(200)
    }
    await stop(s)
    ;({base, s} = await start(dir))
    for (const id of ids) {
      const r = await fetch(`${base}/api/v1/documents/${encodeURIComponent(id)}`)
      expect(r.status).to.equal(200)
      expect(((await r.json()) as {id: string}).id).to.equal(id)
    }
    await stop(s)
    const clone = join(tempDir(), 'clone')
    execFileSync('git', ['clone', '-q', '--branch', 'main', join(dir, 'repo'), clone])
    const names = execFileSync('git', ['-C', clone, 'ls-files'], {encoding: 'utf8'}).trim().split('\n')
    expect(names).to.have.length(2)
    for (const n of names) expect(Buffer.byteLength(n.slice(n.lastIndexOf('/') + 1))).to.be.below(256)
    const dump = join(tempDir(), 'dump.json')
    expect((await runCli(['svc', 'dump', '--data-dir', dir, '--output', dump])).code).to.equal(0)
    expect((JSON.parse(readFileSync(dump, 'utf8')) as {documents: Array<{id: string}>}).documents.map((d) => d.id)).to.deep.equal([...ids].sort())
  })

  it('contains a document whose git object is missing: it fails alone naming the object, search skips it, /health is critical until it is put again', async () => {
    const dir = tempDir()
    let {base, s} = await start(dir)
    await fetch(`${base}/api/v1/documents/d:1`, {body: '{"text":"apple pie"}', method: 'PUT'})
    await fetch(`${base}/api/v1/documents/d:2`, {body: '{"text":"apple tart"}', method: 'PUT'})
    await stop(s)
    // Unpack every object, then lose the one blob of d:1 (as a disk error or a bad copy would).
    const repo = join(dir, 'repo')
    const blob = gitOut(repo, ['rev-parse', `main:${docPath(parseId('d:1'))}`]).trim()
    loseObject(repo, blob)

    ;({base, s} = await start(dir))
    const bad = await fetch(`${base}/api/v1/documents/d:1`)
    expect(bad.status).to.be.at.least(500)
    const body = (await bad.json()) as {error: {code: string; message: string}}
    expect(body.error.code).to.equal('damaged')
    expect(body.error.message).to.include(blob).and.include('d:1')
    expect((await fetch(`${base}/api/v1/documents/d:2`)).status).to.equal(200)
    const search = (await (await fetch(`${base}/api/v1/search?q=apple`)).json()) as {hits: Array<{id: string}>; skipped: Array<{id: string; object: string}>}
    expect(search.hits.map((h) => h.id)).to.deep.equal(['d:2'])
    expect(search.skipped).to.deep.equal([{id: 'd:1', object: blob}])
    const health = await fetch(`${base}/health`)
    expect(health.status).to.equal(503)
    const storage = ((await health.json()) as {checks: Array<{component: string; error?: string; status: string}>}).checks.find((c) => c.component === 'storage')
    expect(storage?.status).to.equal('critical')
    expect(storage?.error).to.include('d:1').and.include(blob)
    expect((await fetch(`${base}/healthz`)).status).to.equal(200)

    const diag = await runCli(['svc', 'diagnose', '--data-dir', dir, '--format', 'json'])
    expect(diag.code).to.equal(1)
    expect(diag.stdout).to.include('git fsck --full').and.include('restore').and.not.include('--repair')

    // Putting the document again repairs it: the damage report clears.
    expect((await fetch(`${base}/api/v1/documents/d:1`, {body: '{"text":"apple pie"}', method: 'PUT'})).status).to.equal(200)
    expect((await fetch(`${base}/health`)).status).to.equal(200)
    await stop(s)
  })

  it('lists documents past one whose git object is missing: the page answers 200, names the skipped document, and nothing stored changes', async () => {
    const dir = tempDir()
    let {base, s} = await start(dir)
    for (const i of [1, 2, 3]) await fetch(`${base}/api/v1/documents/d:${i}`, {body: JSON.stringify({n: i}), method: 'PUT'})
    await stop(s)
    const before = join(tempDir(), 'before.json')
    expect((await runCli(['svc', 'dump', '--data-dir', dir, '--output', before])).code).to.equal(0)
    const repo = join(dir, 'repo')
    const blob = gitOut(repo, ['rev-parse', `main:${docPath(parseId('d:2'))}`]).trim()
    loseObject(repo, blob)

    ;({base, s} = await start(dir))
    for (const url of [`${base}/api/v1/documents`, `${base}/api/v1/documents?table=d`, `${base}/api/v1/documents?prefix=d:&limit=2`]) {
      const r = await fetch(url)
      expect(r.status, url).to.equal(200)
      const page = (await r.json()) as {documents: Array<{id: string; n: number}>; skipped?: Array<{id: string; object: string}>}
      expect(page.skipped, url).to.deep.equal([{id: 'd:2', object: blob}])
      expect(page.documents.map((d) => d.id), url).to.deep.equal(url.includes('limit=2') ? ['d:1'] : ['d:1', 'd:3'])
    }
    // The next page after the damaged one goes on from the cursor.
    const first = (await (await fetch(`${base}/api/v1/documents?prefix=d:&limit=2`)).json()) as {nextCursor: string}
    const rest = (await (await fetch(`${base}/api/v1/documents?prefix=d:&limit=2&cursor=${encodeURIComponent(first.nextCursor)}`)).json()) as {documents: Array<{id: string}>; skipped?: unknown}
    expect(rest.documents.map((d) => d.id)).to.deep.equal(['d:3'])
    expect(rest.skipped).to.equal(undefined)
    expect((await fetch(`${base}/health`)).status).to.equal(503)
    await stop(s)
    // The readable documents are stored as they were.
    const kept = await client('git', ['-C', repo, 'cat-file', '-p', `main:${docPath(parseId('d:3'))}`])
    expect(JSON.parse(kept.out)).to.deep.equal((JSON.parse(readFileSync(before, 'utf8')) as {documents: Array<{id: string}>}).documents.find((d) => d.id === 'd:3'))
  })

  it('refuses writes to the SQL catalog on every protocol, and a damaged catalog entry is an error naming it', async () => {
    const dir = tempDir()
    const db = await openEngine(dir, {fullText: false})
    await db.put({columns: [{name: 5, type: 'text'}], id: '_pg_schema:people'}, {system: true})
    await db.put({id: 'pets:1', name: 'Rex'})
    await db.close()
    const {base, s} = await start(dir, [])
    const rest = await fetch(`${base}/api/v1/documents/_pg_schema:pets`, {body: '{"columns":"garbage"}', method: 'PUT'})
    expect(rest.status).to.equal(400)
    expect(((await rest.json()) as {error: {code: string}}).error.code).to.equal('reserved')
    const redis = await client('redis-cli', ['-p', String(s.ready.redis), 'SET', '_pg_schema:pets', 'x'])
    expect(redis.out).to.include('table "_pg_schema" is reserved')
    const env = {...process.env, PGPASSWORD: 'svc'}
    const psql = (sql: string): Promise<{code: number; out: string}> => client('psql', ['-h', '127.0.0.1', '-p', String(s.ready.pg), '-U', 'svc', '-X', '-A', '-t', '-c', sql], env)
    const broken = await psql('SELECT * FROM people')
    expect(broken.code).to.not.equal(0)
    expect(broken.out).to.match(/catalog entry "?_pg_schema:people"?( on branch main)? is damaged/)
    expect(broken.out).to.not.include('TypeError')
    const pets = await psql('SELECT name FROM pets')
    expect(pets.out.trim()).to.equal('Rex')
    await stop(s)
    expect(gitOut(join(dir, 'repo'), ['ls-tree', '-r', '--name-only', 'main']).split('\n').filter((l) => l.startsWith('_pg_schema/'))).to.have.length(1)
  })
})
