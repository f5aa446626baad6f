import {type ChildProcessWithoutNullStreams, execFileSync, spawn} from 'node:child_process'
import {createInterface} from 'node:readline'

import {expect} from 'chai'

import {cliEnv, RUN_JS} from './helpers/cli.js'
import {tempDir} from './helpers/tmp.js'

type Reply = {error?: {code: string; message: string}; id: unknown; result?: unknown}

/** A `toolkit svc embed` child driven the way a binding drives it. */
class Embedded {
  readonly exited: Promise<null | number>
  private readonly lines: AsyncIterator<string>

  constructor(readonly child: ChildProcessWithoutNullStreams) {
    this.lines = createInterface({input: child.stdout})[Symbol.asyncIterator]()
    this.exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)))
  }

  static start(dataDir: string): Embedded {
    return new Embedded(spawn(process.execPath, [RUN_JS, 'svc', 'embed', '--data-dir', dataDir], {env: cliEnv()}))
  }

  async next(): Promise<Record<string, unknown>> {
    return JSON.parse(await this.nextLine()) as Record<string, unknown>
  }

  async nextLine(): Promise<string> {
    const r = await this.lines.next()
    if (r.done) throw new Error('svc embed closed its output')
    return r.value
  }

  send(...requests: unknown[]): void {
    for (const r of requests) this.child.stdin.write((typeof r === 'string' ? r : JSON.stringify(r)) + '\n')
  }

  /** Sends the requests at once (pipelined) and returns the answers by id. */
  async call(...requests: Array<{id: number | string; op: string; params?: unknown}>): Promise<Map<unknown, Reply>> {
    this.send(...requests)
    const answers = new Map<unknown, Reply>()
    while (answers.size < requests.length) {
      const reply = (await this.next()) as Reply
      answers.set(reply.id, reply)
    }
    return answers
  }

  async close(): Promise<null | number> {
    this.child.stdin.end()
    return this.exited
  }
}

describe('svc embed: the line protocol the language bindings speak', function () {
  this.timeout(60_000)

  it('says it is ready, keeps pipelined requests in order, answers errors by id, and commits to Git on exit', async () => {
    const dataDir = tempDir('svc-embed-')
    const db = Embedded.start(dataDir)
    const ready = await db.next()
    expect(ready).to.include({protocol: 1, ready: true})
    expect(ready.pid).to.be.a('number')

    // A put then a get of the same id sent without waiting: the get sees the put.
    const a = await db.call(
      {id: 1, op: 'put', params: {doc: {name: 'Ada', city: 'Oslo'}, id: 'users:1'}},
      {id: 2, op: 'get', params: {id: 'users:1'}},
      {id: 3, op: 'put', params: {doc: {id: 'users:1', name: 'Ada L.'}}},
      {id: 4, op: 'history', params: {id: 'users:1'}},
      {id: 5, op: 'get', params: {id: 'users:404'}},
      {id: 6, op: 'search', params: {query: 'oslo'}},
      {id: 7, op: 'list', params: {table: 'users'}},
    )
    expect(a.get(1)?.result).to.deep.include({branch: 'main', id: 'users:1'})
    expect(a.get(2)?.result).to.deep.equal({city: 'Oslo', id: 'users:1', name: 'Ada'})
    const history = a.get(4)?.result as {versions: Array<{doc: {name: string}; meta: {origin: string}}>}
    expect(history.versions.map((v) => v.doc.name)).to.deep.equal(['Ada L.', 'Ada'])
    expect(history.versions[0].meta.origin).to.equal('embed')
    expect(a.get(5)?.result).to.equal(null)
    expect((a.get(6)?.result as {total: number}).total).to.equal(0)
    expect((a.get(7)?.result as {documents: unknown[]}).documents).to.have.length(1)

    const b = await db.call({id: 'x', op: 'get', params: {}}, {id: 9, op: 'no_such_op'}, {id: 10, op: 'put', params: {doc: [1]}})
    expect(b.get('x')?.error?.code).to.equal('invalid_argument')
    expect(b.get('x')?.error?.message).to.match(/"id" is required/)
    expect(b.get(9)?.error?.message).to.match(/unknown operation "no_such_op"; operations: .*put/)
    expect(b.get(10)?.error?.code).to.equal('invalid_document')

    db.send('this is not json', '{"id": 11}')
    expect(await db.next()).to.deep.equal({error: {code: 'invalid_argument', message: 'a request must be one JSON object per line'}, id: null})
    expect(await db.next()).to.deep.equal({error: {code: 'invalid_argument', message: 'a request needs "op"'}, id: 11})
    // Still serving after bad input.
    expect((await db.call({id: 12, op: 'ping'})).get(12)?.result).to.equal('pong')

    expect(await db.close()).to.equal(0)
    const log = execFileSync('git', ['-C', `${dataDir}/repo`, 'log', '--format=%s', 'main'], {encoding: 'utf8'})
    expect(log.trim().split('\n')).to.have.length(2)
  })

  it('refuses a data directory another process holds, naming its pid and the remote alternative', async () => {
    const dataDir = tempDir('svc-embed-')
    const first = Embedded.start(dataDir)
    const ready = await first.next()
    const second = Embedded.start(dataDir)
    const refusal = await second.next()
    expect(refusal.ready).to.equal(false)
    const error = refusal.error as {code: string; message: string}
    expect(error.code).to.equal('locked')
    expect(error.message).to.include(`pid ${ready.pid}`).and.to.include('connect(url)')
    expect(await second.exited).to.not.equal(0)
    expect(await first.close()).to.equal(0)
  })

  it('answers 1,000 pipelined puts and reads them back', async () => {
    const dataDir = tempDir('svc-embed-')
    const db = Embedded.start(dataDir)
    await db.next()
    const puts = Array.from({length: 1000}, (_, i) => ({id: i, op: 'put', params: {doc: {id: `t:${i}`, n: i}}}))
    const answers = await db.call(...puts, {id: 'count', op: 'list', params: {limit: 10_000, table: 't'}}, {id: 'last', op: 'list', params: {limit: 2, order: 'desc', table: 't'}})
    expect([...answers.values()].filter((r) => r.error)).to.deep.equal([])
    expect((answers.get('count')?.result as {documents: unknown[]}).documents).to.have.length(1000)
    // From the last id down (ids sort as text: t:999, t:998).
    expect(answers.get('last')?.result).to.deep.equal({documents: [{id: 't:999', n: 999}, {id: 't:998', n: 998}], nextCursor: 't:998'})
    expect(await db.close()).to.equal(0)
  })

  it('gives back exactly the document it stored, and refuses numbers it could not keep as written', async () => {
    const dataDir = tempDir('svc-embed-')
    const db = Embedded.start(dataDir)
    await db.next()
    const doc = {big: 9007199254740991, nested: {list: [1.5, -0.25, 'a\nb "q" \\ ü ✓']}, text: 'line one\nline two'}
    const stored = await db.call({id: 1, op: 'put', params: {doc, id: 'exact:1'}})
    expect(stored.get(1)?.error).to.equal(undefined)
    // Read back twice (the second is answered from memory) and compared as text, not as parsed values.
    db.send({id: 2, op: 'get', params: {id: 'exact:1'}}, {id: 3, op: 'get', params: {id: 'exact:1'}})
    for (const expected of [2, 3]) {
      const line = await db.nextLine()
      expect(JSON.parse(line)).to.deep.equal({id: expected, result: {...doc, id: 'exact:1'}})
      expect(line).to.include('9007199254740991')
    }
    db.send('{"id":4,"op":"put","params":{"id":"exact:2","doc":{"n":12345678901234567890}}}')
    const refused = JSON.parse(await db.nextLine()) as Reply
    expect(refused.id).to.equal(4)
    expect(refused.error?.code).to.equal('inexact_number')
    expect(refused.error?.message).to.include('field params.doc.n').and.to.include('12345678901234567890')
    const missing = await db.call({id: 5, op: 'get', params: {id: 'exact:2'}})
    expect(missing.get(5)?.result).to.equal(null)
    expect(await db.close()).to.equal(0)
  })
})
