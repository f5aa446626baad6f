import {expect} from 'chai'
import {execFile} from 'node:child_process'
import {copyFileSync, existsSync, readFileSync, statSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {promisify} from 'node:util'

import {openEngine} from '../src/engine/index.js'
import type {Doc} from '../src/engine/types.js'
import {runCli, startServer, type Started} from './helpers/cli.js'
import {cleanupTempDirs, gitOut, tempDir} from './helpers/tmp.js'

const exec = promisify(execFile)

interface Manifest {
  base_commit: null | string
  checksum: string
  documents: number
  path: string
  refs: Array<{commit: string; name: string}>
  size: number
  type: string
}

async function cli(args: string[]): Promise<Record<string, unknown>> {
  const r = await runCli([...args, '--format', 'json'], {timeoutMs: 120_000})
  expect(r.code, `${args.join(' ')}: ${r.stderr}`).to.equal(0)
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>
}

/** Everything a user could read back: every document of every branch, each one's history, and search answers. */
async function contents(dir: string, queries: string[]): Promise<unknown> {
  const db = await openEngine(dir)
  try {
    await db.reindex()
    const out: Record<string, unknown> = {}
    for (const b of await db.branches()) {
      const docs: Doc[] = []
      let cursor: string | undefined
      do {
        const page = await db.list({branch: b.name, cursor, limit: 1000})
        docs.push(...page.docs)
        cursor = page.nextCursor
      } while (cursor)
      const history: Record<string, unknown> = {}
      // History is one git log per document: every document but the writer's, and every 25th of those.
      for (const d of docs) if (!d.id.startsWith('live:') || Number(d.id.slice(5)) % 25 === 0) history[d.id] = (await db.history(d.id, {branch: b.name, limit: 1000})).versions
      const search: Record<string, unknown> = {}
      for (const q of queries) search[q] = (await db.search(q, {branch: b.name, limit: 1000})).hits.map((h) => h.id).sort()
      out[b.name] = {docs, head: b.head, history, search}
    }
    return out
  } finally {
    await db.close()
  }
}

describe('toolkit svc backup and restore (built CLI, live server)', function () {
  this.timeout(300_000)
  let s: Started | undefined

  after(() => {
    if (s && s.child.exitCode === null) s.child.kill('SIGKILL')
    cleanupTempDirs()
  })

  it('backs up full and incremental while REST, Redis and PostgreSQL writes continue; restores every acknowledged write, its history and search', async () => {
    const root = tempDir()
    const data = join(root, 'data')
    const backups = join(root, 'backups')
    s = await startServer(['--data-dir', data, '--http-port', '0', '--redis-port', '0', '--pg-port', '0', '--log-level', 'warn'])
    const rest = `http://127.0.0.1:${s.ready.rest}`
    const put = async (id: string, body: Record<string, unknown>, branch?: string): Promise<void> => {
      const res = await fetch(`${rest}/api/v1/documents/${encodeURIComponent(id)}${branch ? `?branch=${branch}` : ''}`, {body: JSON.stringify(body), method: 'PUT'})
      expect(res.status).to.equal(200)
    }
    for (let i = 0; i < 30; i++) await put(`notes:${i}`, {text: `note ${i} ${i % 3 === 0 ? 'zebra' : 'yak'}`})
    await put('notes:0', {text: 'note 0 zebra edited'})
    for (let i = 0; i < 10; i++) await exec('redis-cli', ['-p', String(s.ready.redis), 'HSET', `cache:${i}`, 'value', `redis ${i} zebra`])
    const pgPort = String(s.ready.pg)
    const psql = (sql: string): Promise<unknown> => exec('psql', ['-h', '127.0.0.1', '-p', pgPort, '-U', 'svc', '-X', '-A', '-t', '-c', sql], {env: {...process.env, PGPASSWORD: 'svc'}})
    for (let i = 0; i < 10; i++) await psql(`INSERT INTO people (id, name) VALUES ('${i}', 'person ${i} yak')`)
    await psql("UPDATE people SET name = 'person 1 zebra' WHERE id = '1'")
    expect((await fetch(`${rest}/api/v1/branches`, {body: JSON.stringify({name: 'dev'}), method: 'POST'})).status).to.equal(201)
    await put('notes:dev', {text: 'only on dev zebra'}, 'dev')

    // A writer that keeps going through every backup; each acknowledged id is remembered.
    const acked: string[] = []
    let writing = true
    const writer = (async () => {
      for (let i = 0; writing; i++) {
        await put(`live:${i}`, {text: `live ${i} yak`})
        acked.push(`live:${i}`)
        await new Promise((r) => setTimeout(r, 10))
      }
    })()
    await new Promise((r) => setTimeout(r, 300))
    const before1 = acked.length
    const fullTar = (await cli(['svc', 'backup', '--data-dir', data, '--output', join(backups, 'full.tar.gz')])) as unknown as Manifest
    const before2 = acked.length
    const full = (await cli(['svc', 'backup', '--data-dir', data, '--format', 'bundle', '--output', join(backups, 'full.bundle')])) as unknown as Manifest
    await new Promise((r) => setTimeout(r, 300))
    const baseMain = full.refs.find((r) => r.name === 'refs/heads/main')!.commit
    const before3 = acked.length
    const inc1 = (await cli(['svc', 'backup', '--data-dir', data, '--format', 'bundle', '--base-commit', baseMain, '--output', join(backups, 'inc-1.bundle')])) as unknown as Manifest
    writing = false
    await writer
    await put('notes:dev', {text: 'dev changed after inc-1'}, 'dev')

    expect(fullTar).to.include({documents: fullTar.documents, type: 'full'})
    expect(inc1).to.include({base_commit: baseMain, type: 'incremental'})
    for (const m of [fullTar, full, inc1]) {
      const onDisk = JSON.parse(readFileSync(`${m.path}.manifest.json`, 'utf8')) as Manifest
      expect(onDisk).to.deep.equal(m)
      const {stdout} = await exec('sha256sum', [m.path])
      expect(stdout.split(' ')[0]).to.equal(m.checksum)
    }
    // A running server was asked to do the work: its repository is still whole, and so is the backup.
    const fromTar = join(root, 'from-tar')
    const r1 = await cli(['svc', 'restore', '--input', fullTar.path, '--data-dir', fromTar])
    expect(r1).to.include({type: 'full'})
    const tarDb = await openEngine(fromTar)
    for (const id of acked.slice(0, before1)) expect(await tarDb.get(id), id).to.not.equal(undefined)
    expect((await tarDb.get('people:1'))?.name).to.equal('person 1 zebra')
    expect((await tarDb.search('zebra')).total).to.be.greaterThan(10)
    await tarDb.close()

    // Full bundle, then the incremental on top of it: every write acknowledged before each backup started.
    const chain = join(root, 'chain')
    await cli(['svc', 'restore', '--input', full.path, '--format', 'bundle', '--data-dir', chain])
    const r2 = await cli(['svc', 'restore', '--input', inc1.path, '--format', 'bundle', '--data-dir', chain])
    expect(r2).to.include({type: 'incremental'})
    expect(gitOut(join(chain, 'repo'), ['rev-parse', 'refs/heads/main']).trim()).to.equal(inc1.refs.find((r) => r.name === 'refs/heads/main')!.commit)
    const chainDb = await openEngine(chain, {fullText: false})
    for (const id of acked.slice(0, before3)) expect(await chainDb.get(id), id).to.not.equal(undefined)
    expect(before2).to.be.at.least(before1)
    await chainDb.close()

    // Stop the server; one more incremental brings the chain to exactly the original refs.
    s.child.kill('SIGTERM')
    expect((await s.exited).code).to.equal(0)
    const inc1Main = inc1.refs.find((r) => r.name === 'refs/heads/main')!.commit
    const inc2 = (await cli(['svc', 'backup', '--data-dir', data, '--format', 'bundle', '--base-commit', inc1Main, '--output', join(backups, 'inc-2.bundle')])) as unknown as Manifest
    await cli(['svc', 'restore', '--input', inc2.path, '--data-dir', chain])
    // Every branch, exactly (refs/svc/index-definitions, the server's publication of indexes.json
    // for followers, is not database content and is published again by the restored server).
    expect(gitOut(join(chain, 'repo'), ['for-each-ref', 'refs/heads/'])).to.equal(gitOut(join(data, 'repo'), ['for-each-ref', 'refs/heads/']))
    const queries = ['zebra', 'yak', 'person', 'live']
    expect(await contents(chain, queries)).to.deep.equal(await contents(data, queries))
    await exec('git', ['-C', join(chain, 'repo'), 'fsck', '--full', '--no-progress'])
  })

  it('refuses what would lose or corrupt data, with the cause and the remedy', async () => {
    const root = tempDir()
    const data = join(root, 'data')
    const db = await openEngine(data)
    await db.put({id: 'a:1', v: 1})
    await db.close()
    const base = gitOut(join(data, 'repo'), ['rev-parse', 'main']).trim()
    let r = await runCli(['svc', 'backup', '--data-dir', data, '--output', join(root, 'x.tar.gz'), '--base-commit', base])
    expect(r.code).to.equal(2)
    expect(r.stderr).to.include('add --format bundle')
    r = await runCli(['svc', 'backup', '--data-dir', data, '--format', 'bundle', '--output', join(root, 'x.bundle'), '--base-commit', base])
    expect(r.code).to.equal(1)
    expect(r.stderr).to.include('nothing was written after base commit')
    const full = (await cli(['svc', 'backup', '--data-dir', data, '--output', join(root, 'full.tar.gz')])) as unknown as Manifest
    r = await runCli(['svc', 'backup', '--data-dir', data, '--output', full.path])
    expect(r.code).to.equal(2)
    expect(r.stderr).to.include('already exists')

    const db2 = await openEngine(data)
    await db2.put({id: 'a:2', v: 2})
    await db2.close()
    const inc = (await cli(['svc', 'backup', '--data-dir', data, '--format', 'bundle', '--output', join(root, 'inc.bundle'), '--base-commit', base])) as unknown as Manifest
    r = await runCli(['svc', 'restore', '--input', inc.path, '--data-dir', join(root, 'empty')])
    expect(r.code).to.equal(1)
    expect(r.stderr).to.include('is an incremental backup').and.include('restore the full backup')
    // A different database does not hold the base commit.
    const other = join(root, 'other')
    const odb = await openEngine(other)
    await odb.put({id: 'z:1'})
    await odb.close()
    r = await runCli(['svc', 'restore', '--input', inc.path, '--data-dir', other])
    expect(r.code).to.equal(1)
    expect(r.stderr).to.include(`base commit ${base} is missing`)
    expect(gitOut(join(other, 'repo'), ['rev-list', '--count', 'main']).trim()).to.equal('1')

    r = await runCli(['svc', 'restore', '--input', full.path, '--data-dir', other])
    expect(r.code).to.equal(2)
    expect(r.stderr).to.include('is not empty').and.include('--force')
    // --force keeps the old directory aside.
    const forced = await cli(['svc', 'restore', '--input', full.path, '--data-dir', other, '--force'])
    expect(existsSync(join(String(forced.keptAside), 'repo', 'HEAD'))).to.equal(true)

    // A damaged copy is refused before anything is written.
    const damaged = join(root, 'damaged.tar.gz')
    copyFileSync(full.path, damaged)
    copyFileSync(`${full.path}.manifest.json`, `${damaged}.manifest.json`)
    const bytes = readFileSync(damaged)
    bytes[bytes.length >> 1] ^= 0xff
    writeFileSync(damaged, bytes)
    r = await runCli(['svc', 'restore', '--input', damaged, '--data-dir', join(root, 'never')])
    expect(r.code).to.equal(2)
    expect(r.stderr).to.include('does not match its manifest')
    expect(existsSync(join(root, 'never'))).to.equal(false)
  })

  it('REST: backup and export inside the backup directory only, import of a new branch as multipart, restore refused while running', async () => {
    const root = tempDir()
    const data = join(root, 'data')
    writeFileSync(join(root, 'config.edn'), `{:backup {:dir "${join(root, 'vault')}"}}\n`)
    s = await startServer(['--data-dir', data, '--http-port', '0', '--disable-redis', '--disable-sql', '--log-level', 'warn'], {cwd: root})
    const rest = `http://127.0.0.1:${s.ready.rest}`
    const post = (path: string, body: unknown): Promise<Response> => fetch(`${rest}${path}`, {body: JSON.stringify(body), headers: {'content-type': 'application/json'}, method: 'POST'})
    await fetch(`${rest}/api/v1/documents/a:1`, {body: '{"v": "alpha"}', method: 'PUT'})
    await post('/api/v1/branches', {name: 'feat'})
    await fetch(`${rest}/api/v1/documents/f:1?branch=feat`, {body: '{"v": "feature quokka"}', method: 'PUT'})

    for (const output of [join(root, 'outside.tar.gz'), '../outside.tar.gz', '/etc/svc.tar.gz']) {
      const res = await post('/api/v1/backup', {format: 'tar.gz', output})
      expect(res.status, output).to.equal(403)
      expect(((await res.json()) as {error: {message: string}}).error.message).to.include('outside the backup directory')
    }
    expect(existsSync(join(root, 'outside.tar.gz'))).to.equal(false)
    let res = await post('/api/v1/backup', {format: 'tar.gz', output: 'nightly/full.tar.gz'})
    expect(res.status).to.equal(201)
    const m = (await res.json()) as Manifest
    expect(m).to.include({path: join(root, 'vault', 'nightly', 'full.tar.gz'), type: 'full'})
    expect(m.refs.map((r) => r.name)).to.deep.equal(['refs/heads/feat', 'refs/heads/main'])
    res = await post('/api/v1/export', {output: 'feat.bundle', refs: ['feat']})
    expect(res.status).to.equal(201)
    const snap = (await res.json()) as Manifest
    expect(snap.refs.map((r) => r.name)).to.deep.equal(['refs/heads/feat'])
    res = await post('/api/v1/export', {output: 'nope.bundle', refs: ['nope']})
    expect(res.status).to.equal(404)

    // The branch goes away, then comes back from the snapshot, searchable once its index caught up.
    expect((await fetch(`${rest}/api/v1/branches/feat`, {method: 'DELETE'})).status).to.equal(200)
    const form = new FormData()
    form.set('file', new Blob([readFileSync(snap.path)]), 'feat.bundle')
    form.set('verify', 'true')
    res = await fetch(`${rest}/api/v1/import`, {body: form, method: 'POST'})
    expect(res.status).to.equal(200)
    const imported = (await res.json()) as {checksum: string; imported: Array<{name: string; previous: null | string}>}
    expect(imported.checksum).to.equal(snap.checksum)
    expect(imported.imported).to.deep.equal([{commit: snap.refs[0].commit, name: 'refs/heads/feat', previous: null}])
    // Its full-text index catches up in the background; until then a search says how far it got.
    let found: {hits: Array<{id: string}>; index?: {state: string}} = {hits: []}
    for (let i = 0; i < 300; i++) {
      found = (await (await fetch(`${rest}/api/v1/search?q=quokka&branch=feat`)).json()) as typeof found
      if (found.index === undefined) break
      expect(found.index.state).to.match(/building|catching-up/)
      await new Promise((r) => setTimeout(r, 100))
    }
    expect(found.hits.map((h) => h.id)).to.deep.equal(['f:1'])
    // The same snapshot again changes nothing; a file that is not a bundle is refused.
    res = await fetch(`${rest}/api/v1/import`, {body: form, method: 'POST'})
    expect(res.status).to.equal(200)
    const junk = new FormData()
    junk.set('file', new Blob(['not a bundle']), 'junk.bundle')
    res = await fetch(`${rest}/api/v1/import`, {body: junk, method: 'POST'})
    expect(res.status).to.equal(400)

    const up = new FormData()
    up.set('file', new Blob([readFileSync(m.path)]), 'full.tar.gz')
    res = await fetch(`${rest}/api/v1/restore`, {body: up, method: 'POST'})
    expect(res.status).to.equal(409)
    expect(((await res.json()) as {error: {message: string}}).error.message).to.include('stop the server')
    expect(((await (await fetch(`${rest}/api/v1/documents/a:1`)).json()) as {v: string}).v).to.equal('alpha')
    // server.json holds the ops token: only the data directory's owner may read it.
    expect(statSync(join(data, 'server.json')).mode & 0o777).to.equal(0o600)
    s.child.kill('SIGTERM')
    expect((await s.exited).code).to.equal(0)
    expect(existsSync(join(data, 'server.json'))).to.equal(false)
  })
})
