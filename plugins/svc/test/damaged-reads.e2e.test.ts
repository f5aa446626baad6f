import {expect} from 'chai'
import {type ChildProcessWithoutNullStreams, execFile, spawn} from 'node:child_process'
import {chmodSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {createInterface} from 'node:readline'
import {promisify} from 'node:util'
import {deflateSync} from 'node:zlib'

import pg from 'pg'

import {docPath, parseId} from '../src/engine/ids.js'
import {cliEnv, RUN_JS, startServer, type Started} from './helpers/cli.js'
import {cleanupTempDirs, gitOut, loseObject, tempDir} from './helpers/tmp.js'

const run = promisify(execFile)

// Issue 24, "damage is contained": one damaged document (its Git object missing, corrupt, or not
// JSON) must not fail a read of many documents on any protocol. Each protocol answers the good
// documents and names the damaged ones its own way.

/** Where a loose object lives (loseObject leaves every object of the repository loose). */
const objectFile = (repo: string, sha: string): string => join(repo, 'objects', sha.slice(0, 2), sha.slice(2))

/** Cuts a loose object's compressed bytes in half: git finds the header and then dies reading the body. */
function truncateObject(repo: string, sha: string): void {
  const f = objectFile(repo, sha)
  const bytes = readFileSync(f)
  rmSync(f)
  writeFileSync(f, bytes.subarray(0, bytes.length >> 1))
}

/** Replaces a loose object's content with bytes that are no JSON, keeping its name (as a bad copy would). */
function replaceObject(repo: string, sha: string, content: string): void {
  const f = objectFile(repo, sha)
  rmSync(f)
  writeFileSync(f, deflateSync(Buffer.concat([Buffer.from(`blob ${Buffer.byteLength(content)}\0`), Buffer.from(content)])))
  chmodSync(f, 0o444)
}

describe('svc: a damaged document fails alone in reads of many documents (built CLI, redis-cli, node-postgres, embed)', function () {
  this.timeout(120_000)
  const repoOf = (dir: string): string => join(dir, 'repo')
  const blobOf = (dir: string, id: string): string => gitOut(repoOf(dir), ['rev-parse', `main:${docPath(parseId(id))}`]).trim()
  let dir: string
  let blobs: Record<string, string>
  const running: Started[] = []
  afterEach(() => {
    for (const s of running.splice(0)) if (s.child.exitCode === null) s.child.kill('SIGKILL')
  })
  after(cleanupTempDirs)

  async function start(): Promise<{pg: number; redis: number; rest: number; s: Started}> {
    const s = await startServer(['--data-dir', dir, '--http-port', '0', '--redis-port', '0', '--pg-port', '0', '--log-level', 'error'])
    running.push(s)
    return {...(s.ready as {pg: number; redis: number; rest: number}), s}
  }

  async function stop(s: Started): Promise<void> {
    s.child.kill('SIGTERM')
    expect((await s.exited).code).to.equal(0)
  }

  before(async () => {
    // d:k1 and d:k5 stay good; d:k2 loses its object, d:k3's object is cut short, d:k4's holds no JSON.
    dir = tempDir()
    const {rest, s} = await start()
    for (const k of ['k1', 'k2', 'k3', 'k4', 'k5']) {
      // k3 is large enough that git streams it, so a cut object kills git mid-answer.
      const doc = {n: Number(k.slice(1)), pad: k === 'k3' ? 'x'.repeat(40_000).replaceAll('x', () => String.fromCodePoint(97 + Math.floor(Math.random() * 26))) : ''}
      const r = await fetch(`http://127.0.0.1:${rest}/api/v1/documents/d:${k}`, {body: JSON.stringify(doc), method: 'PUT'})
      expect(r.status).to.equal(200)
    }
    await stop(s)
    blobs = Object.fromEntries(['d:k2', 'd:k3', 'd:k4'].map((id) => [id, blobOf(dir, id)]))
    loseObject(repoOf(dir), blobs['d:k2'])
    truncateObject(repoOf(dir), blobs['d:k3'])
    replaceObject(repoOf(dir), blobs['d:k4'], 'not json {')
  })

  it('REST: each damaged document fails alone naming its object and what is wrong; the listing names all three under skipped', async () => {
    const {rest, s} = await start()
    const base = `http://127.0.0.1:${rest}/api/v1/documents`
    const reasons: Record<string, RegExp> = {'d:k2': /missing/, 'd:k3': /corrupt/, 'd:k4': /not valid JSON/}
    for (const [id, why] of Object.entries(reasons)) {
      const r = await fetch(`${base}/${id}`)
      expect(r.status, id).to.be.at.least(500)
      const body = (await r.json()) as {error: {code: string; message: string}}
      expect(body.error.code, id).to.equal('damaged')
      expect(body.error.message, id).to.include(id).and.include(blobs[id]).and.match(why)
    }
    expect(((await (await fetch(`${base}/d:k5`)).json()) as {n: number}).n).to.equal(5)
    const page = (await (await fetch(base)).json()) as {documents: Array<{id: string}>; skipped: Array<{id: string; object: string}>}
    expect(page.documents.map((d) => d.id)).to.deep.equal(['d:k1', 'd:k5'])
    expect(page.skipped.map((d) => d.id).sort()).to.deep.equal(['d:k2', 'd:k3', 'd:k4'])
    await stop(s)
  })

  it('Redis: MGET answers the good keys and nil for each damaged one, and the server logs which document is damaged', async () => {
    const {redis, s} = await start()
    const {stdout} = await run('redis-cli', ['-p', String(redis), '--no-raw', 'MGET', 'd:k1', 'd:k2', 'd:k3', 'd:k4', 'd:k5', 'd:none'])
    const lines = stdout.trim().split('\n')
    expect(lines).to.have.length(6)
    expect(lines[0]).to.include('\\"n\\":1')
    expect(lines.slice(1, 4).map((l) => l.replace(/^\d+\) /, ''))).to.deep.equal(['(nil)', '(nil)', '(nil)'])
    expect(lines[4]).to.include('\\"n\\":5')
    expect(lines[5]).to.match(/\(nil\)$/)
    // A single GET of a damaged key is an error naming it, not a silent nil.
    const one = await run('redis-cli', ['-p', String(redis), 'GET', 'd:k2'])
    expect(one.stdout).to.include('damaged').and.include(blobs['d:k2'])
    // The other clients' reads still work: git's reader survived the corrupt object.
    expect((await run('redis-cli', ['-p', String(redis), 'MGET', 'd:k1', 'd:k5'])).stdout.trim().split('\n')).to.have.length(2)
    await stop(s)
    for (const id of ['d:k2', 'd:k3', 'd:k4']) expect(s.stderr()).to.include(id).and.include(blobs[id])
  })

  it('SQL: a lookup by a list of ids returns the good rows and a NOTICE naming each damaged document; one id alone is an error naming it', async () => {
    const {pg: port, s} = await start()
    const client = new pg.Client({database: 'svc', host: '127.0.0.1', password: 'svc', port, user: 'svc'})
    const notices: string[] = []
    client.on('notice', (n) => notices.push(n.message ?? ''))
    client.on('error', () => {})
    await client.connect()
    try {
      await sqlChecks(client, notices)
    } finally {
      await client.end()
    }
    await stop(s)
  })

  async function sqlChecks(client: pg.Client, notices: string[]): Promise<void> {
    const inList = await client.query(`SELECT id, n FROM d WHERE id IN ('k1', 'k2', 'k3', 'k4', 'k5') ORDER BY id`)
    expect(inList.rows.map((r: {id: string}) => r.id)).to.deep.equal(['k1', 'k5'])
    for (const id of ['d:k2', 'd:k3', 'd:k4']) expect(notices.some((n) => n.includes(id) && n.includes(blobs[id])), `${id} in ${notices.join(' | ')}`).to.equal(true)
    notices.length = 0
    const params = await client.query('SELECT id FROM d WHERE id IN ($1, $2, $3) ORDER BY id', ['k1', 'k3', 'k5'])
    expect(params.rows.map((r: {id: string}) => r.id)).to.deep.equal(['k1', 'k5'])
    expect(notices.join(' ')).to.include('d:k3')
    const err = await client.query(`SELECT n FROM d WHERE id = 'k4'`).then(
      () => undefined,
      (error: {code?: string; message: string}) => error,
    )
    expect(err?.message).to.include('d:k4').and.include(blobs['d:k4'])
    // A whole-table scan and an = ANY array lookup skip the damaged documents and say so (issue 24).
    notices.length = 0
    expect((await client.query('SELECT count(*)::int AS c FROM d')).rows).to.deep.equal([{c: 2}])
    for (const id of ['d:k2', 'd:k3', 'd:k4']) expect(notices.some((n) => n.includes(id)), `${id} in ${notices.join(' | ')}`).to.equal(true)
    notices.length = 0
    expect((await client.query('SELECT id FROM d WHERE id = ANY($1) ORDER BY id', [['k1', 'k2', 'k5']])).rows.map((r: {id: string}) => r.id)).to.deep.equal(['k1', 'k5'])
    expect(notices.join(' ')).to.include('d:k2')
    // The connection stays usable.
    expect((await client.query('SELECT 1 AS one')).rows).to.deep.equal([{one: 1}])
  }

  it('embed: get_many answers the good documents, null for each damaged one, and an error per damaged id', async () => {
    const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [RUN_JS, 'svc', 'embed', '--data-dir', dir], {env: cliEnv()})
    const lines = createInterface({input: child.stdout})[Symbol.asyncIterator]()
    const next = async (): Promise<Record<string, unknown>> => JSON.parse((await lines.next()).value as string) as Record<string, unknown>
    expect((await next()).ready).to.equal(true)
    child.stdin.write(JSON.stringify({id: 1, op: 'get_many', params: {ids: ['d:k1', 'd:k2', 'd:k3', 'd:k4', 'd:k5', 'd:none']}}) + '\n')
    const reply = (await next()) as {errors: Array<{code: string; id: string; index: number; message: string}>; result: Array<{n: number} | null>}
    expect(reply.result.map((d) => d?.n ?? null)).to.deep.equal([1, null, null, null, 5, null])
    expect(reply.errors.map((e) => [e.index, e.id, e.code])).to.deep.equal([
      [1, 'd:k2', 'damaged'],
      [2, 'd:k3', 'damaged'],
      [3, 'd:k4', 'damaged'],
    ])
    for (const e of reply.errors) expect(e.message).to.include(blobs[e.id])
    child.stdin.end()
    expect(await new Promise((resolve) => child.on('exit', resolve))).to.equal(0)
  })
})
