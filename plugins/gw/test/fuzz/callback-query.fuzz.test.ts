import {expect} from 'chai'
import fc from 'fast-check'
import getPort from 'get-port'

import {getOwn as rawGet} from '../../../../packages/kit/test/helpers/raw-socket.js'
import {listenForCallback} from '../../src/client/oauth/callback.js'
import {FUZZ_SEED, fuzzRuns} from './runs.js'

// Issue 20: the local OAuth callback of `gw auth login` is an open port on loopback: any query
// string (and any request target) gets a 200, 400 or 404 page, never a crash; only a callback
// carrying the exact state ends the wait, and an error text is HTML-escaped on the page.
describe('gw OAuth callback: random query strings and request targets (real loopback socket, fast-check)', () => {
  it('answers every request target, and only the exact state and a code complete the login (fixed seed)', async () => {
    const port = await getPort({host: '127.0.0.1'})
    const listener = await listenForCallback([port])
    const state = 'st-4f2a9c'
    let got: string | undefined
    const waiting = listener.waitForCode(state, 60_000).then((code) => (got = code))
    const value = fc.oneof(fc.string({maxLength: 30}), fc.constantFrom(state, `${state} `, '', '%', '%zz', '<script>alert(1)</script>', '\u0000', 'a'.repeat(3000)))
    const query = fc
      .array(fc.tuple(fc.oneof(fc.constantFrom('code', 'state', 'error', 'error_description'), fc.string({maxLength: 8})), value), {maxLength: 5})
      .map((pairs) => pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&'))
    const target = fc.oneof(
      {arbitrary: query.map((q) => `/callback?${q}`), weight: 5},
      {arbitrary: fc.constantFrom('//', '//a%20b', '//%zz', '//[', '/callback?state=%', '/callback?%%%', '/callback?code=x&state=' + '%'.repeat(5), '/%2e%2e/callback', '*'), weight: 1},
      {arbitrary: fc.string({maxLength: 20}).map((s) => `/${encodeURIComponent(s)}`), weight: 1},
    )
    const statuses: Record<number, number> = {}
    await fc.assert(
      fc.asyncProperty(target, async (path) => {
        if (/[?&]state=st-4f2a9c(&|$)/.test(path)) return // the one state that would end the wait is sent last
        const r = await rawGet(port, path)
        statuses[r.status] = (statuses[r.status] ?? 0) + 1
        expect([200, 400, 404], `${r.status} for ${path.slice(0, 120)}`).to.include(r.status)
        expect(r.body, path.slice(0, 120)).to.not.include('<script>')
      }),
      {numRuns: fuzzRuns(300), seed: FUZZ_SEED},
    )
    if (process.env.FUZZ_REPORT) console.log('callback statuses', statuses)
    expect(got, 'a callback with another state ended the wait').to.equal(undefined)
    expect((await rawGet(port, `/callback?code=the-code&state=${state}`)).status).to.equal(200)
    await waiting
    expect(got).to.equal('the-code')
    await listener.close()
  })
})
