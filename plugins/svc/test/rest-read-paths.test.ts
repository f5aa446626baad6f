import {expect} from 'chai'

import {type Engine, nullLogger, openEngine} from '../src/engine/index.js'
import type {RunningServer} from '../src/engine/types.js'
import {Health} from '../src/servers/health.js'
import {createMetrics} from '../src/servers/metrics.js'
import {startRestServer} from '../src/servers/rest/index.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'

interface Answer {
  body: Buffer
  headers: Record<string, string>
  status: number
}

/**
 * A GET by id answers a document held in memory in the same turn (no promise), and one that must
 * be read from Git through a promise: the two paths must give the same bytes. Two servers hold the
 * same documents, one with the default blob cache (every read below is answered at once), one with
 * no cache at all (every read goes to Git); each request is sent to both over real HTTP.
 */
describe('svc REST GET by id: in-memory and Git paths answer alike', function () {
  const sides: Array<{base: string; db: Engine; server: RunningServer}> = []

  const ask = async (base: string, method: string, path: string): Promise<Answer> => {
    const res = await fetch(`${base}${path}`, {method})
    const headers = Object.fromEntries(res.headers)
    // The only header that may differ: the second it was sent in.
    delete headers.date
    return {body: Buffer.from(await res.arrayBuffer()), headers, status: res.status}
  }

  before(async () => {
    for (const cacheBytes of [undefined, 0]) {
      const db = await openEngine(tempDir(), {cacheBytes, logger: nullLogger})
      await db.put({id: 'users:1', name: 'Ada', nested: {list: [1, 2.5, 'x'], ok: true}})
      await db.put({id: 'users:2', note: 'ünïcödé ✓ 𝄞', text: 'x'.repeat(70_000)})
      await db.put({id: 'users:a b', name: 'space'})
      await db.createBranch('dev')
      await db.put({id: 'users:1', name: 'Ada on dev'}, {branch: 'dev'})
      await db.flush()
      const metrics = createMetrics(db)
      const server = await startRestServer(
        {engine: db, logger: nullLogger, metrics: metrics.connections},
        {health: new Health(db, {startedAt: Date.now(), version: '9.9.9'}), host: '127.0.0.1', metrics, port: 0},
      )
      sides.push({base: `http://127.0.0.1:${server.port}`, db, server})
    }
  })
  after(async () => {
    for (const s of sides) {
      await s.server.close()
      await s.db.close()
    }
    cleanupTempDirs()
  })

  it('has one server reading from memory and one from Git', () => {
    const [memory, git] = sides
    for (const [id, branch] of [['users:1', undefined], ['users:2', undefined], ['users:1', 'dev']]) {
      expect(memory.db.getRawIfCached(id as string, {branch})).to.be.instanceOf(Buffer)
      expect(git.db.getRawIfCached(id as string, {branch})).to.equal(false)
    }
  })

  const requests: Array<[string, string]> = [
    ['GET', '/api/v1/documents/users:1'],
    ['GET', '/api/v1/documents/users%3A1'],
    ['GET', '/api/v1/get/users:1'],
    ['HEAD', '/api/v1/documents/users:1'],
    ['GET', '/api/v1/documents/users:2'],
    ['GET', '/api/v1/documents/users:a%20b'],
    ['GET', '/api/v1/documents/users:1?branch=dev'],
    ['GET', '/api/v1/documents/users:2?branch=dev&x=1'],
    ['GET', '/api/v1/documents/users:404'],
    ['GET', '/api/v1/documents/users:404?branch=dev'],
    ['GET', '/api/v1/documents/users:1?branch=nope'],
    ['GET', '/api/v1/documents/no-table'],
    ['GET', '/api/v1/documents/users%E0%A4%A'],
    ['POST', '/api/v1/documents/users:1'],
    ['GET', '/api/v1/documents/users:1/nothing'],
    ['GET', '/nowhere'],
  ]
  for (const [method, path] of requests) {
    it(`${method} ${path}`, async () => {
      const [a, b] = await Promise.all(sides.map((s) => ask(s.base, method, path)))
      expect(a.status, 'status').to.equal(b.status)
      expect(a.headers, 'headers').to.deep.equal(b.headers)
      expect(a.body.equals(b.body), `body: ${a.body.toString().slice(0, 200)} / ${b.body.toString().slice(0, 200)}`).to.equal(true)
      if (a.status === 200 && method === 'GET') {
        // The stored bytes, unchanged.
        const id = decodeURIComponent(path.split('?')[0].split('/').at(-1) as string)
        const branch = new URLSearchParams(path.split('?')[1] ?? '').get('branch') ?? undefined
        expect(a.body.equals((await sides[1].db.getRaw(id, {branch})) as Buffer)).to.equal(true)
      }
    })
  }

  it('answers the same after many reads on one keep-alive connection, and counts them in /metrics', async () => {
    for (let i = 0; i < 50; i++) {
      const [a, b] = await Promise.all(sides.map((s) => ask(s.base, 'GET', `/api/v1/documents/users:${(i % 3) + 1}`)))
      expect(a.status).to.equal(b.status)
      expect(a.body.equals(b.body)).to.equal(true)
    }
    const text = (await ask(sides[0].base, 'GET', '/metrics')).body.toString()
    expect(text).to.match(/svc_http_requests_total\{method="GET",route="\/api\/v1\/documents\/:id",status="200"\} \d+/)
    expect(text).to.match(/svc_http_request_duration_seconds_count\{method="GET",route="\/api\/v1\/documents\/:id"\} \d+/)
  })
})
