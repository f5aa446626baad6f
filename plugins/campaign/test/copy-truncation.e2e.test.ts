import {expect} from 'chai'
import {readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {EventLog} from '../src/run/events.js'
import {loadWorkspace, saveWorkspace} from '../src/run/workspace-store.js'
import {validateAccount} from '../src/steps/validate.js'
import {callTool} from '../src/tools/call.js'
import {toolsFor} from '../src/tools/registry.js'
import type {ToolContext} from '../src/tools/tool.js'
import type {Workspace} from '../src/types.js'
import {copyExample, runCli, runDirIn, sharedExampleRun, tempDir} from './helpers.js'

interface Issue {
  code: string
  message: string
  path: string
}

describe('copy cut mid-word (copy_truncated)', function () {
  this.timeout(120_000)
  let base: Workspace

  before(async () => {
    base = loadWorkspace((await sharedExampleRun()).runDir)
  })

  const slug = 'acme-coffee-coffee-beans'

  function session() {
    const dir = tempDir()
    const ws = structuredClone(base)
    saveWorkspace(dir, ws)
    const events = new EventLog(join(dir, 'events.ndjson'), [])
    const ctx: ToolContext = {finished: false, mission: `campaign:${slug}`, slug, ws}
    const call = (name: string, input: unknown) => callTool(toolsFor('campaign'), ctx, events, () => saveWorkspace(dir, ws), name, input)
    return {call, campaign: ws.account.campaigns.findIndex((c) => c.slug === slug), ws}
  }

  function upsert(headlines: string[], descriptions: string[]) {
    return {
      ads: [{descriptions, final_url: 'https://acme-coffee.example/beans', headlines, path1: 'beans', path2: ''}],
      final_url: 'https://acme-coffee.example/beans',
      keywords: [{match: 'phrase', text: 'ethiopia yirgacheffe whole bean'}],
      language: 'en',
      max_cpc_cents: 100,
      name: 'Coffee Beans',
    }
  }

  it('upsert_ad_group answers a headline sliced from a product title and copy ending on a joiner with the fields to rewrite', async () => {
    const s = session()
    // "Ethiopia Yirgacheffe Whole Bean 250g" cut to the 30-character headline limit.
    const headlines = ['Ethiopia Yirgacheffe Whole Bea', 'Fresh Roasted Coffee Beans', 'Speciality Beans Every Week']
    const descriptions = ['Roasted every week and shipped fresh, with the grinders and', 'Single-origin beans roasted in small batches every week.', 'Light, medium and dark roasts -']
    const res = (await s.call('upsert_ad_group', upsert(headlines, descriptions))) as {ok: true; result: {issues: Issue[]}}
    expect(res.ok).to.equal(true)
    const at = `account.campaigns[${s.campaign}].ad_groups[0].ads[0]`
    const cut = res.result.issues.filter((i) => i.code === 'copy_truncated')
    expect(cut.map((i) => i.path)).to.deep.equal([`${at}.headlines[0]`, `${at}.descriptions[0]`, `${at}.descriptions[2]`])
    expect(cut[0].message).to.equal(
      'headline "Ethiopia Yirgacheffe Whole Bea" reads as cut mid-word or mid-phrase: it fills the 30-character limit and ends with "Bea", the start of "bean" in the business or catalog text: a word cut in two; write it to end on a whole word',
    )
    expect(cut[1].message).to.match(/^description "Roasted every week .*" reads as cut .*: it ends with "and", as if the rest were cut off/)
    expect(cut[2].message).to.contain('it ends with "-"')

    // Rewritten on whole words, the same group is clean: the model knows what to fix.
    const fixed = (await s.call('upsert_ad_group', upsert(['Ethiopia Yirgacheffe Beans', ...headlines.slice(1)], ['Roasted every week and shipped fresh.', descriptions[1], 'Light, medium and dark roasts.']))) as {ok: true; result: {issues: Issue[]}}
    expect(fixed.result.issues.filter((i) => i.code === 'copy_truncated')).to.deep.equal([])
  })

  it('set_assets answers a business name cut to 25 characters', async () => {
    const s = session()
    const ws = s.ws
    const pmax = ws.account.campaigns.findIndex((c) => c.type === 'performance_max')
    ws.input.business.name = 'Acme Coffee Speciality Roasters'
    const groups = ws.account.campaigns[pmax].asset_groups.map((g) => ({...g, business_name: 'Acme Coffee Speciality Ro'}))
    const ctx: ToolContext = {finished: false, mission: `campaign:${ws.account.campaigns[pmax].slug}`, slug: ws.account.campaigns[pmax].slug, ws}
    const res = (await callTool(toolsFor('campaign'), ctx, new EventLog(join(tempDir(), 'events.ndjson'), []), () => {}, 'set_assets', {asset_groups: groups})) as {ok: true; result: {issues: Issue[]}}
    const cut = res.result.issues.filter((i) => i.code === 'copy_truncated')
    expect(cut.map((i) => i.path)).to.deep.equal(groups.map((_, g) => `account.campaigns[${pmax}].asset_groups[${g}].business_name`))
    expect(cut[0].message).to.contain('business name "Acme Coffee Speciality Ro"')
    expect(cut[0].message).to.contain('"roasters"')
  })

  it('leaves whole words alone: at the limit on a whole word, a closing single letter, an ellipsis', () => {
    const ws = structuredClone(base)
    const search = ws.account.campaigns.find((c) => c.type === 'search' && c.ad_groups.length > 0) as Workspace['account']['campaigns'][number]
    const ad = search.ad_groups[0].ads[0]
    // Exactly 30 characters, ending on a word the catalog has whole.
    ad.headlines[0] = 'Kenya Nyeri AA Whole Bean 250g'
    expect(ad.headlines[0]).to.have.length(30)
    ad.headlines[1] = 'Coffee With Vitamin E'
    ad.descriptions[1] = 'Grinders, brewers, kettles and more...'
    expect(validateAccount(ws).filter((i) => i.code === 'copy_truncated')).to.deep.equal([])
  })

  it('a business with a long name and long product titles gets a plan whose copy holds whole words only', async () => {
    const dir = copyExample()
    const file = join(dir, 'business.toml')
    // The first word fits 25 characters but is too short to stand alone as the name; the next does not fit.
    const toml = readFileSync(file, 'utf8').replace('name = "Acme Coffee"', 'name = "Zyx Quorbfantastiqueroasterssss Kaffeerösterei"')
    writeFileSync(file, toml.replace('formats = ["search", "performance_max", "demand_gen"]', 'formats = ["search", "performance_max"]'))
    const long = ['Hyperboreanextraordinaire', 'Wunderbarkaffeebohnenmischung', 'Ultrafeingemahlenerbohnen']
    const catalog = readFileSync(join(dir, 'catalog.csv'), 'utf8').split('\n')
    // Twelve products keep the run small; the first three get titles no headline can hold whole.
    const rows = catalog.slice(1, 13).map((row, i) => (i < 3 ? row.replace(/^(AC-\d+),[^,]+,/, `$1,${long.join(' ')} Nr${i + 1} Selection,`) : row))
    writeFileSync(join(dir, 'catalog.csv'), [catalog[0], ...rows, ''].join('\n'))
    const out = tempDir()
    const res = await runCli(['campaign', 'generate', file, '--out', out, '--skip-url-check'])
    expect(res.code, res.stderr).to.equal(0)
    const ws = loadWorkspace(runDirIn(out))
    expect(ws.account.brand_kit?.business_name).to.equal('Zyx')
    const texts: string[] = []
    for (const c of ws.account.campaigns) {
      for (const g of c.ad_groups) for (const ad of g.ads) texts.push(...ad.headlines, ...ad.descriptions)
      for (const g of c.asset_groups) texts.push(g.business_name, ...g.headlines, ...g.long_headlines, ...g.descriptions)
    }
    expect(texts.length).to.be.greaterThan(30)
    const made = ['zyx', 'quorbfantastiqueroasterssss', 'kaffeerösterei', ...long.map((w) => w.toLowerCase())]
    const cut = texts.flatMap((t) =>
      t
        .toLowerCase()
        .split(/[^\p{L}\p{N}]+/u)
        .filter((w) => w.length >= 3 && made.some((m) => m !== w && m.startsWith(w)))
        .map((w) => `${w} in "${t}"`),
    )
    expect(cut).to.deep.equal([])
    expect(texts.join(' ')).to.contain('Zyx')
  })
})
