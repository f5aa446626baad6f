import {mkdirSync} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {expect} from 'chai'
import {type Browser, chromium, type Page} from 'playwright-core'

import {contrast} from '../../../test/helpers/contrast.js'
import {startServer, type Started} from './helpers/cli.js'
import {tempDir} from './helpers/tmp.js'

/** Debian's chromium, installed by scripts/install-peers.sh. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const SHOTS = fileURLToPath(new URL('../../../test-artifacts/svc-console/', import.meta.url))

/** The page's document as seen by functions that run in the browser (this project compiles without the DOM's types). */
type PageDocument = {querySelector(s: string): {textContent: null | string} | null; querySelectorAll(s: string): {length: number}}

describe('svc console at /ui, in Debian chromium', function () {
  this.timeout(180_000)
  let server: Started
  let base: string
  let browser: Browser
  let page: Page
  const problems: string[] = []
  const dataDir = join(tempDir('svc-ui-'), 'data')

  before(async () => {
    mkdirSync(SHOTS, {recursive: true})
    server = await startServer(['--data-dir', dataDir, '--http-port', '0', '--disable-redis', '--disable-sql'])
    base = `http://127.0.0.1:${server.ready.rest as number}`
    const put = async (id: string, doc: unknown): Promise<void> => {
      const res = await fetch(`${base}/api/v1/documents/${id}`, {body: JSON.stringify(doc), headers: {'content-type': 'application/json'}, method: 'PUT'})
      expect(res.status).to.equal(200)
    }
    await put('users:1', {city: 'Oslo', name: 'Ada'})
    await put('users:1', {city: 'London', name: 'Ada Lovelace'})
    await put('users:2', {city: 'Oslo', name: 'Ann'})
    for (let i = 0; i < 60; i++) await put(`items:${String(i).padStart(2, '0')}`, {n: i, title: `item ${i}`})
    browser = await chromium.launch({args: ['--no-sandbox'], executablePath: CHROMIUM})
    page = await browser.newPage({viewport: {height: 900, width: 1280}})
    page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`))
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`))
    page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}`))
    page.on('response', (r) => r.status() >= 400 && problems.push(`HTTP ${r.status()}: ${r.url()}`))
  })

  after(async () => {
    await browser?.close()
    server?.child.kill('SIGTERM')
    await server?.exited
  })

  it('browses pages of documents, opens one, its history and a diff between two versions', async () => {
    await page.goto(`${base}/ui`)
    await page.waitForSelector('#doc-list tr.doc-row')
    expect(await page.locator('#doc-list tr.doc-row').count()).to.equal(50)
    // The Id header reverses the order on the server: the last id first, and back.
    const firstRow = (id: string) => page.waitForFunction((want) => (globalThis as unknown as {document: PageDocument}).document.querySelector('#doc-list tr.doc-row td')?.textContent === want, id)
    await page.click('#sort-id')
    await firstRow('users:2')
    expect(await page.getAttribute('#id-header', 'aria-sort')).to.equal('descending')
    await page.click('#sort-id')
    await firstRow('items:00')
    expect(await page.getAttribute('#id-header', 'aria-sort')).to.equal('ascending')
    await page.click('#next-page')
    await page.waitForFunction(() => (globalThis as unknown as {document: PageDocument}).document.querySelectorAll('#doc-list tr.doc-row').length === 12)
    await page.selectOption('#table', 'users')
    await page.waitForFunction(() => (globalThis as unknown as {document: PageDocument}).document.querySelectorAll('#doc-list tr.doc-row').length === 2)
    await page.click('tr[data-id="users:1"]')
    await page.waitForSelector('#doc-json')
    expect(await page.textContent('#doc-json')).to.include('"Ada Lovelace"')
    expect(await page.locator('.timeline li').count()).to.equal(2)
    await page.click('#show-diff')
    await page.waitForSelector('#diff table')
    const diff = await page.textContent('#diff')
    expect(diff).to.include('/name').and.to.include('"Ada"').and.to.include('"Ada Lovelace"')
    // An older version shown in place of the current one.
    await page.locator('.timeline li').nth(1).getByRole('button', {name: 'View'}).click()
    expect(await page.textContent('#doc-json')).to.include('"Oslo"')
    await page.screenshot({fullPage: true, path: join(SHOTS, 'documents.png')})
    // The whole table as of users:1's first version, when users:2 did not exist yet; then today's again.
    const {versions} = (await (await fetch(`${base}/api/v1/documents/users:1/history`)).json()) as {versions: Array<{commit: string}>}
    const rows = (): Promise<string[]> => page.evaluate<string[]>(`[...document.querySelectorAll('#doc-list tr.doc-row')].map((tr) => tr.dataset.id)`)
    await page.fill('#asof', versions[1].commit)
    await page.press('#asof', 'Tab')
    await page.waitForFunction(() => (globalThis as unknown as {document: PageDocument}).document.querySelectorAll('#doc-list tr.doc-row').length === 1)
    expect(await rows()).to.deep.equal(['users:1'])
    await page.fill('#asof', '')
    await page.press('#asof', 'Tab')
    await page.waitForFunction(() => (globalThis as unknown as {document: PageDocument}).document.querySelectorAll('#doc-list tr.doc-row').length === 2)
    expect(await rows()).to.deep.equal(['users:1', 'users:2'])
  })

  it('searches with highlighted matches and runs SQL into a table', async () => {
    await page.click('nav button[data-tab="search"]')
    await page.fill('#q', 'oslo')
    await page.press('#q', 'Enter')
    await page.waitForSelector('#search-hits li')
    expect(await page.textContent('#search-total')).to.equal('1 matching document')
    expect(await page.textContent('#search-hits mark')).to.equal('Oslo')
    await page.screenshot({fullPage: true, path: join(SHOTS, 'search.png')})
    await page.click('nav button[data-tab="sql"]')
    await page.fill('#sql-text', 'SELECT name, city FROM users ORDER BY name')
    await page.click('#sql-form button')
    await page.waitForSelector('#sql-table tbody tr')
    const rows = await page.evaluate<string[][]>(`[...document.querySelectorAll('#sql-table tbody tr')].map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent))`)
    expect(rows).to.deep.equal([['Ada Lovelace', 'London'], ['Ann', 'Oslo']])
    await page.screenshot({fullPage: true, path: join(SHOTS, 'sql.png')})
  })

  it('edits a document through the REST API and shows server status', async () => {
    await page.click('nav button[data-tab="documents"]')
    await page.click('tr[data-id="users:2"]')
    await page.waitForFunction(() => (globalThis as unknown as {document: PageDocument}).document.querySelector('#doc-view h2')?.textContent === 'users:2')
    await page.click('#doc-view summary')
    await page.fill('#doc-edit', JSON.stringify({city: 'Bergen', name: 'Ann'}))
    await page.click('#save-doc')
    await page.waitForFunction(() => (globalThis as unknown as {document: PageDocument}).document.querySelector('#doc-json')?.textContent?.includes('Bergen'))
    const stored = (await (await fetch(`${base}/api/v1/documents/users:2`)).json()) as {city: string}
    expect(stored.city).to.equal('Bergen')
    await page.click('nav button[data-tab="status"]')
    await page.waitForSelector('#health-json')
    expect(await page.textContent('#status-body h2')).to.match(/^Health: (ok|healthy|degraded)/)
    // Rates come from two samples of the request counters, the tab refreshing itself.
    for (let i = 0; i < 20; i++) await fetch(`${base}/api/v1/documents/users:1`)
    await page.waitForSelector('#request-rates table')
    const rates = await page.evaluate<string[][]>(`[...document.querySelectorAll('#request-rates tbody tr')].map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent))`)
    const documentGets = rates.find(([route]) => route.startsWith('GET /api/v1/documents/'))
    expect(documentGets, JSON.stringify(rates)).to.not.equal(undefined)
    expect(Number(documentGets![1])).to.be.greaterThan(0)
    // The tab's own polling (GET /health and /metrics every 2 s) is not the users' traffic.
    expect(rates.filter(([route]) => route === 'GET /health' || route === 'GET /metrics'), JSON.stringify(rates)).to.deep.equal([])
    await page.screenshot({fullPage: true, path: join(SHOTS, 'status.png')})
  })

  it('works from the keyboard, labels every control, keeps text contrast, and logs no errors', async () => {
    await page.goto(`${base}/ui`)
    await page.waitForSelector('#doc-list tr.doc-row')
    await page.focus('tr[data-id="items:00"]')
    await page.keyboard.press('Enter')
    await page.waitForFunction(() => (globalThis as unknown as {document: PageDocument}).document.querySelector('#doc-view h2')?.textContent === 'items:00')
    // Run in the page (as text: this project compiles without the DOM's types).
    const unlabeled = await page.evaluate<string[]>(`[...document.querySelectorAll('input, select, textarea')]
      .filter((e) => !e.getAttribute('aria-label') && !(e.id && document.querySelector('label[for="' + e.id + '"]')) && !e.closest('label'))
      .map((e) => e.outerHTML)`)
    expect(unlabeled).to.deep.equal([])
    const colours = await page.evaluate<Array<{bg: string; fg: string}>>(`[...document.querySelectorAll('body, button, td, th, .muted')].map((e) => {
      const s = getComputedStyle(e)
      let bg = s.backgroundColor
      for (let p = e.parentElement; bg === 'rgba(0, 0, 0, 0)' && p; p = p.parentElement) bg = getComputedStyle(p).backgroundColor
      return {bg: bg === 'rgba(0, 0, 0, 0)' ? 'rgb(255, 255, 255)' : bg, fg: s.color}
    })`)
    for (const {bg, fg} of colours) expect(contrast(fg, bg), `${fg} on ${bg}`).to.be.at.least(4.5)
    expect(problems).to.deep.equal([])
  })

  it('serves its files with validators and caching headers', async () => {
    const js = await fetch(`${base}/ui/app.js`)
    expect(js.headers.get('cache-control')).to.equal('public, max-age=3600')
    const etag = js.headers.get('etag')
    expect(etag).to.be.a('string')
    const again = await fetch(`${base}/ui/app.js`, {headers: {'if-none-match': etag!}})
    expect(again.status).to.equal(304)
    const html = await fetch(`${base}/ui`)
    expect(html.headers.get('content-security-policy')).to.include("default-src 'self'")
    expect((await fetch(`${base}/ui/secret.txt`)).status).to.equal(404)
  })

  it('shows the table last chosen when the page it replaced answers after it', async () => {
    const p = await browser.newPage()
    try {
      // The first list (all tables) is held until the users table has been listed.
      let release = (): void => {}
      const held = new Promise<void>((resolve) => (release = resolve))
      await p.route(/\/api\/v1\/documents\?/, async (route) => {
        if (!new URL(route.request().url()).searchParams.has('table')) await held
        await route.continue()
      })
      const rows = (): Promise<number> => p.evaluate(() => (globalThis as unknown as {document: PageDocument}).document.querySelectorAll('#doc-list tr.doc-row').length)
      await p.goto(`${base}/ui`)
      await p.selectOption('#table', 'users')
      await p.waitForFunction(() => (globalThis as unknown as {document: PageDocument}).document.querySelectorAll('#doc-list tr.doc-row').length === 2)
      const late = p.waitForResponse((r) => r.url().includes('/api/v1/documents?') && !new URL(r.url()).searchParams.has('table'))
      release()
      await late
      // Time for the late answer to be read and (wrongly) rendered, had it been.
      await p.evaluate(() => new Promise((resolve) => setTimeout(resolve, 300)))
      expect(await rows()).to.equal(2)
      expect(await p.locator('tr[data-id="users:1"]').count()).to.equal(1)
    } finally {
      await p.close()
    }
  })

  it('is read-only on a follower: no editor, a line saying why', async () => {
    const follower = await startServer(['--data-dir', join(tempDir('svc-ui-'), 'follower'), '--follow', join(dataDir, 'repo'), '--http-port', '0', '--disable-redis', '--disable-sql'])
    const fpage = await browser.newPage()
    try {
      const fbase = `http://127.0.0.1:${follower.ready.rest as number}`
      for (let i = 0; i < 300 && (await fetch(`${fbase}/api/v1/documents/users:1`)).status !== 200; i++) await new Promise((r) => setTimeout(r, 200))
      await fpage.goto(`${fbase}/ui`)
      await fpage.selectOption('#table', 'users')
      await fpage.click('tr[data-id="users:1"]')
      await fpage.waitForSelector('#doc-json')
      expect(await fpage.textContent('#doc-view')).to.include('Read-only')
      expect(await fpage.locator('#save-doc, #doc-edit').count()).to.equal(0)
    } finally {
      await fpage.close()
      follower.child.kill('SIGTERM')
      await follower.exited
    }
  })
})

describe('svc server --disable-ui', function () {
  this.timeout(60_000)

  it('serves no console', async () => {
    const server = await startServer(['--data-dir', join(tempDir('svc-ui-'), 'data'), '--http-port', '0', '--disable-redis', '--disable-sql', '--disable-ui'])
    try {
      const res = await fetch(`http://127.0.0.1:${server.ready.rest as number}/ui`)
      expect(res.status).to.equal(404)
    } finally {
      server.child.kill('SIGTERM')
      await server.exited
    }
  })
})
