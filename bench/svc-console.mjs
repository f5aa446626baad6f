// The svc console with a large table: the same browser steps against a 1,000-document server and a
// 100,000-document one, in the same run, in Debian's chromium. The console must page and never
// load everything, so each step should take about as long at 100k as at 1k, and no response the
// page fetches may grow with the table. Prints each step's time at both sizes and the ratio.
//
//   node bench/svc-console.mjs [--docs 100000] [--small 1000] [--rounds 5]

import {chromium} from 'playwright-core'

import {buildDataDir} from './svc-fixture.mjs'
import {arg, line, pct, startServer, tempDir} from './svc-common.mjs'

const DOCS = arg('docs', 100_000)
const SMALL = arg('small', 1000)
const ROUNDS = arg('rounds', 5)
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
// Run in the page by chromium (functions, not strings: the console's CSP forbids eval).
/* global document */
const rowsAtLeast = (n) => document.querySelectorAll('#doc-list tr.doc-row').length >= n
const firstRowIsNot = (id) => document.querySelector('#doc-list tr.doc-row')?.dataset.id !== id

async function measure(docs, browser) {
  const dir = await buildDataDir(tempDir('svc-console-'), {commits: docs, docs})
  const server = await startServer(dir)
  const base = `http://127.0.0.1:${server.port}`
  // Search answers from what is indexed while the index catches up; wait for all of it so both
  // sizes search the same way.
  for (;;) {
    const {checks} = await (await fetch(`${base}/health`)).json()
    if (checks.find((c) => c.component === 'index')?.status === 'ok') break
    await new Promise((r) => setTimeout(r, 500))
  }
  const page = await browser.newPage({viewport: {height: 900, width: 1280}})
  let biggest = 0
  let biggestUrl = ''
  page.on('response', async (res) => {
    const body = await res.body().catch(() => Buffer.alloc(0))
    if (body.length > biggest) [biggest, biggestUrl] = [body.length, res.url().replace(base, '')]
  })
  const times = {'as of a commit (whole table)': [], 'first page': [], 'next page': [], 'open a document and its history': [], search: []}
  const {versions} = await (await fetch(`${base}/api/v1/documents/items:${Math.floor(docs / 2)}/history`)).json()
  for (let r = 0; r < ROUNDS; r++) {
    let t = performance.now()
    await page.goto(`${base}/ui`)
    await page.waitForFunction(rowsAtLeast, 1)
    times['first page'].push(performance.now() - t)

    const first = await page.getAttribute('#doc-list tr.doc-row', 'data-id')
    t = performance.now()
    await page.click('#next-page')
    await page.waitForFunction(firstRowIsNot, first)
    times['next page'].push(performance.now() - t)

    t = performance.now()
    await page.click('#doc-list tr.doc-row')
    await page.waitForSelector('.timeline li')
    times['open a document and its history'].push(performance.now() - t)

    t = performance.now()
    await page.fill('#asof', versions[0].commit)
    await page.press('#asof', 'Tab')
    await page.waitForFunction(rowsAtLeast, 1)
    await page.waitForLoadState('networkidle')
    times['as of a commit (whole table)'].push(performance.now() - t)
    await page.fill('#asof', '')

    await page.click('nav button[data-tab="search"]')
    t = performance.now()
    await page.fill('#q', 'kaloxo')
    await page.press('#q', 'Enter')
    await page.waitForSelector('#search-total')
    await page.waitForLoadState('networkidle')
    times.search.push(performance.now() - t)
    await page.click('nav button[data-tab="documents"]').catch(() => {})
  }
  await page.close()
  await server.stop()
  return {biggest, biggestUrl, p50: Object.fromEntries(Object.entries(times).map(([k, v]) => [k, pct(v, 50)]))}
}

const browser = await chromium.launch({args: ['--no-sandbox'], executablePath: CHROMIUM})
const small = await measure(SMALL, browser)
const large = await measure(DOCS, browser)
await browser.close()

console.log(`svc console, ${SMALL.toLocaleString('en')} vs ${DOCS.toLocaleString('en')} documents, p50 of ${ROUNDS} rounds in chromium`)
for (const step of Object.keys(small.p50)) {
  line(step, `${small.p50[step].toFixed(0)} ms vs ${large.p50[step].toFixed(0)} ms (${(large.p50[step] / small.p50[step]).toFixed(2)}x)`)
}
line('largest response the page fetched', `${(small.biggest / 1024).toFixed(0)} KB vs ${(large.biggest / 1024).toFixed(0)} KB (${large.biggestUrl})`)
