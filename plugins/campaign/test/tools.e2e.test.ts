import {expect} from 'chai'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'

import {EventLog, type EventLine} from '../src/run/events.js'
import {loadWorkspace, saveWorkspace} from '../src/run/workspace-store.js'
import {callTool} from '../src/tools/call.js'
import {toolsFor, toolSpecs} from '../src/tools/registry.js'
import type {ToolContext} from '../src/tools/tool.js'
import type {Workspace} from '../src/types.js'
import {runCli, sharedExampleRun, tempDir} from './helpers.js'

describe('tools', function () {
  this.timeout(60_000)
  let base: Workspace

  before(async () => {
    base = loadWorkspace((await sharedExampleRun()).runDir)
  })

  function session(mission: string, slug: null | string) {
    const dir = tempDir()
    const ws = structuredClone(base)
    saveWorkspace(dir, ws)
    const lines: EventLine[] = []
    const events = new EventLog(join(dir, 'events.ndjson'), [(l) => lines.push(l)])
    const ctx: ToolContext = {finished: false, mission, slug, ws}
    const kind = mission === 'plan' ? 'plan' : 'campaign'
    const call = (name: string, input: unknown) => callTool(toolsFor(kind), ctx, events, () => saveWorkspace(dir, ws), name, input)
    const onDisk = () => JSON.parse(readFileSync(join(dir, 'workspace.json'), 'utf8')) as Workspace
    return {call, ctx, lines, onDisk, ws}
  }

  const slug = 'acme-coffee-coffee-beans'
  const mission = `campaign:${slug}`

  it('a successful mutating call is on disk before tool_finished is reported', async () => {
    const s = session(mission, slug)
    const before = s.onDisk()
    const res = await s.call('set_campaign_negatives', {negatives: [{match: 'exact', text: 'cheap beans'}]})
    expect(res.ok).to.equal(true)
    const saved = s.onDisk().account.campaigns.find((c) => c.slug === slug)
    expect(saved?.negatives.filter((n) => n.source === 'model')).to.deep.equal([{match: 'exact', source: 'model', text: 'cheap beans'}])
    expect(before).to.not.deep.equal(s.onDisk())
    expect(s.lines.map((l) => [l.event.type, 'ok' in l.event ? l.event.ok : null])).to.deep.equal([
      ['tool_called', null],
      ['tool_finished', true],
    ])
  })

  const refusals: [string, string, unknown, RegExp][] = [
    ['an ad group outside the plan', 'upsert_ad_group', {ads: [{descriptions: ['a'], headlines: ['b']}], final_url: 'https://acme-coffee.example', keywords: [{match: 'exact', text: 'x'}], max_cpc_cents: 10, name: 'Nope'}, /ad group "Nope" is not in the plan; planned: Coffee Beans, /],
    ['input that breaks the schema', 'upsert_ad_group', {name: 'Coffee Beans', keywords: 'coffee'}, /^invalid input: /],
    ['a match type that does not exist', 'set_campaign_negatives', {negatives: [{match: 'fuzzy', text: 'x'}]}, /negatives\.0\.match/],
    ['asset groups on a search campaign', 'set_assets', {asset_groups: [{business_name: 'A', descriptions: [], final_url: 'https://a', headlines: [], name: 'g'}]}, /is a search campaign: use upsert_ad_group/],
    ['an unknown tool', 'delete_account', {}, /unknown tool "delete_account"/],
  ]
  for (const [name, tool, input, message] of refusals) {
    it(`refuses ${name} with ok: false, the reason for the model, and no change`, async () => {
      const s = session(mission, slug)
      const before = JSON.stringify(s.onDisk())
      const res = await s.call(tool, input)
      expect(res.ok).to.equal(false)
      expect(res.ok ? '' : res.error).to.match(message)
      expect(JSON.stringify(s.onDisk())).to.equal(before)
      expect(JSON.stringify(s.ws)).to.equal(JSON.stringify(base))
      const finished = s.lines.at(-1)?.event
      expect(finished).to.deep.include({ok: false, tool, type: 'tool_finished'})
    })
  }

  it('set_account_plan refuses a product id that is not in the catalog and leaves the plan as it was', async () => {
    const s = session('plan', null)
    const res = await s.call('set_account_plan', {campaigns: [{ad_groups: [{final_url: 'https://acme-coffee.example', name: 'G', product_ids: ['NOPE']}], bid_strategy: 'manual_cpc', daily_budget_cents: 12_000, name: 'X', type: 'search'}]})
    expect(res).to.deep.equal({error: 'group "G" names product "NOPE", which is not in the catalog', ok: false})
    expect(s.ws.account.campaigns).to.have.length(base.account.campaigns.length)
  })

  it('set_account_plan refuses a category that is not in the catalog, naming the ones that are', async () => {
    const s = session('plan', null)
    const res = await s.call('set_account_plan', {campaigns: [{ad_groups: [{categories: ['Teapots'], final_url: 'https://acme-coffee.example', name: 'G'}], bid_strategy: 'manual_cpc', daily_budget_cents: 12_000, name: 'X', type: 'search'}]})
    expect(res.ok).to.equal(false)
    expect(res.ok ? '' : res.error).to.match(/^group "G" names category "Teapots", which is not in the catalog; categories: .*Coffee Beans/)
    expect(JSON.stringify(s.ws)).to.equal(JSON.stringify(base))
  })

  it('set_account_plan takes whole categories by name (any case) and plans their products in catalog order', async () => {
    const s = session('plan', null)
    const res = await s.call('set_account_plan', {
      campaigns: [{ad_groups: [{categories: ['coffee BEANS'], final_url: 'https://acme-coffee.example', name: 'Beans', }], bid_strategy: 'manual_cpc', daily_budget_cents: 12_000, name: 'Beans', type: 'search'}],
    })
    expect(res.ok, JSON.stringify(res)).to.equal(true)
    const beans = base.input.catalog.filter((p) => p.category === 'Coffee Beans').map((p) => p.id)
    expect(beans.length).to.be.greaterThan(1)
    expect(s.onDisk().account.campaigns[0].planned_ad_groups[0].product_ids).to.deep.equal(beans)
  })

  describe('a 2,000-product catalog (examples/outdoor-depot)', () => {
    let big: Workspace
    before(async () => {
      big = loadWorkspace((await sharedExampleRun('outdoor-depot')).runDir)
    })

    const call = (name: string, input: unknown) => {
      const ctx: ToolContext = {finished: false, mission: 'plan', slug: null, ws: structuredClone(big)}
      return callTool(toolsFor('plan'), ctx, new EventLog(join(tempDir(), 'events.ndjson')), () => {}, name, input)
    }

    it('get_business summarises it by category in a few per cent of the catalog', async () => {
      const res = await call('get_business', {})
      expect(res.ok).to.equal(true)
      const catalog = (res as {result: {catalog: {categories: {name: string; price_bands: Record<string, number>; products: number; top_products: {id: string}[]}[]; products: number}}}).result.catalog
      expect(catalog.products).to.equal(2000)
      expect(catalog.categories).to.have.length(20)
      // The whole catalog is about 600,000 characters of JSON; its summary a few per cent of it.
      expect(JSON.stringify(res).length).to.be.below(JSON.stringify(big.input.catalog).length / 20)
      for (const c of catalog.categories) {
        expect(c.products).to.equal(big.input.catalog.filter((p) => p.category === c.name).length)
        expect(Object.values(c.price_bands).reduce((a, b) => a + b, 0)).to.equal(c.products)
        expect(c.top_products.length).to.be.within(1, 5)
      }
    })

    it('query_catalog pages through one category at most 100 products at a time', async () => {
      const category = big.input.catalog[0].category
      const page = await call('query_catalog', {category: category.toUpperCase(), limit: 100, offset: 50})
      const result = (page as {result: {products: {category: string}[]; total: number}}).result
      expect(result.total).to.equal(100)
      expect(result.products).to.have.length(50)
      for (const p of result.products) expect(p.category).to.equal(category)
      const tooMany = await call('query_catalog', {limit: 1000})
      expect(tooMany.ok ? '' : tooMany.error).to.match(/^invalid input: limit: /)
    })
  })

  it('upsert_ad_group answers a model that writes English for a German shop with the texts to rewrite', async () => {
    const s = session(mission, slug)
    s.ws.input.business.language = 'de-DE'
    const res = (await s.call('upsert_ad_group', {
      ads: [{descriptions: ['Frisch geröstete Kaffeebohnen aus Köln.', 'Order now and get free shipping today.'], final_url: 'https://acme-coffee.example/coffee', headlines: ['Kaffeebohnen Kaufen', 'Shop Now Today', 'Frisch Geröstet'], path1: 'kaffee', path2: ''}],
      final_url: 'https://acme-coffee.example/coffee',
      keywords: [{match: 'phrase', text: 'kaffeebohnen kaufen'}, {match: 'phrase', text: 'buy coffee beans'}],
      language: 'de',
      max_cpc_cents: 100,
      name: 'Coffee Beans',
    })) as {ok: true; result: {issues: {code: string; path: string}[]}}
    expect(res.ok).to.equal(true)
    const i = s.ws.account.campaigns.findIndex((c) => c.slug === slug)
    expect(res.result.issues.filter((x) => x.code === 'copy_language').map((x) => x.path)).to.deep.equal([
      `account.campaigns[${i}].ad_groups[0].ads[0].headlines[1]`,
      `account.campaigns[${i}].ad_groups[0].ads[0].descriptions[1]`,
      `account.campaigns[${i}].ad_groups[0].keywords[1]`,
    ])
  })

  it('finish is refused while planned ad groups are missing', async () => {
    const s = session(mission, slug)
    s.ws.account.campaigns.find((c) => c.slug === slug)!.ad_groups.pop()
    const res = await s.call('finish', {})
    expect(res.ok).to.equal(false)
    expect(s.ctx.finished).to.equal(false)
  })

  it('plan: finish needs a brand kit only when the plan has image campaigns', async () => {
    const s = session('plan', null)
    s.ws.account.brand_kit = null
    expect(await s.call('finish', {})).to.deep.equal({error: 'image campaigns need a brand kit: call set_brand_kit first', ok: false})
    s.ws.account.campaigns = s.ws.account.campaigns.filter((c) => c.type === 'search')
    expect((await s.call('finish', {})).ok).to.equal(true)
    expect(s.ctx.finished).to.equal(true)
  })

  it('exports every tool as JSON Schema; plan and campaign missions get the tools they need', () => {
    const plan = toolSpecs('plan').map((t) => t.name)
    expect(plan).to.include.members(['get_business', 'query_catalog', 'set_brand_kit', 'set_account_plan', 'finish'])
    const campaign = toolSpecs('campaign').map((t) => t.name)
    expect(campaign).to.include.members(['get_brief', 'upsert_ad_group', 'set_campaign_negatives', 'set_assets', 'validate', 'finish'])
    const upsert = toolSpecs('campaign').find((t) => t.name === 'upsert_ad_group')
    expect(upsert?.input_schema).to.deep.include({type: 'object'})
    expect((upsert?.input_schema.properties as Record<string, {items?: {properties?: {match?: {enum?: string[]}}}}>).keywords.items?.properties?.match?.enum).to.deep.equal(['exact', 'phrase', 'broad'])
  })

  it('`toolkit campaign tools --format json` prints one schema per line', async () => {
    const res = await runCli(['campaign', 'tools', '--mission', 'campaign', '--format', 'json'])
    expect(res.code, res.stderr).to.equal(0)
    const names = res.stdout.trim().split('\n').map((l) => (JSON.parse(l) as {name: string}).name)
    expect(names).to.include('upsert_ad_group')
  })
})
