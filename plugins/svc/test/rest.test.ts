import {expect} from 'chai'
import {request as httpRequest} from 'node:http'

import {type Engine, nullLogger, openEngine} from '../src/engine/index.js'
import type {RunningServer} from '../src/engine/types.js'
import {Health} from '../src/servers/health.js'
import {createMetrics} from '../src/servers/metrics.js'
import {startRestServer} from '../src/servers/rest/index.js'
import {cleanupTempDirs, tempDir} from './helpers/tmp.js'

interface Reply {
  body: string
  headers: Record<string, string | string[] | undefined>
  json: unknown
  status: number
}

describe('svc REST API', function () {
  let db: Engine
  let server: RunningServer
  let base: string

  const call = async (method: string, path: string, body?: string, headers: Record<string, string> = {}): Promise<Reply> => {
    const res = await fetch(`${base}${path}`, {body, headers: {'content-type': 'application/json', ...headers}, method})
    const text = await res.text()
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      json = undefined
    }
    return {body: text, headers: Object.fromEntries(res.headers), json, status: res.status}
  }

  before(async () => {
    db = await openEngine(tempDir(), {logger: nullLogger})
    const metrics = createMetrics(db)
    server = await startRestServer(
      {engine: db, logger: nullLogger, metrics: metrics.connections},
      {health: new Health(db, {startedAt: Date.now(), version: '9.9.9'}), host: '127.0.0.1', maxBodyBytes: 4096, metrics, port: 0},
    )
    base = `http://127.0.0.1:${server.port}`
  })
  after(async () => {
    await server.close()
    await db.close()
    cleanupTempDirs()
  })

  it('puts, gets, lists and deletes documents', async () => {
    let r = await call('PUT', '/api/v1/documents/users:1', JSON.stringify({name: 'Ada'}), {'x-request-id': 'req-42', 'x-svc-user': 'alice'})
    expect(r.status).to.equal(200)
    expect(r.json).to.deep.include({branch: 'main', id: 'users:1'})
    expect(r.headers['x-request-id']).to.equal('req-42')
    r = await call('POST', '/api/v1/documents', JSON.stringify({id: 'users:2', name: 'Bob'}))
    expect(r.status).to.equal(200)
    r = await call('GET', '/api/v1/documents/users%3A1')
    expect(r.json).to.deep.equal({id: 'users:1', name: 'Ada'})
    r = await call('GET', '/api/v1/documents?table=users&limit=1')
    expect(r.json).to.deep.equal({documents: [{id: 'users:1', name: 'Ada'}], nextCursor: 'users:1'})
    r = await call('GET', '/api/v1/documents?table=users&cursor=users:1')
    expect(r.json).to.deep.equal({documents: [{id: 'users:2', name: 'Bob'}]})
    r = await call('GET', '/api/v1/documents?table=users&order=desc&limit=1')
    expect(r.json).to.deep.equal({documents: [{id: 'users:2', name: 'Bob'}], nextCursor: 'users:2'})
    r = await call('GET', '/api/v1/documents?table=users&order=desc&cursor=users:2')
    expect(r.json).to.deep.equal({documents: [{id: 'users:1', name: 'Ada'}]})
    r = await call('GET', '/api/v1/documents?order=newest')
    expect(r.status).to.equal(400)
    expect(r.json).to.deep.include({error: {code: 'invalid_argument', message: 'order must be asc or desc, got "newest"'}})
    r = await call('GET', '/api/v1/tables')
    expect(r.json).to.deep.equal({tables: [{documents: 2, name: 'users'}]})
    r = await call('DELETE', '/api/v1/documents/users:2')
    expect(r.status).to.equal(200)
    expect(r.json).to.deep.include({existed: true, id: 'users:2'})
    expect((await call('GET', '/api/v1/documents/users:2')).status).to.equal(404)
    const h = (await call('GET', '/api/v1/documents/users:1/history')).json as {versions: Array<{meta: Record<string, string>}>}
    expect(h.versions[0].meta).to.deep.equal({origin: 'rest', requestId: 'req-42', user: 'alice'})
  })

  it('history, as-of, diff and the chrondb-style aliases', async () => {
    await call('PUT', '/api/v1/documents/notes:1', JSON.stringify({text: 'one'}))
    await call('PUT', '/api/v1/documents/notes:1', JSON.stringify({text: 'two'}))
    const h = (await call('GET', '/api/v1/documents/notes:1/history?limit=5')).json as {versions: Array<{commit: string; doc: {text: string}; time: string}>}
    expect(h.versions.map((v) => v.doc.text)).to.deep.equal(['two', 'one'])
    const old = h.versions[1]
    expect((await call('GET', `/api/v1/documents/notes:1/as-of?commit=${old.commit}`)).json).to.deep.equal({id: 'notes:1', text: 'one'})
    expect((await call('GET', `/api/v1/documents/notes:1/as-of?time=${encodeURIComponent(old.time)}`)).json).to.deep.equal({id: 'notes:1', text: 'one'})
    const d = (await call('GET', `/api/v1/documents/notes:1/diff?from=${old.commit}`)).json as {changes: unknown[]}
    expect(d.changes).to.deep.equal([{after: 'two', before: 'one', op: 'change', path: '/text'}])
    expect((await call('POST', '/api/v1/save', JSON.stringify({id: 'notes:2', text: 'x'}))).status).to.equal(200)
    expect((await call('GET', '/api/v1/get/notes:2')).json).to.deep.equal({id: 'notes:2', text: 'x'})
    expect(((await call('GET', '/api/v1/history/notes:1')).json as {versions: unknown[]}).versions).to.have.length(2)
    expect((await call('DELETE', '/api/v1/delete/notes:2')).status).to.equal(200)
  })

  it('lists a table as it stood at a commit or a time: later documents left out, deleted ones back, paged', async () => {
    await call('PUT', '/api/v1/documents/pets:a', JSON.stringify({name: 'Rex'}))
    await call('PUT', '/api/v1/documents/pets:b', JSON.stringify({name: 'Tom'}))
    await call('PUT', '/api/v1/documents/pets:c', JSON.stringify({name: 'Kit'}))
    const then = ((await call('GET', '/api/v1/documents/pets:c/history')).json as {versions: Array<{commit: string; time: string}>}).versions[0]
    await call('PUT', '/api/v1/documents/pets:a', JSON.stringify({name: 'Rex II'}))
    await call('DELETE', '/api/v1/documents/pets:b')
    await call('PUT', '/api/v1/documents/pets:d', JSON.stringify({name: 'New'}))
    expect((await call('GET', '/api/v1/documents?table=pets')).json).to.deep.equal({
      documents: [{id: 'pets:a', name: 'Rex II'}, {id: 'pets:c', name: 'Kit'}, {id: 'pets:d', name: 'New'}],
    })
    const asThen = {documents: [{id: 'pets:a', name: 'Rex'}, {id: 'pets:b', name: 'Tom'}, {id: 'pets:c', name: 'Kit'}]}
    expect((await call('GET', `/api/v1/documents?table=pets&commit=${then.commit}`)).json).to.deep.equal(asThen)
    expect((await call('GET', `/api/v1/documents?table=pets&time=${encodeURIComponent(then.time)}`)).json).to.deep.equal(asThen)
    const first = (await call('GET', `/api/v1/documents?table=pets&commit=${then.commit}&limit=2`)).json as {documents: Array<{id: string}>; nextCursor: string}
    expect(first.documents.map((d) => d.id)).to.deep.equal(['pets:a', 'pets:b'])
    const second = (await call('GET', `/api/v1/documents?table=pets&commit=${then.commit}&cursor=${first.nextCursor}`)).json
    expect(second).to.deep.equal({documents: [{id: 'pets:c', name: 'Kit'}]})
    expect((await call('GET', '/api/v1/documents?table=pets&time=2000-01-01T00:00:00Z')).json).to.deep.equal({documents: []})
    const bad = await call('GET', '/api/v1/documents?table=pets&time=yesterday')
    expect([bad.status, (bad.json as {error: {code: string}}).error.code]).to.deep.equal([400, 'invalid_argument'])
    const unknown = await call('GET', `/api/v1/documents?table=pets&commit=${'0'.repeat(40)}`)
    expect(unknown.status).to.equal(404)
    // The current listing is untouched by the as-of ones.
    expect(((await call('GET', '/api/v1/documents?table=pets')).json as {documents: unknown[]}).documents).to.have.length(3)
  })

  it('searches and manages branches', async () => {
    await call('PUT', '/api/v1/documents/s:1', JSON.stringify({text: 'the quick brown fox'}))
    await db.reindex()
    const s = (await call('GET', '/api/v1/search?q=quick&limit=5')).json as {hits: Array<{id: string}>; total: number}
    expect(s.total).to.equal(1)
    expect(s.hits[0].id).to.equal('s:1')
    let r = await call('POST', '/api/v1/branches', JSON.stringify({from: 'main', name: 'feature'}))
    expect(r.status).to.equal(201)
    expect((r.json as {head: string}).head).to.match(/^[0-9a-f]{40}$/)
    await call('PUT', '/api/v1/documents/s:1?branch=feature', JSON.stringify({text: 'changed on feature'}))
    expect((await call('GET', '/api/v1/documents/s:1')).json).to.deep.include({text: 'the quick brown fox'})
    expect((await call('GET', '/api/v1/documents/s:1?branch=feature')).json).to.deep.include({text: 'changed on feature'})
    r = await call('GET', '/api/v1/branches')
    expect((r.json as {branches: Array<{name: string}>}).branches.map((b) => b.name)).to.deep.equal(['feature', 'main'])
    expect((await call('DELETE', '/api/v1/branches/feature')).status).to.equal(200)
    expect((await call('GET', '/api/v1/documents/s:1?branch=feature')).status).to.equal(404)
  })

  it('answers bad requests with {"error": {code, message}} and the right status', async () => {
    const cases: Array<[string, string, string | undefined, number, string]> = [
      ['PUT', '/api/v1/documents/x:1', '{"a":', 400, 'invalid_json'],
      ['PUT', '/api/v1/documents/x:1', '', 400, 'invalid_json'],
      ['PUT', '/api/v1/documents/x:1', '[1,2]', 400, 'invalid_document'],
      ['PUT', '/api/v1/documents/x:1', '{"id":"x:2"}', 400, 'invalid_id'],
      ['POST', '/api/v1/documents', '{"a":1}', 400, 'invalid_id'],
      ['PUT', '/api/v1/documents/bad%20table:1', '{}', 400, 'invalid_id'],
      ['GET', '/api/v1/documents/%E0%A4%A', undefined, 400, 'invalid_id'],
      ['PUT', '/api/v1/documents/x:1', JSON.stringify({big: 'y'.repeat(5000)}), 413, 'too_large'],
      ['GET', '/api/v1/documents/x:nope', undefined, 404, 'not_found'],
      ['GET', '/api/v1/documents/x:1?branch=nope', undefined, 404, 'branch_not_found'],
      ['GET', '/api/v1/nothing', undefined, 404, 'not_found'],
      ['PATCH', '/api/v1/documents/x:1', '{}', 405, 'method_not_allowed'],
      ['GET', '/api/v1/search', undefined, 400, 'invalid_argument'],
      ['GET', '/api/v1/documents?limit=abc', undefined, 400, 'invalid_argument'],
      ['GET', '/api/v1/documents/x:1/as-of', undefined, 400, 'invalid_argument'],
      ['GET', '/api/v1/documents/x:1/diff?from=not-a-commit', undefined, 400, 'invalid_argument'],
      ['POST', '/api/v1/branches', '{"name":"main"}', 409, 'branch_exists'],
      ['POST', '/api/v1/branches', '{"name":"a b"}', 400, 'invalid_argument'],
      ['DELETE', '/api/v1/branches/main', undefined, 400, 'invalid_argument'],
      ['PUT', '/api/v1/documents/x:1', '{"n":9007199254740993}', 400, 'inexact_number'],
      ['PUT', '/api/v1/documents/x:1', '{"a":[1e400]}', 400, 'inexact_number'],
      ['PUT', '/api/v1/documents/x:1', `{"a":${'['.repeat(200)}${']'.repeat(200)}}`, 400, 'too_deep'],
      ['POST', '/api/v1/search', '{}', 405, 'method_not_allowed'],
    ]
    for (const [method, path, body, status, code] of cases) {
      const r = await call(method, path, body)
      expect(r.status, `${method} ${path}`).to.equal(status)
      const e = (r.json as {error: {code: string; message: string}}).error
      expect(e.code, `${method} ${path}`).to.equal(code)
      expect(e.message).to.be.a('string').and.not.empty
    }
    const head = await fetch(`${base}/api/v1/documents/users:1`, {method: 'HEAD'})
    expect(head.status).to.equal(200)
    const post = await call('POST', '/api/v1/tables', '{}')
    expect(post.headers.allow).to.equal('GET, HEAD')
    // Numbers a double holds exactly, written in any form, are accepted.
    expect((await call('PUT', '/api/v1/documents/x:n', '{"a":1.0,"b":1e2,"c":-0,"d":0.000001,"e":123456789012345,"f":4.5e15,"g":1.7976931348623157e308}')).status).to.equal(200)
    expect((await call('GET', '/api/v1/documents/x:n')).json).to.deep.equal({a: 1, b: 100, c: 0, d: 0.000_001, e: 123_456_789_012_345, f: 4.5e15, g: 1.797_693_134_862_315_7e308, id: 'x:n'})
    // Still serving, nothing lost.
    expect((await call('GET', '/api/v1/documents/users:1')).status).to.equal(200)
  })

  it('lets a client that is still sending a refused body read its 413 (no reset), on a connection that stays usable', async () => {
    const body = JSON.stringify({big: 'y'.repeat(3 * 1024 * 1024)})
    for (let i = 0; i < 5; i++) {
      const r = await fetch(`${base}/api/v1/documents/x:huge`, {body, headers: {'content-type': 'application/json'}, method: 'PUT'})
      expect(r.status).to.equal(413)
      expect(((await r.json()) as {error: {code: string}}).error.code).to.equal('too_large')
    }
    expect((await call('PUT', '/api/v1/documents/x:after', '{"ok":true}')).status).to.equal(200)
    expect((await call('GET', '/api/v1/documents/x:after')).json).to.deep.equal({id: 'x:after', ok: true})
  })

  it('refuses a streamed body without Content-Length once it passes the limit, and keeps serving', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${base}/api/v1/documents/x:chunked`, {headers: {'content-type': 'application/json'}, method: 'PUT'}, (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      })
      req.on('error', reject)
      // Chunked: the server learns the size only while reading.
      req.write(`{"big": "${'y'.repeat(3000)}`)
      req.end(`${'y'.repeat(3000)}"}`)
    })
    expect(status).to.equal(413)
    expect((await call('GET', '/api/v1/documents/x:chunked')).status).to.equal(404)
    expect((await call('GET', '/healthz')).status).to.equal(200)
  })

  it('answers a malformed HTTP request with 400 and keeps serving', async () => {
    const net = await import('node:net')
    const reply = await new Promise<string>((resolve) => {
      const s = net.connect(server.port, '127.0.0.1', () => s.write('NOT HTTP\r\n\r\n'))
      let data = ''
      s.on('data', (d) => (data += d.toString()))
      s.on('close', () => resolve(data))
    })
    expect(reply).to.match(/^HTTP\/1.1 400/)
    expect((await call('GET', '/healthz')).status).to.equal(200)
  })

  it('serves health records, checks and Prometheus metrics', async () => {
    const h = await call('GET', '/api/v1/health')
    expect(h.status).to.equal(200)
    const rec = h.json as {memory: {total: string; used: string}; status: string; storage: {documents: number; size: string}; uptime: string; version: string}
    expect(rec.status).to.equal('ok')
    expect(rec.version).to.equal('9.9.9')
    expect(rec.uptime).to.match(/^\d+s$|m|h/)
    expect(rec.memory.used).to.match(/^[\d.]+ (B|KB|MB|GB)$/)
    expect(rec.storage.size).to.match(/^[\d.]+ (B|KB|MB|GB)$/)
    expect(rec.storage.documents).to.equal(await db.count())
    const c = await call('GET', '/health')
    const checks = (c.json as {checks: Array<Record<string, unknown>>; status: string}).checks
    expect(checks.map((x) => x.component)).to.include.members(['memory', 'wal', 'disk', 'index'])
    expect(checks.find((x) => x.component === 'wal')).to.have.property('pending-entries').that.is.a('number')
    expect((await call('GET', '/healthz')).body).to.equal('ok\n')
    const m = await call('GET', '/metrics')
    expect(m.headers['content-type']).to.include('text/plain')
    for (const name of ['svc_wal_pending_entries', 'svc_index_documents{branch="main"}', 'svc_active_connections{protocol="rest"}', 'svc_http_requests_total{', 'svc_http_request_duration_seconds_bucket{']) {
      expect(m.body).to.include(name)
    }
    const active = /svc_active_connections\{protocol="rest"\} (\d+)/.exec(m.body)
    expect(Number(active?.[1])).to.be.greaterThan(0)
  })

  it('answers 503 on /health and /api/v1/health when a check is critical', async () => {
    const metrics = createMetrics(db)
    // A memory limit far below the process's RSS makes the memory check critical.
    const tight = await startRestServer(
      {engine: db, logger: nullLogger, metrics: metrics.connections},
      {health: new Health(db, {memoryLimitMb: 1, startedAt: Date.now(), version: '9.9.9'}), host: '127.0.0.1', metrics, port: 0},
    )
    try {
      const h = await fetch(`http://127.0.0.1:${tight.port}/health`)
      expect(h.status).to.equal(503)
      const body = (await h.json()) as {checks: Array<{component: string; status: string}>; status: string}
      expect(body.status).to.equal('unhealthy')
      expect(body.checks.find((c) => c.component === 'memory')?.status).to.equal('critical')
      const r = await fetch(`http://127.0.0.1:${tight.port}/api/v1/health`)
      expect(r.status).to.equal(503)
      expect(((await r.json()) as {status: string}).status).to.equal('unhealthy')
    } finally {
      await tight.close()
    }
  })

  it('keeps a connection alive across requests', async () => {
    const agent = new (await import('node:http')).Agent({keepAlive: true, maxSockets: 1})
    const ports: number[] = []
    for (let i = 0; i < 3; i++) {
      await new Promise<void>((resolve, reject) => {
        const req = httpRequest(`${base}/api/v1/documents/users:1`, {agent}, (res) => {
          ports.push(res.socket.localPort ?? 0)
          res.resume()
          res.on('end', () => resolve())
        })
        req.on('error', reject)
        req.end()
      })
    }
    agent.destroy()
    expect(new Set(ports).size).to.equal(1)
  })
})
