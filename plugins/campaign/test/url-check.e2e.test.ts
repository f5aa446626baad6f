import {expect} from 'chai'
import {writeFileSync} from 'node:fs'
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {join} from 'node:path'

import {checkUrls, urlIssues} from '../src/steps/url-check.js'
import {readEvents, runCli, runDirIn, tempDir} from './helpers.js'

/** A stand-in for the business's website on loopback: good, redirecting, missing and HEAD-refusing pages. */
function site(): Promise<{base: string; closedBase: string; hits: string[]; server: Server}> {
  const hits: string[] = []
  const server = createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`)
    if (req.url?.startsWith('/good') || req.url === '/') res.writeHead(200, {'content-type': 'text/html'}).end('<h1>ok</h1>')
    else if (req.url === '/moved') res.writeHead(301, {location: '/good'}).end()
    else if (req.url === '/no-head') res.writeHead(req.method === 'HEAD' ? 405 : 200).end()
    else res.writeHead(404).end('missing')
  })
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', async () => {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      // A port that was just free and is closed again: connections are refused.
      const closed = createServer()
      await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()))
      const closedBase = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`
      await new Promise<void>((r) => closed.close(() => r()))
      resolve({base, closedBase, hits, server})
    })
  })
}

describe('url-check against a loopback HTTP server', function () {
  this.timeout(60_000)
  let s: Awaited<ReturnType<typeof site>>

  before(async () => {
    s = await site()
  })
  after(() => s.server.close())

  it('reports good, redirected, 404, HEAD-refusing and unreachable URLs', async () => {
    const urls = [`${s.base}/good`, `${s.base}/moved`, `${s.base}/missing`, `${s.base}/no-head`, `${s.closedBase}/gone`]
    const seen: string[] = []
    const results = await checkUrls(urls, {concurrency: 3, onResult: (r) => seen.push(r.url), timeoutMs: 5000})
    expect(seen.sort()).to.deep.equal([...urls].sort())
    expect(results.map((r) => [r.status, r.ok])).to.deep.equal([
      [200, true],
      [200, true],
      [404, false],
      [200, true],
      [null, false],
    ])
    expect(results[1].final_url).to.equal(`${s.base}/good`)
    expect(results[4].reason).to.equal('ECONNREFUSED')
    expect(s.hits).to.include('GET /no-head')
    const codes = urlIssues(results).map((i) => [i.code, i.severity])
    expect(codes).to.deep.equal([
      ['url_redirected', 'warning'],
      ['url_broken', 'error'],
      ['url_unreachable', 'error'],
    ])
  })

  it('times out a server that never answers', async () => {
    const silent = createServer(() => {})
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()))
    try {
      const [r] = await checkUrls([`http://127.0.0.1:${(silent.address() as AddressInfo).port}/`], {concurrency: 1, onResult() {}, timeoutMs: 300})
      expect(r).to.deep.include({ok: false, reason: 'no answer within 300 ms', status: null})
    } finally {
      silent.closeAllConnections()
      silent.close()
    }
  })

  it('a run whose final URLs are broken exits 3 with url_checked events', async () => {
    const dir = tempDir()
    writeFileSync(
      join(dir, 'business.toml'),
      `[business]
name = "Loop Shop"
url = "${s.base}/"
language = "en"
locations = ["United States"]
goal = "Sell things online"
description = "Loop Shop sells a few things to test the URL check."

[[business.pages]]
name = "Good"
url = "${s.base}/good"

[[business.pages]]
name = "Moved"
url = "${s.base}/moved"

[[business.pages]]
name = "Missing"
url = "${s.base}/missing"

[[business.pages]]
name = "Gone"
url = "${s.closedBase}/gone"

[budget]
daily = 20
currency = "USD"

[catalog]
file = "catalog.csv"
`,
    )
    const rows = ['Good', 'Moved', 'Missing', 'Gone'].flatMap((c, i) => [`${i}a,${c} Widget,${s.base}/good/${i}a,10,${c}`, `${i}b,${c} Gadget,${s.base}/good/${i}b,12,${c}`])
    writeFileSync(join(dir, 'catalog.csv'), `id,title,url,price,category\n${rows.join('\n')}\n`)
    const out = tempDir()
    const res = await runCli(['campaign', 'generate', join(dir, 'business.toml'), '--out', out])
    expect(res.code, res.stderr).to.equal(3)
    const runDir = runDirIn(out)
    const checked = readEvents(runDir).filter((e) => e.event.type === 'url_checked').map((e) => e.event)
    const by = new Map(checked.map((e) => [e.url, e]))
    expect(by.get(`${s.base}/good`)).to.deep.equal({ok: true, status: 200, type: 'url_checked', url: `${s.base}/good`})
    expect(by.get(`${s.base}/moved`)).to.deep.include({ok: true, status: 200})
    expect(by.get(`${s.base}/missing`)).to.deep.include({ok: false, status: 404})
    expect(by.get(`${s.closedBase}/gone`)).to.deep.include({ok: false, status: null})
    expect(checked).to.have.length(new Set(checked.map((e) => e.url)).size)
    const {readFileSync} = await import('node:fs')
    const report = readFileSync(join(runDir, 'report.md'), 'utf8')
    expect(report).to.contain(`| ${s.base}/missing | 404 | HTTP 404 |`)
    expect(report).to.contain('| - | ECONNREFUSED |')
  })

  it('treats a root URL with and without the trailing slash as the same page, not a redirect', async () => {
    const dir = tempDir()
    writeFileSync(
      join(dir, 'business.toml'),
      `[business]\nname = "Root Shop"\nurl = "${s.base}"\nlanguage = "en"\nlocations = ["United States"]\ngoal = "Sell things"\ndescription = "Root Shop has only a home page to test the URL check."\n\n[budget]\ndaily = 60\ncurrency = "USD"\n`,
    )
    const out = tempDir()
    const res = await runCli(['campaign', 'generate', join(dir, 'business.toml'), '--out', out])
    expect(res.code, res.stderr).to.equal(0)
    const runDir = runDirIn(out)
    const checked = readEvents(runDir).filter((e) => e.event.type === 'url_checked').map((e) => e.event)
    expect(checked).to.deep.equal([{ok: true, status: 200, type: 'url_checked', url: s.base}])
    const {readFileSync} = await import('node:fs')
    expect(readFileSync(join(runDir, 'report.md'), 'utf8')).to.contain(`| ${s.base} | 200 | ok |`)
  })
})
