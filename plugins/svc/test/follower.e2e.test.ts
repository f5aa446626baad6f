import {expect} from 'chai'
import {execFileSync} from 'node:child_process'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {Redis} from 'ioredis'
import pg from 'pg'

import {runCli, startServer, type Started} from './helpers/cli.js'
import {cleanupTempDirs, gitOut, tempDir} from './helpers/tmp.js'

async function until(what: () => Promise<boolean> | boolean, ms: number, label: string): Promise<void> {
  const end = Date.now() + ms
  while (!(await what())) {
    if (Date.now() > end) throw new Error(`${label}: not reached in time`)
    await new Promise((r) => setTimeout(r, 250))
  }
}

interface HealthCheck {
  component: string
  follow?: {failures: number; heads: Record<string, string>; lag: number; lastError?: string; lastFetchAt?: string; remote: string}
  remotes?: Array<{lastPushAt?: string; remote: string}>
  status: string
}

// A leader replicates (config.edn :remotes) to a real bare Git repository; a second server on
// loopback follows that repository read-only. Both are the built CLI; clients are real.
describe('toolkit svc server --follow (read-only follower, built CLI)', function () {
  this.timeout(300_000)
  const started: Started[] = []
  let io: Redis | undefined
  let sql: pg.Client | undefined

  after(async () => {
    io?.disconnect()
    await sql?.end().catch(() => {})
    // A clean stop: a killed server's git fast-import may still be writing while the directory is removed.
    for (const s of started) {
      if (s.child.exitCode !== null) continue
      s.child.kill('SIGTERM')
      await s.exited
    }
    cleanupTempDirs()
  })

  it('serves what the leader pushed over REST, Redis and PostgreSQL, refuses writes on every protocol, and follows updates, deletes and branch removal', async () => {
    const root = tempDir()
    const hub = join(root, 'hub.git')
    execFileSync('git', ['init', '--bare', '-q', hub])
    writeFileSync(join(root, 'config.edn'), `{:data-dir "leader" :remotes {:hub "${hub}"}}\n`)
    const leader = await startServer(['--http-port', '0', '--disable-redis', '--disable-sql', '--log-level', 'warn'], {cwd: root})
    started.push(leader)
    const L = `http://127.0.0.1:${leader.ready.rest}`
    for (let i = 0; i < 30; i++) expect((await fetch(`${L}/api/v1/documents/t:${i}`, {body: JSON.stringify({n: i, text: `walrus number ${i}`}), method: 'PUT'})).ok).to.equal(true)
    expect((await fetch(`${L}/api/v1/branches`, {body: '{"name": "dev"}', headers: {'content-type': 'application/json'}, method: 'POST'})).ok).to.equal(true)
    expect((await fetch(`${L}/api/v1/documents/d:1?branch=dev`, {body: '{"text": "dev narwhal"}', method: 'PUT'})).ok).to.equal(true)
    // The config's remote is a plain Git remote of the leader's repository, and it receives every branch.
    expect(gitOut(join(root, 'leader', 'repo'), ['remote', '-v'])).to.include(hub)
    await until(() => gitOut(hub, ['for-each-ref', '--format=%(refname)']).includes('refs/heads/dev') && gitOut(hub, ['rev-parse', 'main']).trim() === gitOut(join(root, 'leader', 'repo'), ['rev-parse', 'main']).trim(), 60_000, 'leader pushed to the hub')

    const follower = await startServer(['--data-dir', join(root, 'follower'), '--follow', hub, '--http-port', '0', '--redis-port', '0', '--pg-port', '0', '--log-level', 'warn'])
    started.push(follower)
    const F = `http://127.0.0.1:${follower.ready.rest}`
    await until(async () => (await fetch(`${F}/api/v1/documents/t:29`)).status === 200, 60_000, 'follower fetched main')
    expect(await (await fetch(`${F}/api/v1/documents/t:7`)).json()).to.deep.equal({id: 't:7', n: 7, text: 'walrus number 7'})
    expect(((await (await fetch(`${F}/api/v1/documents/d:1?branch=dev`)).json()) as {text: string}).text).to.equal('dev narwhal')
    await until(async () => {
      const r = await fetch(`${F}/api/v1/search?q=walrus&limit=100`)
      return r.ok && ((await r.json()) as {total: number}).total === 30
    }, 60_000, 'follower indexed what it fetched')

    io = new Redis({lazyConnect: true, maxRetriesPerRequest: 0, port: Number(follower.ready.redis)})
    await io.connect()
    expect(await io.hget('t:3', 'text')).to.equal('walrus number 3')
    sql = new pg.Client({host: '127.0.0.1', password: 'svc', port: Number(follower.ready.pg), user: 'svc'})
    await sql.connect()
    expect((await sql.query('SELECT count(*) AS n FROM t')).rows[0].n).to.equal('30')

    // Writes are refused on every protocol, with the follower's reason; nothing changes.
    const put = await fetch(`${F}/api/v1/documents/t:1`, {body: '{"x": 1}', method: 'PUT'})
    expect(put.status).to.equal(403)
    const refusal = ((await put.json()) as {error: {code: string; message: string}}).error
    expect(refusal.code).to.equal('read_only')
    expect(refusal.message).to.include('read-only follower')
    expect((await fetch(`${F}/api/v1/branches`, {body: '{"name": "x"}', headers: {'content-type': 'application/json'}, method: 'POST'})).status).to.equal(403)
    let redisError = ''
    await io.hset('t:1', 'x', '1').catch((error: Error) => (redisError = error.message))
    expect(redisError).to.include('READONLY')
    let sqlState = ''
    await sql.query("INSERT INTO t (id, text) VALUES ('t:99', 'no')").catch((error: {code: string}) => (sqlState = error.code))
    expect(sqlState).to.equal('25006')
    expect((await fetch(`${F}/api/v1/documents/t:99`)).status).to.equal(404)

    // The leader moves on: an update, a delete, a new document, a removed branch.
    await fetch(`${L}/api/v1/documents/t:7`, {body: '{"n": 7, "text": "walrus seven rewritten quokka"}', method: 'PUT'})
    await fetch(`${L}/api/v1/documents/t:8`, {method: 'DELETE'})
    await fetch(`${L}/api/v1/documents/t:100`, {body: '{"text": "new on the leader"}', method: 'PUT'})
    expect((await fetch(`${L}/api/v1/branches/dev`, {method: 'DELETE'})).ok).to.equal(true)
    await until(async () => (await fetch(`${F}/api/v1/documents/t:100`)).status === 200, 60_000, 'follower caught up')
    expect(((await (await fetch(`${F}/api/v1/documents/t:7`)).json()) as {text: string}).text).to.equal('walrus seven rewritten quokka')
    expect((await fetch(`${F}/api/v1/documents/t:8`)).status).to.equal(404)
    await until(async () => {
      const r = await fetch(`${F}/api/v1/search?q=quokka`)
      return r.ok && ((await r.json()) as {hits: Array<{id: string}>}).hits.map((h) => h.id).join() === 't:7'
    }, 60_000, 'follower reindexed the update')
    await until(async () => !JSON.stringify(await (await fetch(`${F}/api/v1/branches`)).json()).includes('"dev"'), 60_000, 'follower dropped the removed branch')
    expect(gitOut(join(root, 'follower', 'repo'), ['rev-parse', 'main']).trim()).to.equal(gitOut(join(root, 'leader', 'repo'), ['rev-parse', 'main']).trim())

    // Sync status: the follower's /health has a follow check, the leader's a replication check.
    const fh = ((await (await fetch(`${F}/health`)).json()) as {checks: HealthCheck[]}).checks.find((c) => c.component === 'follow')!
    expect(fh.status).to.equal('ok')
    expect(fh.follow).to.include({failures: 0, lag: 0, remote: hub})
    expect(fh.follow!.lastFetchAt).to.be.a('string')
    const lh = ((await (await fetch(`${L}/health`)).json()) as {checks: HealthCheck[]}).checks.find((c) => c.component === 'replication')!
    expect(lh.remotes![0].remote).to.equal('hub')
    expect(lh.remotes![0].lastPushAt).to.be.a('string')

    // diagnose reads the state the servers recorded: last push / last fetch, lag, errors.
    const diag = await runCli(['svc', 'diagnose', '--data-dir', join(root, 'follower'), '--no-fsck', '--format', 'json'], {timeoutMs: 60_000})
    const replication = diag.stdout.trim().split('\n').map((l) => JSON.parse(l) as {check: string; message: string; status: string}).find((c) => c.check === 'replication')
    expect(replication, diag.stdout).to.not.equal(undefined)
    expect(replication!.message).to.include('follows')
    expect(replication!.message).to.include('last fetch')
  })

  it('carries the leader\'s secondary indexes: built from what it pulls, kept in step with updates and deletes, dropped when the leader drops them', async () => {
    const root = tempDir()
    const hub = join(root, 'hub.git')
    execFileSync('git', ['init', '--bare', '-q', hub])
    writeFileSync(join(root, 'config.edn'), `{:data-dir "leader" :remotes {:hub "${hub}"}}\n`)
    const leader = await startServer(['--http-port', '0', '--pg-port', '0', '--disable-redis', '--log-level', 'warn'], {cwd: root})
    started.push(leader)
    const lsql = new pg.Client({host: '127.0.0.1', password: 'svc', port: Number(leader.ready.pg), user: 'svc'})
    await lsql.connect()
    const fsql = {client: undefined as pg.Client | undefined}
    try {
      for (let i = 0; i < 20; i++) await lsql.query('INSERT INTO pets (id, kind) VALUES ($1, $2)', [`pets:${i}`, i % 2 === 0 ? 'cat' : 'dog'])
      await lsql.query('CREATE INDEX pets_kind ON pets (kind)')
      const follower = await startServer(['--data-dir', join(root, 'follower'), '--follow', hub, '--http-port', '0', '--pg-port', '0', '--disable-redis', '--log-level', 'warn'])
      started.push(follower)
      fsql.client = new pg.Client({host: '127.0.0.1', password: 'svc', port: Number(follower.ready.pg), user: 'svc'})
      await fsql.client.connect()
      const f = fsql.client
      const ids = async (kind: string): Promise<string> => (await f.query('SELECT id FROM pets WHERE kind = $1 ORDER BY id', [kind])).rows.map((r: {id: string}) => r.id).join(',')
      const plan = async (): Promise<string> => (await f.query("EXPLAIN SELECT id FROM pets WHERE kind = 'cat'")).rows.map((r: Record<string, string>) => Object.values(r).join(' ')).join('\n')
      // The leader publishes its index definitions at once but its documents at its next
      // checkpoint: a follower may build the index over an older commit first, and catches up.
      // (The table is unknown until the first pull: an error, and the wait goes on.)
      const pulled = async (): Promise<number> => Number((await f.query('SELECT count(*) AS n FROM pets')).rows[0].n)
      await until(async () => (await pulled().catch(() => 0)) === 20, 60_000, 'follower pulled the leader\'s 20 documents')
      await until(async () => (await plan()).includes('Index Lookup using pets_kind'), 60_000, 'follower built the leader\'s index')
      expect((await ids('cat')).split(',')).to.have.length(10)
      // What psql users and tools list: the follower's catalog names the leader's index.
      expect((await f.query("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'pets' ORDER BY indexname")).rows).to.deep.equal([
        {indexdef: 'CREATE INDEX pets_kind ON public.pets USING btree (kind)', indexname: 'pets_kind'},
        {indexdef: 'CREATE UNIQUE INDEX pets_pkey ON public.pets USING btree (id)', indexname: 'pets_pkey'},
      ])

      // The leader rewrites, deletes and adds: the follower's index answers with the new values.
      await lsql.query("UPDATE pets SET kind = 'dog' WHERE id = 'pets:0'")
      await lsql.query("DELETE FROM pets WHERE id = 'pets:2'")
      await lsql.query("INSERT INTO pets (id, kind) VALUES ('pets:50', 'cat')")
      await until(async () => (await f.query("SELECT count(*) AS n FROM pets WHERE id = 'pets:50'")).rows[0].n === '1', 60_000, 'follower pulled the changes')
      expect(await plan()).to.include('Index Lookup using pets_kind')
      const cats = (await ids('cat')).split(',')
      expect(cats).to.include('pets:50').and.not.include('pets:0').and.not.include('pets:2')
      expect(cats).to.have.length(9)
      expect((await ids('dog')).split(',')).to.include('pets:0').and.have.length(11)

      await lsql.query('DROP INDEX pets_kind')
      await until(async () => !(await plan()).includes('Index Lookup'), 60_000, 'follower dropped the index')
      expect((await ids('cat')).split(',')).to.have.length(9)
    } finally {
      await lsql.end().catch(() => {})
      await fsql.client?.end().catch(() => {})
    }
  })

  it('refuses bad :remotes in config.edn with the key and what it must be', async () => {
    for (const [edn, message] of [
      ['{:remotes {:hub 42}}', ':remotes :hub must be a Git URL string'],
      ['{:remotes ["/srv/git/a.git"]}', ':remotes must be a map of remote name to Git URL'],
      ['{:remotes {"bad name" "/srv/git/a.git"}}', 'invalid remote name'],
    ]) {
      const root = tempDir()
      writeFileSync(join(root, 'config.edn'), `${edn}\n`)
      const r = await runCli(['svc', 'server', '--data-dir', join(root, 'data'), '--http-port', '0', '--disable-redis', '--disable-sql'], {cwd: root, timeoutMs: 60_000})
      expect(r.code, `${edn}: ${r.stderr}`).to.equal(2)
      expect(r.stderr, edn).to.include(message)
    }
  })

  it('refuses a --follow name that is neither a remote nor a URL, before listening', async () => {
    const r = await runCli(['svc', 'server', '--data-dir', join(tempDir(), 'f'), '--follow', 'nowhere', '--http-port', '0', '--disable-redis', '--disable-sql'], {timeoutMs: 60_000})
    expect(r.code).to.equal(2)
    expect(r.stderr).to.include('--follow nowhere: no remote of that name')
  })
})
