import {expect} from 'chai'

import {loadWorkspace} from '../src/run/workspace-store.js'
import {crossNegatives} from '../src/steps/cross-negatives.js'
import {blocks, validateAccount} from '../src/steps/validate.js'
import type {Campaign, Workspace} from '../src/types.js'
import {sharedExampleRun} from './helpers.js'

describe('validation codes', function () {
  this.timeout(60_000)
  let base: Workspace
  let runDir: string

  before(async () => {
    runDir = (await sharedExampleRun()).runDir
    base = loadWorkspace(runDir)
  })

  const search = (ws: Workspace): Campaign => ws.account.campaigns.find((c) => c.type === 'search' && c.ad_groups.length === 3) as Campaign
  const pmax = (ws: Workspace): Campaign => ws.account.campaigns.find((c) => c.type === 'performance_max') as Campaign
  const dg = (ws: Workspace): Campaign => ws.account.campaigns.find((c) => c.type === 'demand_gen') as Campaign

  function codes(change: (ws: Workspace) => void): string[] {
    const ws = structuredClone(base)
    change(ws)
    return validateAccount(ws, runDir).map((i) => `${i.severity}:${i.code}`)
  }

  it('the example account is clean', () => {
    expect(codes(() => {})).to.deep.equal([])
  })

  const cases: [string, (ws: Workspace) => void, string][] = [
    ['headline over 30', (ws) => (search(ws).ad_groups[0].ads[0].headlines[0] = 'x'.repeat(31)), 'error:headline_too_long'],
    ['description over 90', (ws) => (search(ws).ad_groups[0].ads[0].descriptions[0] = 'y'.repeat(91)), 'error:description_too_long'],
    ['path over 15', (ws) => (search(ws).ad_groups[0].ads[0].path1 = 'abcdefghijklmnop'), 'error:path_too_long'],
    ['path 2 without path 1', (ws) => Object.assign(search(ws).ad_groups[0].ads[0], {path1: '', path2: 'deals'}), 'error:path2_without_path1'],
    ['two headlines', (ws) => (search(ws).ad_groups[0].ads[0].headlines = ['One', 'Two']), 'error:too_few_headlines'],
    ['sixteen headlines', (ws) => (search(ws).ad_groups[0].ads[0].headlines = Array.from({length: 16}, (_, i) => `Headline ${i}`)), 'error:too_many_headlines'],
    ['one description', (ws) => (search(ws).ad_groups[0].ads[0].descriptions = ['Only one.']), 'error:too_few_descriptions'],
    ['five descriptions', (ws) => (search(ws).ad_groups[0].ads[0].descriptions = ['a.', 'b.', 'c.', 'd.', 'e.']), 'error:too_many_descriptions'],
    ['duplicate headline', (ws) => (search(ws).ad_groups[0].ads[0].headlines[1] = search(ws).ad_groups[0].ads[0].headlines[0].toUpperCase().toLowerCase()), 'error:duplicate_text'],
    ['headline with the same words in another order', (ws) => (search(ws).ad_groups[0].ads[0].headlines[1] = `${search(ws).ad_groups[0].ads[0].headlines[0].split(' ').reverse().join(', ')}.`), 'error:duplicate_text'],
    ['an ad copying another ad group\'s headlines', (ws) => (search(ws).ad_groups[1].ads[0].headlines = [...search(ws).ad_groups[0].ads[0].headlines]), 'warning:ad_repeated'],
    ['! in a headline', (ws) => (search(ws).ad_groups[0].ads[0].headlines[0] = 'Great Beans!'), 'error:headline_exclamation'],
    ['two ! in an ad', (ws) => (search(ws).ad_groups[0].ads[0].descriptions = ['Great beans!', 'Great gear!']), 'error:too_many_exclamations'],
    ['all-capital word', (ws) => (search(ws).ad_groups[0].ads[0].headlines[0] = 'FRESH Beans'), 'warning:all_caps'],
    ['repeated punctuation', (ws) => (search(ws).ad_groups[0].ads[0].descriptions[0] = 'Fresh beans,, roasted weekly.'), 'warning:repeated_punctuation'],
    ['emoji', (ws) => (search(ws).ad_groups[0].ads[0].headlines[0] = 'Fresh Beans ☕'), 'error:emoji'],
    ['keyword over 80', (ws) => (search(ws).ad_groups[0].keywords[0].text = 'k'.repeat(81)), 'error:keyword_too_long'],
    ['keyword of 11 words', (ws) => (search(ws).ad_groups[0].keywords[0].text = 'a b c d e f g h i j k'), 'error:keyword_too_many_words'],
    ['forbidden character', (ws) => (search(ws).ad_groups[0].keywords[0].text = 'coffee (beans)'), 'error:keyword_forbidden_char'],
    ['duplicate keyword', (ws) => search(ws).ad_groups[0].keywords.push({...search(ws).ad_groups[0].keywords[0]}), 'warning:duplicate_keyword'],
    ['budgets that do not add up', (ws) => (search(ws).daily_budget_cents += 1), 'error:budget_sum_mismatch'],
    ['CPC above the maximum', (ws) => (search(ws).ad_groups[0].max_cpc_cents = 151), 'error:cpc_above_max'],
    ['final URL off the site', (ws) => (search(ws).ad_groups[0].ads[0].final_url = 'https://elsewhere.example/beans'), 'error:final_url_off_site'],
    ['final URL not a URL', (ws) => (search(ws).ad_groups[0].final_url = 'beans'), 'error:final_url_invalid'],
    ['negative blocking an own keyword', (ws) => search(ws).negatives.push({match: 'phrase', source: 'model', text: search(ws).ad_groups[0].keywords[0].text}), 'error:negative_blocks_keyword'],
    ['ad-group negative blocking its keyword', (ws) => search(ws).ad_groups[0].negatives.push({match: 'broad', source: 'model', text: search(ws).ad_groups[0].keywords[0].text}), 'error:negative_blocks_keyword'],
    ['ad group without keywords', (ws) => (search(ws).ad_groups[0].keywords = []), 'error:ad_group_without_keywords'],
    ['ad group without ads', (ws) => (search(ws).ad_groups[0].ads = []), 'error:ad_group_without_ads'],
    ['search campaign without ad groups', (ws) => (search(ws).ad_groups = []), 'error:campaign_without_ad_groups'],
    ['PMax without a short headline', (ws) => (pmax(ws).asset_groups[0].headlines = ['A headline of 16 c', 'Another long headline', 'Third long headline']), 'error:short_headline_missing'],
    ['PMax without a short description', (ws) => (pmax(ws).asset_groups[0].descriptions = ['d'.repeat(70), 'e'.repeat(70)]), 'error:short_description_missing'],
    ['PMax long headline over 90', (ws) => (pmax(ws).asset_groups[0].long_headlines[0] = 'l'.repeat(91)), 'error:long_headline_too_long'],
    ['PMax without long headlines', (ws) => (pmax(ws).asset_groups[0].long_headlines = []), 'error:too_few_long_headlines'],
    ['PMax business name over 25', (ws) => (pmax(ws).asset_groups[0].business_name = 'Acme Coffee Roasters International'), 'error:business_name_too_long'],
    ['PMax without a landscape picture', (ws) => (pmax(ws).asset_groups[0].images = pmax(ws).asset_groups[0].images.filter((i) => i.kind !== 'landscape')), 'error:image_missing'],
    ['picture of the wrong size', (ws) => Object.assign(pmax(ws).asset_groups[0].images[0], {height: 700}), 'error:image_size'],
    ['picture file gone', (ws) => (pmax(ws).asset_groups[0].images[0].path = 'google-ads/editor/images/none.jpg'), 'error:image_file_missing'],
    ['Demand Gen headline over 40', (ws) => (dg(ws).asset_groups[0].headlines[0] = 'h'.repeat(41)), 'error:headline_too_long'],
    ['Demand Gen with six headlines', (ws) => (dg(ws).asset_groups[0].headlines = ['a', 'b', 'c', 'd', 'e', 'f'].map((x) => `Headline ${x}`)), 'error:too_many_headlines'],
    ['image campaign without a logo', (ws) => (ws.input.logo = null), 'error:logo_missing'],
    ['no campaigns', (ws) => (ws.account.campaigns = []), 'error:account_empty'],
  ]
  for (const [name, change, code] of cases) {
    it(`${name}: ${code}`, () => {
      expect(codes(change)).to.include(code)
    })
  }

  it('a 30-character headline, 90-character description and 15-character path pass', () => {
    expect(
      codes((ws) => {
        const ad = search(ws).ad_groups[0].ads[0]
        ad.headlines[0] = 'h'.repeat(30)
        ad.descriptions[0] = 'd'.repeat(90)
        ad.path1 = 'p'.repeat(15)
      }),
    ).to.deep.equal([])
  })
})

describe('negatives', () => {
  it('match types block what Google Ads blocks', () => {
    expect(blocks({match: 'exact', text: 'coffee beans'}, 'coffee beans')).to.equal(true)
    expect(blocks({match: 'exact', text: 'coffee beans'}, 'fresh coffee beans')).to.equal(false)
    expect(blocks({match: 'phrase', text: 'coffee beans'}, 'fresh coffee beans online')).to.equal(true)
    expect(blocks({match: 'phrase', text: 'coffee beans'}, 'beans coffee')).to.equal(false)
    expect(blocks({match: 'broad', text: 'coffee beans'}, 'beans for coffee')).to.equal(true)
    expect(blocks({match: 'broad', text: 'coffee beans'}, 'coffee grinder')).to.equal(false)
  })

  it('cross-negatives send a query to the campaign built for it, never blocking an own keyword', () => {
    const kw = (text: string, match: 'exact' | 'phrase') => ({match, text})
    const campaign = (name: string, keywords: ReturnType<typeof kw>[]): Campaign => ({
      ad_groups: [{ads: [], final_url: 'https://x.example', keywords, max_cpc_cents: 100, name, negatives: []}],
      asset_groups: [],
      bid_strategy: 'manual_cpc',
      daily_budget_cents: 100,
      max_cpc_cents: null,
      name,
      negatives: [{match: 'phrase', source: 'cross', text: 'stale'}],
      planned_ad_groups: [],
      slug: name,
      type: 'search',
    })
    const coffee = campaign('coffee', [kw('coffee', 'phrase'), kw('coffee grinder manual', 'exact')])
    const grinders = campaign('grinders', [kw('coffee grinder', 'phrase'), kw('coffee grinder', 'exact')])
    const tea = campaign('tea', [kw('green tea', 'phrase')])
    const ws = {account: {brand_kit: null, campaigns: [coffee, grinders, tea]}} as unknown as Workspace
    const result = crossNegatives(ws)
    // "coffee" (phrase) would catch "coffee grinder" searches: they go to the grinders campaign.
    // A phrase negative "coffee grinder" would block coffee's own "coffee grinder manual", so it is exact.
    expect(coffee.negatives).to.deep.equal([{match: 'exact', source: 'cross', text: 'coffee grinder'}])
    // "coffee grinder" (phrase) catches "coffee grinder manual": that query stays with coffee.
    expect(grinders.negatives).to.deep.equal([{match: 'phrase', source: 'cross', text: 'coffee grinder manual'}])
    expect(tea.negatives).to.deep.equal([])
    expect(result).to.deep.equal({added: 2, campaigns: 3})
    for (const c of [coffee, grinders, tea]) {
      for (const n of c.negatives) for (const k of c.ad_groups[0].keywords) expect(blocks(n, k.text), `${c.name}: ${n.text} vs ${k.text}`).to.equal(false)
    }
  })
})
