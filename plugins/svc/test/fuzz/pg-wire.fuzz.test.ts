import {expect} from 'chai'
import fc from 'fast-check'
import {join} from 'node:path'

import pg from 'pg'

import {startServer, type Started} from '../helpers/cli.js'
import {cleanupTempDirs, tempDir} from '../helpers/tmp.js'
import {type BackendMessage, cstr, errorFields, int16, int32, RawPg, sqlstate, startupPacket} from './pg-raw.js'
import {stopServer} from './server.js'
import {FUZZ_SEED, fuzzRuns, fuzzTimeout} from './runs.js'

const SEED = FUZZ_SEED

/** Parse + Bind of `SELECT $1::int4` with one binary parameter whose length field and bytes are given. */
function bindInt4(lengthField: number, bytes: Buffer): Buffer[] {
  const parse = Buffer.concat([cstr(''), cstr('SELECT $1::int4 AS v'), int16(1), int32(23)])
  const bind = Buffer.concat([cstr(''), cstr(''), int16(1), int16(1), int16(1), int32(lengthField), bytes, int16(0)])
  return [parse, bind]
}

describe('svc PostgreSQL wire: malformed frontend messages get a protocol error, never a crash or a hang (built CLI, raw socket)', function () {
  this.timeout(fuzzTimeout(180_000))
  let s: Started
  let port: number
  let checker: pg.Client

  before(async () => {
    s = await startServer(['--data-dir', join(tempDir(), 'data'), '--http-port', '0', '--pg-port', '0', '--disable-redis', '--log-level', 'error'])
    port = (s.ready as {pg: number}).pg
    checker = new pg.Client({database: 'svc', host: '127.0.0.1', password: 'svc', port, user: 'svc'})
    await checker.connect()
    await checker.query('CREATE TABLE kept (id int PRIMARY KEY, v text NOT NULL)')
    await checker.query("INSERT INTO kept (id, v) VALUES (1, 'one'), (2, 'two')")
  })

  after(async () => {
    await checker?.end().catch(() => {})
    await stopServer(s)
    cleanupTempDirs()
  })

  /** The server still answers a correct query on another connection, and the stored rows are unchanged. */
  async function stillServing(): Promise<void> {
    expect(s.child.exitCode, `server exited; stderr: ${s.stderr()}`).to.equal(null)
    expect((await checker.query('SELECT id, v FROM kept ORDER BY id')).rows).to.deep.equal([{id: 1, v: 'one'}, {id: 2, v: 'two'}])
  }

  /** Sends `messages` then Sync on a logged-in connection; returns what came back up to ReadyForQuery or the close. */
  async function exchange(messages: Array<[string, Buffer]>): Promise<BackendMessage[]> {
    const c = await RawPg.login(port)
    try {
      for (const [type, body] of messages) c.send(type, body)
      c.send('S', Buffer.alloc(0))
      return await c.until('Z')
    } finally {
      c.close()
    }
  }

  it('a binary int4 parameter of 3 bytes is 22P03 (not an internal error)', async () => {
    const [parse, bind] = bindInt4(3, Buffer.from([0, 0, 1]))
    const got = await exchange([['P', parse], ['B', bind], ['E', Buffer.concat([cstr(''), int32(0)])]])
    expect(sqlstate(got), JSON.stringify(got.map((m) => m.type))).to.equal('22P03')
    await stillServing()
  })

  it('a parameter length of -5 is a protocol violation (08P01), not NULL', async () => {
    const [parse, bind] = bindInt4(-5, Buffer.alloc(0))
    const got = await exchange([['P', parse], ['B', bind], ['E', Buffer.concat([cstr(''), int32(0)])]])
    expect(sqlstate(got)).to.equal('08P01')
    expect(got.some((m) => m.type === 'D'), 'a row was returned').to.equal(false)
    await stillServing()
  })

  it('a second StartupMessage gets 08P01 instead of a hanging connection', async () => {
    const c = await RawPg.login(port)
    c.write(startupPacket({database: 'svc', user: 'svc'}))
    const got = await c.until('Z', 20_000)
    c.close()
    expect(sqlstate(got)).to.equal('08P01')
    await stillServing()
  })

  it('a Parse declaring 65,535 parameter types with none present is 08P01', async () => {
    const got = await exchange([['P', Buffer.concat([cstr(''), cstr('SELECT 1'), Buffer.from([0xff, 0xff])])]])
    expect(sqlstate(got)).to.equal('08P01')
    await stillServing()
  })

  it('an unknown Describe kind is 08P01 (not 34000)', async () => {
    const got = await exchange([['D', Buffer.concat([Buffer.from('X'), cstr('')])]])
    expect(sqlstate(got)).to.equal('08P01')
    await stillServing()
  })

  it('query bytes that are not UTF-8 are 22021', async () => {
    const got = await exchange([['Q', cstr(Buffer.from([0x53, 0x45, 0x4c, 0x45, 0x43, 0x54, 0x20, 0x27, 0xff, 0xfe, 0x27]))]])
    expect(sqlstate(got)).to.equal('22021')
    await stillServing()
  })

  it('a startup packet without user is 28000, with no password challenge', async () => {
    const c = await RawPg.open(port)
    c.write(startupPacket({database: 'svc'}))
    const first = await c.next(20_000)
    c.close()
    expect(first?.type).to.equal('E')
    expect(errorFields((first as BackendMessage).body).C).to.equal('28000')
    await stillServing()
  })

  it('survives random and mutated frontend messages after login (fast-check, fixed seed)', async () => {
    const types = ['P', 'B', 'D', 'E', 'C', 'H', 'Q', 'F', 'd', 'c', 'f', 'X', 'p', '\0', 'z']
    const message = fc.record({
      body: fc.oneof(fc.uint8Array({maxLength: 64}), fc.constantFrom(...bindInt4(3, Buffer.from([1, 2, 3])).map((b) => new Uint8Array(b)))),
      lengthDelta: fc.oneof(fc.constant(0), fc.constant(0), fc.integer({max: 8, min: -8})),
      type: fc.constantFrom(...types),
    })
    let rounds = 0
    let waiting = 0
    await fc.assert(
      fc.asyncProperty(fc.array(message, {maxLength: 6, minLength: 1}), async (messages) => {
        rounds++
        const c = await RawPg.login(port)
        try {
          for (const m of messages) {
            const body = Buffer.from(m.body)
            const len = body.length + 4 + (m.lengthDelta < 0 ? Math.max(m.lengthDelta, -body.length) : 0)
            c.write(Buffer.concat([Buffer.from(m.type, 'latin1'), int32(len), body]))
          }
          // A length past the bytes sent leaves the server waiting for the rest: finish the frame.
          c.write(Buffer.alloc(64))
          c.send('S', Buffer.alloc(0))
          // A protocol answer, the connection ended, or (a length field larger than what was sent) the
          // server waiting for the rest of the frame; never an internal error.
          const got = await c.until('Z', 3000).catch((error: Error) => {
            if (!error.message.includes('no answer')) throw error
            waiting++
            return []
          })
          for (const m of got) if (m.type === 'E') expect(errorFields(m.body).C, JSON.stringify(errorFields(m.body))).to.not.equal('XX000')
        } finally {
          c.close()
        }
        await stillServing()
      }),
      {numRuns: fuzzRuns(60), seed: SEED},
    )
    expect(rounds).to.be.at.least(60)
    expect(waiting, 'rounds where the server waited for more bytes').to.be.below(rounds)
  })

  it('answers random SQL text with an ErrorResponse carrying a SQLSTATE, or rows (fast-check, fixed seed)', async () => {
    const words = ['SELECT', 'FROM', 'WHERE', 'kept', 'id', 'v', '(', ')', ',', '*', "'x'", '1', '-1', '1e400', '::int4', '::bigint', 'OR', 'AND', 'NOT', 'IN', 'NULL', ';', 'INSERT', 'INTO', 'VALUES', 'UPDATE', 'SET', 'DELETE', '=', '<', '$1', 'count(*)', 'ORDER BY', 'LIMIT', 'BEGIN', 'ROLLBACK', '\u0000', '"', '--', '/*']
    const sqlText = fc.oneof(fc.array(fc.constantFrom(...words), {maxLength: 12}).map((w) => w.join(' ')), fc.string({maxLength: 40}))
    const c = await RawPg.login(port)
    try {
      await fc.assert(
        fc.asyncProperty(sqlText, async (sql) => {
          // Writes are wrapped in a transaction that is rolled back: random text must not change stored rows.
          c.send('Q', cstr(`BEGIN`))
          await c.until('Z')
          c.send('Q', cstr(Buffer.from(sql.replaceAll('\0', ''))))
          const got = await c.until('Z', 20_000)
          expect(got.at(-1)?.type, `no ReadyForQuery after ${JSON.stringify(sql)}`).to.equal('Z')
          for (const m of got) {
            if (m.type !== 'E') continue
            const f = errorFields(m.body)
            expect(f.C, JSON.stringify(f)).to.match(/^[0-9A-Z]{5}$/)
            expect(f.C, `${JSON.stringify(sql)}: ${f.M}`).to.not.equal('XX000')
          }
          c.send('Q', cstr('ROLLBACK'))
          await c.until('Z')
        }),
        {numRuns: fuzzRuns(300), seed: SEED},
      )
    } finally {
      c.close()
    }
    await stillServing()
  })
})
