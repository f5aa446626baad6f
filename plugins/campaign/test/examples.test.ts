import {expect} from 'chai'
import {parse} from 'csv-parse/sync'
import {cpSync, readFileSync} from 'node:fs'
import {join} from 'node:path'

import {readEvents, readJson, repoRoot, runCli, runDirIn, tempDir} from './helpers.js'

interface Ws {
  account: {campaigns: {ad_groups: {ads: {headlines: string[]}[]; keywords: {final_url?: string; text: string}[]; language?: string}[]; asset_groups: {images: unknown[]; language?: string}[]; type: string}[]}
  input: {catalog: unknown[]}
}

/** Runs an example the way the README says, and checks it passes every rule: exit 0, no issue. */
async function planExample(name: string, dir = join(repoRoot, 'examples', name)): Promise<{runDir: string; ws: Ws}> {
  const out = tempDir()
  const res = await runCli(['campaign', 'generate', join(dir, 'business.toml'), '--out', out, '--skip-url-check'])
  expect(res.code, res.stderr).to.equal(0)
  const runDir = runDirIn(out)
  const validation = readEvents(runDir).find((e) => e.event.type === 'validation')?.event as unknown as {errors: unknown[]; warnings: unknown[]}
  expect(validation.errors).to.deep.equal([])
  expect(validation.warnings).to.deep.equal([])
  expect(readJson(join(runDir, 'run.json'))).to.deep.include({exit_code: 0, status: 'success'})
  return {runDir, ws: readJson<Ws>(join(runDir, 'workspace.json'))}
}

describe('the example businesses (through bin/run.js)', function () {
  this.timeout(180_000)

  it('bright-pipes-plumbing: a local service with no catalog gets service searches, no shop copy', async () => {
    const {runDir, ws} = await planExample('bright-pipes-plumbing')
    expect(ws.input.catalog).to.deep.equal([])
    const groups = ws.account.campaigns.flatMap((c) => c.ad_groups)
    const keywords = groups.flatMap((g) => g.keywords.map((k) => k.text))
    expect(keywords).to.include.members(['emergency plumber near me', 'drain cleaning cost', 'bright pipes'])
    const headlines = groups.flatMap((g) => g.ads.flatMap((a) => a.headlines))
    expect(headlines.join('|')).to.not.match(/Shop|Checkout|Buy .* Online/)
    const campaigns = readFileSync(join(runDir, 'google-ads', '1-campaign.csv'), 'utf8')
    expect(campaigns).to.contain('Bright Pipes Plumbing & Heating - Brand,Search,Google search')
    // One location per row, as Google Ads reads them; a cell joining several is one unknown place.
    const rows = parse(campaigns, {columns: true}) as Record<string, string>[]
    const brand = 'Bright Pipes Plumbing & Heating - Brand'
    expect(rows.filter((r) => r.Campaign === brand).map((r) => [r['Row Type'], r.Location])).to.deep.equal([
      ['Campaign', ''],
      ['Location', 'Austin, Texas, United States'],
      ['Location', 'Round Rock, Texas, United States'],
      ['Location', 'Cedar Park, Texas, United States'],
    ])
    const searchCampaigns = rows.filter((r) => r['Row Type'] === 'Campaign')
    expect(rows.filter((r) => r['Row Type'] === 'Location')).to.have.length(3 * searchCampaigns.length)
    for (const r of rows) expect(r.Location).to.not.contain(';')
  })

  it('cafe-serrano: a Portuguese shop gets Portuguese copy, prices as Brazil writes them, and its pictures', async () => {
    const {runDir, ws} = await planExample('cafe-serrano')
    for (const c of ws.account.campaigns) {
      for (const g of c.ad_groups) expect(g.language).to.equal('pt-BR')
      for (const g of c.asset_groups) {
        expect(g.language).to.equal('pt-BR')
        expect(g.images.length).to.be.at.least(6)
      }
    }
    const ads = readFileSync(join(runDir, 'google-ads', '5-responsive-search-ads.csv'), 'utf8')
    expect(ads).to.contain('"Preços a Partir de R$ 39,90"')
    expect(ads).to.not.match(/Order Online|Secure Checkout|Shop /)
    const keywords = readFileSync(join(runDir, 'google-ads', '3-keywords.csv'), 'utf8')
    expect(keywords).to.contain(',comprar cafés especiais,Phrase match,')
    expect(keywords).to.contain(',catuaí amarelo em grãos 250g,Exact match,https://cafeserrano.example/cafes/catuai-amarelo-em-graos-250g')
  })

  it('outdoor-depot: the committed 2,000-product catalog is what its script writes, and plans cleanly', async () => {
    const copy = join(tempDir(), 'outdoor-depot')
    cpSync(join(repoRoot, 'examples', 'outdoor-depot'), copy, {recursive: true})
    const {execFileSync} = await import('node:child_process')
    execFileSync(process.execPath, [join(copy, 'make-catalog.mjs')])
    expect(readFileSync(join(copy, 'catalog.csv'), 'utf8')).to.equal(readFileSync(join(repoRoot, 'examples', 'outdoor-depot', 'catalog.csv'), 'utf8'))
    const {ws} = await planExample('outdoor-depot', copy)
    expect(ws.input.catalog).to.have.length(2000)
    const keywords = ws.account.campaigns.flatMap((c) => c.ad_groups).flatMap((g) => g.keywords)
    expect(keywords.filter((k) => k.final_url).length).to.be.at.least(2 * 2000)
    for (const k of keywords) expect(k.text.split(' ').length, k.text).to.be.within(2, 10)
  })
})
