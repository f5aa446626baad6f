import {expect} from 'chai'
import {cpSync, mkdirSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath, pathToFileURL} from 'node:url'
import {type Browser, chromium, type Page} from 'playwright-core'

import {contrast} from '../../../test/helpers/contrast.js'
import {readJson, runCli, sharedExampleRun, tempDir} from './helpers.js'

/** Debian's chromium, installed by scripts/install-peers.sh. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const SHOTS = fileURLToPath(new URL('../../../test-artifacts/campaign-report/', import.meta.url))

interface Ws {
  account: {campaigns: Array<{ad_groups: Array<{ads: Array<{descriptions: string[]; headlines: string[]}>; name: string}>; asset_groups: Array<{images: Array<{height: number; width: number}>; name: string}>; name: string; type: string}>}
}

describe('report.html of a real run, in Debian chromium', function () {
  this.timeout(180_000)
  let browser: Browser
  let page: Page
  let runDir: string
  let ws: Ws
  const problems: string[] = []
  const requests: string[] = []

  before(async () => {
    mkdirSync(SHOTS, {recursive: true})
    runDir = (await sharedExampleRun()).runDir
    ws = readJson<Ws>(join(runDir, 'workspace.json'))
    browser = await chromium.launch({args: ['--no-sandbox'], executablePath: CHROMIUM})
    page = await browser.newPage({viewport: {height: 900, width: 1280}})
    page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`))
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`))
    page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}`))
    page.on('request', (r) => requests.push(r.url()))
  })

  after(async () => {
    await browser?.close()
  })

  it('shows the account: every campaign, the budget chart, ads as Google would show them, pictures that load', async () => {
    const url = pathToFileURL(join(runDir, 'report.html')).href
    await page.goto(url)
    expect(await page.title()).to.equal(`Acme Coffee: campaign run ${runDir.split('/').pop()}`)
    expect(await page.textContent('#status')).to.include('Success')
    for (const c of ws.account.campaigns) {
      expect(await page.getByRole('navigation').getByRole('link', {name: c.name, exact: true}).count(), c.name).to.equal(1)
      expect(await page.getByRole('heading', {level: 3, name: c.name, exact: true}).count(), c.name).to.equal(1)
    }
    expect(await page.getByRole('img', {name: /^Daily budget per campaign: Acme Coffee - Brand \d+\.\d\d USD/}).count()).to.equal(1)

    // The first preview of the first ad: three headlines and two descriptions, as on a results page.
    const ad = ws.account.campaigns[0].ad_groups[0].ads[0]
    const preview = page.getByRole('article', {name: `Responsive search ad of ${ws.account.campaigns[0].ad_groups[0].name}, preview 1 of 3`})
    expect(await preview.locator('.serp-sponsored').textContent()).to.equal('Sponsored')
    expect((await preview.locator('.serp-headline').innerText()).trim()).to.equal(ad.headlines.slice(0, 3).join(' | '))
    expect(await preview.locator('.serp-desc').textContent()).to.equal(ad.descriptions.slice(0, 2).join(' '))
    expect(await preview.locator('.serp-url').textContent()).to.equal('acme-coffee.example › shop')

    // Pictures of a Performance Max asset group, per ratio, really decoded by the browser.
    const pmax = ws.account.campaigns.find((c) => c.type === 'performance_max')!
    const {images, name: group} = pmax.asset_groups[0]
    const picture = page.getByRole('article', {exact: true, name: pmax.name}).getByRole('img', {name: `Landscape (1.91:1) picture 1 of 3 for ${group}, ${images[0].width}×${images[0].height}`})
    await picture.scrollIntoViewIfNeeded()
    expect(await picture.evaluate((img) => (img as unknown as {complete: boolean; naturalWidth: number}).naturalWidth)).to.be.greaterThan(0)
    const broken = await page.evaluate<number>(`[...document.images].filter((i) => i.complete && i.naturalWidth === 0).length`)
    expect(broken).to.equal(0)

    // The import files are linked relative to the page, so they open from file:// too.
    const href = await page.getByRole('link', {name: 'google-ads/1-campaign.csv'}).getAttribute('href')
    expect(readFileSync(new URL(href!, url), 'utf8')).to.match(/^Row Type,/)
    await page.evaluate('window.scrollTo(0, 0)')
    await page.screenshot({fullPage: false, path: join(SHOTS, 'report-top.png')})
    await page.locator(`#${await preview.evaluate((a) => (a as unknown as {closest(s: string): {id: string}}).closest('section').id)}`).screenshot({path: join(SHOTS, 'report-ad-group.png')})

    // One file: nothing but the page itself and its data: pictures was requested.
    expect(requests.filter((r) => r !== url && !r.startsWith('data:'))).to.deep.equal([])
    expect(problems).to.deep.equal([])
  })

  it('shows a validation finding beside the ad it is about, and the run as invalid', async () => {
    const copy = join(tempDir(), 'run')
    cpSync(runDir, copy, {recursive: true})
    const file = join(copy, 'workspace.json')
    const edited = readJson<Ws>(file)
    edited.account.campaigns[1].ad_groups[0].ads[0].headlines[0] = 'A headline that is far too long for Google'
    writeFileSync(file, JSON.stringify(edited))
    const res = await runCli(['campaign', 'export', copy, '--skip-url-check'])
    expect(res.code).to.equal(3)
    await page.goto(pathToFileURL(join(copy, 'report.html')).href)
    expect(await page.textContent('#status')).to.include('Invalid')
    const name = edited.account.campaigns[1].ad_groups[0].name
    const section = page.getByRole('region', {exact: true, name: `Ad group: ${name}`})
    const finding = section.getByRole('list', {exact: true, name: `Findings for ${name}`}).getByRole('listitem')
    expect(await finding.count()).to.equal(1)
    expect(await finding.textContent()).to.include('headline_too_long').and.include('has 42 characters; the limit is 30')
    // The over-long headline is marked in words, not by colour alone.
    await section.getByText('All headlines and descriptions').click()
    expect(await section.locator('li.over').first().textContent()).to.include('42/30 (over the limit)')
    expect(await page.textContent('#import')).to.include('Nothing to import yet')
    await section.screenshot({path: join(SHOTS, 'report-finding.png')})
    expect(problems).to.deep.equal([])
  })

  it('works from the keyboard, gives every picture a text, keeps text contrast', async () => {
    await page.goto(pathToFileURL(join(runDir, 'report.html')).href)
    await page.keyboard.press('Tab')
    expect(await page.evaluate('document.activeElement.textContent')).to.equal('Skip to the report')
    await page.keyboard.press('Enter')
    expect(await page.evaluate('location.hash')).to.equal('#main')
    // A folded list opens from the keyboard.
    const summary = (await page.locator('details:not([open]) > summary').first().elementHandle())!
    await summary.focus()
    await page.keyboard.press('Enter')
    expect(await summary.evaluate((s) => (s as unknown as {parentElement: {open: boolean}}).parentElement.open)).to.equal(true)
    // The navigation's links reach each campaign.
    const last = ws.account.campaigns.at(-1)!.name
    await page.getByRole('navigation').getByRole('link', {name: last, exact: true}).focus()
    await page.keyboard.press('Enter')
    expect(await page.evaluate('document.querySelector(location.hash + " h3").textContent')).to.equal(last)

    expect(await page.evaluate<number>(`[...document.querySelectorAll('img')].filter((i) => !i.hasAttribute('alt')).length`)).to.equal(0)
    expect(await page.evaluate('document.documentElement.lang')).to.equal('en')
    const colours = await page.evaluate<Array<{bg: string; fg: string; text: string}>>(`[...document.querySelectorAll('body, p, td, th, li, a, .serp-url, .serp-desc, .count, .status, .sev, figcaption, code')].map((e) => {
      const s = getComputedStyle(e)
      let bg = s.backgroundColor
      for (let p = e.parentElement; bg === 'rgba(0, 0, 0, 0)' && p; p = p.parentElement) bg = getComputedStyle(p).backgroundColor
      return {bg: bg === 'rgba(0, 0, 0, 0)' ? 'rgb(255, 255, 255)' : bg, fg: s.color, text: e.className || e.tagName}
    })`)
    for (const {bg, fg, text} of colours) expect(contrast(fg, bg), `${text}: ${fg} on ${bg}`).to.be.at.least(4.5)
    expect(problems).to.deep.equal([])
  })
})
