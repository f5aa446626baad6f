import {expect} from 'chai'
import {spawn} from 'node:child_process'
import {existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {setTimeout as sleep} from 'node:timers/promises'

import {copyExample, readEvents, readJson, runCli, runDirIn, runJs, tempDir} from './helpers.js'

const lineOf = (text: string, needle: string) => text.split('\n').findIndex((l) => l.includes(needle)) + 1

/** A business file written for the test, with an optional catalog. */
function business(toml: string, catalog?: string): string {
  const dir = tempDir('campaign-biz-')
  writeFileSync(join(dir, 'business.toml'), toml)
  if (catalog !== undefined) writeFileSync(join(dir, 'catalog.csv'), catalog)
  return join(dir, 'business.toml')
}

interface Ws {
  account: {campaigns: {ad_groups: {ads: {descriptions: string[]; headlines: string[]}[]; keywords: {final_url?: string; text: string}[]; language?: string; name: string}[]; daily_budget_cents: number; name: string; type: string}[]}
  input: {catalog: {id: string; image: null | string}[]; logo: null | string}
  missions: Record<string, {status: unknown}>
}

describe('inputs people really have (through bin/run.js)', function () {
  this.timeout(120_000)

  it('names a misspelt key with the table, the closest valid key, the file and the line', async () => {
    const dir = copyExample()
    const file = join(dir, 'business.toml')
    const text = readFileSync(file, 'utf8').replace('max_cpc = 1.50', 'budgett = 1.50')
    writeFileSync(file, text)
    const res = await runCli(['campaign', 'generate', file, '--out', tempDir(), '--skip-url-check'])
    expect(res.code).to.equal(2)
    expect(res.stderr.trim()).to.equal(`Error: ${file}:${lineOf(text, 'budgett')}: unknown key "budgett" in [budget]; did you mean "budget"?`)
  })

  it('refuses a currency that is not ISO 4217', async () => {
    const dir = copyExample()
    const file = join(dir, 'business.toml')
    writeFileSync(file, readFileSync(file, 'utf8').replace('currency = "USD"', 'currency = "USX"'))
    const res = await runCli(['campaign', 'generate', file, '--out', tempDir(), '--skip-url-check'])
    expect(res.code).to.equal(2)
    expect(res.stderr).to.contain('"budget.currency" is not an ISO 4217 currency code')
  })

  it('refuses a wide logo, a tiny logo and a missing logo, naming the file', async () => {
    const {default: sharp} = await import('sharp')
    const dir = copyExample()
    const file = join(dir, 'business.toml')
    const out = tempDir()
    await sharp({create: {background: '#112233', channels: 3, height: 100, width: 400}}).png().toFile(join(dir, 'logo.png'))
    let res = await runCli(['campaign', 'generate', file, '--out', out, '--skip-url-check'])
    expect(res.code).to.equal(2)
    expect(res.stderr).to.match(/business\.toml:\d+: logo logo\.png: is 400x100; Google Ads needs a square \(1:1\) logo/)
    await sharp({create: {background: '#112233', channels: 3, height: 64, width: 64}}).png().toFile(join(dir, 'logo.png'))
    res = await runCli(['campaign', 'generate', file, '--out', out, '--skip-url-check'])
    expect(res.code).to.equal(2)
    expect(res.stderr).to.contain('is 64x64; Google Ads needs at least 128x128')
    rmSync(join(dir, 'logo.png'))
    res = await runCli(['campaign', 'generate', file, '--out', out, '--skip-url-check'])
    expect(res.code).to.equal(2)
    expect(res.stderr).to.contain('logo file not found: logo.png')
    expect(existsSync(out) ? readdirSync(out) : []).to.deep.equal([])
  })

  it('reports a missing product photo as a warning and a report line, and keeps the run self-contained', async () => {
    const dir = copyExample()
    rmSync(join(dir, 'images', 'ac-003.jpg'))
    const out = tempDir()
    const res = await runCli(['campaign', 'generate', join(dir, 'business.toml'), '--out', out, '--skip-url-check'])
    expect(res.code, res.stderr).to.equal(0)
    const runDir = runDirIn(out)
    const warnings = readEvents(runDir).find((e) => e.event.type === 'validation')?.event.warnings as {code: string; message: string}[]
    expect(warnings.filter((w) => w.code === 'product_image_missing').map((w) => w.message)).to.deep.equal([
      'product "AC-003": photo input/images/ac-003.jpg was not found when the run started; its pictures use another product\'s photo or none',
    ])
    expect(readFileSync(join(runDir, 'report.md'), 'utf8')).to.contain('`product_image_missing`')
    // Every picture the run uses is inside it, by a relative path: the directory can move.
    const ws = readJson<Ws>(join(runDir, 'workspace.json'))
    for (const p of ws.input.catalog) expect(p.image, p.id).to.match(/^input\/images\/ac-\d{3}\.jpg$/)
    expect(readdirSync(join(runDir, 'input', 'images'))).to.have.length(56)
    const moved = join(tempDir(), 'moved-run')
    renameSync(runDir, moved)
    rmSync(dir, {force: true, recursive: true})
    rmSync(join(moved, 'google-ads', 'editor', 'images'), {force: true, recursive: true})
    const again = await runCli(['campaign', 'export', moved, '--skip-url-check'])
    expect(again.code, again.stderr).to.equal(0)
    expect(readdirSync(join(moved, 'google-ads', 'editor', 'images', 'acme-coffee-performance-max')).length).to.be.greaterThan(5)
  })

  it('locks a run directory while a process writes it: export and --resume are refused', async () => {
    const out = tempDir()
    const child = spawn(process.execPath, [runJs, 'campaign', 'generate', join(copyExample(), 'business.toml'), '--out', out, '--skip-url-check', '--parallel', '1'], {
      env: {...process.env, HOME: tempDir(), NO_COLOR: '1', TOOLKIT_CAMPAIGN_LOCAL_DELAY_MS: '40'},
      stdio: 'ignore',
    })
    const exited = new Promise<null | number>((resolve) => child.on('exit', (code) => resolve(code)))
    let runDir = ''
    for (let i = 0; i < 500 && runDir === ''; i++) {
      await sleep(20)
      const dirs = existsSync(out) ? readdirSync(out) : []
      if (dirs.length > 0 && existsSync(join(out, dirs[0], 'workspace.json'))) runDir = join(out, dirs[0])
    }
    const exp = await runCli(['campaign', 'export', runDir, '--skip-url-check'])
    expect(exp.code).to.equal(2)
    expect(exp.stderr).to.contain(`run directory ${runDir} is in use by process ${child.pid} (generate`)
    const res = await runCli(['campaign', 'generate', '--resume', runDir, '--skip-url-check'])
    expect(res.code).to.equal(2)
    expect(res.stderr).to.contain('is in use by process')
    expect(await exited).to.equal(0)
    expect(existsSync(join(runDir, '.lock'))).to.equal(false)
    const after = await runCli(['campaign', 'export', runDir, '--skip-url-check'])
    expect(after.code, after.stderr).to.equal(0)
  })

  it('plans a shouting, 60+ character name with emoji, "Co." and "e.g." in Portuguese', async () => {
    const file = business(
      `[business]
name = "ÇAFÉ DO BRASIL TORREFAÇÃO ARTESANAL & CO. ☕ LTDA — DESDE 1952 EM SÃO PAULO"
url = "https://cafe.example/"
language = "pt-BR"
locations = ["Brazil", "Portugal"]
goal = "Vender café online"
description = "A Café do Brasil Co. torra grãos especiais toda semana, e.g. o Bourbon Amarelo. Enviamos para todo o Brasil."
[budget]
daily = 120
currency = "BRL"
[catalog]
file = "catalog.csv"
`,
      `id,title,url,price,category
1,Café Bourbon Amarelo em Grãos 250g,https://cafe.example/p/1,39.90,Cafés Especiais
2,Café Catuaí Vermelho Moído 500g,https://cafe.example/p/2,49.90,Cafés Especiais
3,Moedor Manual de Café com Regulagem de Moagem Cerâmica e Manivela Dobrável Inox Premium Edição Limitada,https://cafe.example/p/3,189.00,Moedores
4,Coador de Pano,https://cafe.example/p/4,19.90,Acessórios
`,
    )
    const out = tempDir()
    const res = await runCli(['campaign', 'generate', file, '--out', out, '--skip-url-check'])
    expect(res.code, res.stderr).to.equal(0)
    const ws = readJson<Ws>(join(runDirIn(out), 'workspace.json'))
    const names = ws.account.campaigns.map((c) => c.name)
    expect(names[0]).to.equal('Çafé do Brasil Torrefação Artesanal - Brand')
    for (const c of ws.account.campaigns) {
      for (const g of c.ad_groups) {
        expect(g.language).to.equal('pt-BR')
        for (const k of g.keywords) expect(k.text.split(' ').length, k.text).to.be.at.least(2)
        const ad = g.ads[0]
        expect(ad.descriptions[0]).to.equal('A Café do Brasil Co. torra grãos especiais toda semana, e.g. o Bourbon Amarelo.')
        expect(ad.headlines.join(' ')).to.not.match(/\b(Shop|Order|Buy|Online Today)\b/)
      }
    }
    const products = ws.account.campaigns.flatMap((c) => c.ad_groups).flatMap((g) => g.keywords).filter((k) => k.final_url)
    expect(products.map((k) => [k.text, k.final_url])).to.deep.include.members([
      ['moedor manual de café com regulagem de moagem cerâmica', 'https://cafe.example/p/3'],
      ['café bourbon amarelo em grãos 250g', 'https://cafe.example/p/1'],
    ])
    const keywords = readFileSync(join(runDirIn(out), 'google-ads', '3-keywords.csv'), 'utf8')
    expect(keywords.split('\r\n')[0]).to.equal('Row Type,Action,Keyword status,Campaign,Ad group,Keyword,Type,Final URL')
    expect(keywords).to.contain(',café bourbon amarelo em grãos 250g,Exact match,https://cafe.example/p/1\r\n')
  })

  for (const [language, description, first, word] of [
    ['es', 'Tostamos café de especialidad cada semana en Madrid, p.ej. el Geisha de Panamá. Enviamos a toda España.', 'Tostamos café de especialidad cada semana en Madrid, p.ej. el Geisha de Panamá.', 'Compra'],
    ['de', 'Die Müller & Söhne GmbH röstet seit 1952 Kaffee in Köln, z.B. den Hausröst Nr. 5. Wir liefern deutschlandweit.', 'Die Müller & Söhne GmbH röstet seit 1952 Kaffee in Köln, z.B. den Hausröst Nr. 5.', 'Kaufen'],
  ] as const) {
    it(`writes ${language} copy for a ${language} description`, async () => {
      const file = business(
        `[business]\nname = "Müller & Söhne GmbH"\nurl = "https://kaffee.example"\nlanguage = "${language}"\nlocations = ["Germany"]\ngoal = "Kaffee verkaufen"\ndescription = "${description}"\n[budget]\ndaily = 60\ncurrency = "EUR"\n[catalog]\nfile = "catalog.csv"\n`,
        'id,title,url,price,category\n1,Espresso Bohnen 1kg,https://kaffee.example/p/1,24.90,Kaffeebohnen\n2,Filterkaffee 500g,https://kaffee.example/p/2,12.90,Kaffeebohnen\n',
      )
      const out = tempDir()
      const res = await runCli(['campaign', 'generate', file, '--out', out, '--skip-url-check'])
      expect(res.code, res.stderr).to.equal(0)
      const ws = readJson<Ws>(join(runDirIn(out), 'workspace.json'))
      const ads = ws.account.campaigns.flatMap((c) => c.ad_groups).flatMap((g) => g.ads)
      expect(ads[0].descriptions[0]).to.equal(first)
      expect(ads.flatMap((a) => a.headlines).some((h) => h.includes(word))).to.equal(true)
    })
  }

  it('says so, with a non-success status, when it cannot write the copy in the business language', async () => {
    const file = business(
      '[business]\nname = "東京珈琲店"\nurl = "https://tokyo-coffee.example"\nlanguage = "ja"\nlocations = ["Japan"]\ngoal = "コーヒー豆をオンラインで販売する"\ndescription = "東京の老舗コーヒー店です。毎週自家焙煎した豆をお届けします。"\n[budget]\ndaily = 30000\ncurrency = "JPY"\n',
    )
    const out = tempDir()
    const res = await runCli(['campaign', 'generate', file, '--out', out, '--skip-url-check'])
    expect(res.code).to.equal(1)
    const runDir = runDirIn(out)
    const failed = readEvents(runDir).filter((e) => e.event.type === 'mission_finished')
    expect(failed).to.have.length(1)
    expect(failed[0].event.reason).to.contain('writes ad copy in de, en, es, pt only, and business.language is ja')
    expect(readJson(join(runDir, 'run.json'))).to.deep.include({exit_code: 1, status: 'incomplete'})
    expect(readFileSync(join(runDir, 'report.md'), 'utf8')).to.contain('(a retry cannot fix this: change what the reason names, then --resume)')
    expect(existsSync(join(runDir, 'google-ads'))).to.equal(false)
  })
})

describe('budgets that buy clicks (through bin/run.js)', function () {
  this.timeout(120_000)

  it('refuses a daily budget too small for any campaign, with the figures', async () => {
    const dir = copyExample()
    const file = join(dir, 'business.toml')
    const text = readFileSync(file, 'utf8').replace('daily = 120.00', 'daily = 3.00')
    writeFileSync(file, text)
    const res = await runCli(['campaign', 'generate', file, '--out', tempDir(), '--skip-url-check'])
    expect(res.code).to.equal(2)
    expect(res.stderr.trim()).to.equal(
      `Error: ${file}:${lineOf(text, 'daily = 3.00')}: "budget.daily" 3.00 USD is too small for any campaign: at the lowest CPC estimate (0.40 USD, brand searches) a campaign needs at least 10 clicks a day, 4.00 USD; see docs/campaign.md, "Budget rule"`,
    )
  })

  it('groups categories into fewer campaigns on a thin budget and explains the split', async () => {
    const dir = copyExample()
    const file = join(dir, 'business.toml')
    writeFileSync(file, readFileSync(file, 'utf8').replace('daily = 120.00', 'daily = 40.00').replace('formats = ["search", "performance_max", "demand_gen"]', 'formats = ["search"]'))
    const out = tempDir()
    const res = await runCli(['campaign', 'generate', file, '--out', out, '--skip-url-check'])
    expect(res.code, res.stderr).to.equal(0)
    const runDir = runDirIn(out)
    const ws = readJson<Ws>(join(runDir, 'workspace.json'))
    const search = ws.account.campaigns.filter((c) => c.type === 'search')
    expect(search.length).to.be.lessThan(7)
    expect(search.reduce((a, c) => a + c.daily_budget_cents, 0)).to.equal(4000)
    // Every campaign buys at least 10 clicks at its estimate: validation would have said otherwise.
    const report = readFileSync(join(runDir, 'report.md'), 'utf8')
    expect(report).to.match(/Search campaigns? covers? several categories: with this daily budget, one campaign per category would buy fewer than 10 clicks a day each/)
    expect(report).to.contain('| CPC estimate | Clicks a day | Categories |')
  })

  it('the engine refuses a thin campaign, a bare head term, a cut phrase and copy in another language, whoever wrote them', async () => {
    const dir = copyExample()
    const file = join(dir, 'business.toml')
    writeFileSync(file, readFileSync(file, 'utf8').replace('formats = ["search", "performance_max", "demand_gen"]', 'formats = ["search"]'))
    const out = tempDir()
    expect((await runCli(['campaign', 'generate', file, '--out', out, '--skip-url-check'])).code).to.equal(0)
    const runDir = runDirIn(out)
    const wsFile = join(runDir, 'workspace.json')
    const ws = readJson<Ws & {account: {campaigns: {ad_groups: {keywords: {match: string; text: string}[]}[]}[]}}>(wsFile)
    const [brand, beans] = ws.account.campaigns
    brand.daily_budget_cents += beans.daily_budget_cents - 500
    beans.daily_budget_cents = 500
    beans.ad_groups[0].keywords.push({match: 'exact', text: 'beans'}, {match: 'phrase', text: 'coffee beans with'})
    beans.ad_groups[0].language = 'en-US'
    beans.ad_groups[1].language = 'de'
    writeFileSync(wsFile, JSON.stringify(ws))
    const res = await runCli(['campaign', 'export', runDir, '--skip-url-check', '--format', 'json'])
    expect(res.code).to.equal(3)
    const validation = readEvents(runDir).findLast((e) => e.event.type === 'validation')?.event.errors as {code: string; path: string}[]
    expect(validation.map((e) => `${e.code} ${e.path}`)).to.have.members([
      'budget_too_thin account.campaigns[1].daily_budget_cents',
      `keyword_head_term account.campaigns[1].ad_groups[0].keywords[${beans.ad_groups[0].keywords.length - 2}]`,
      `keyword_incomplete account.campaigns[1].ad_groups[0].keywords[${beans.ad_groups[0].keywords.length - 1}]`,
      'copy_language account.campaigns[1].ad_groups[1].language',
    ])
  })
})

