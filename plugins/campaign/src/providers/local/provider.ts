import {setTimeout as sleep} from 'node:timers/promises'

import {slugify} from '../../lib/slug.js'
import type {BidStrategy, Budget, Business, CampaignType, Keyword, Product} from '../../types.js'
import type {MissionSession, Provider, ProviderOptions} from '../provider.js'
import {fit, firstSentence, keywordOf, pathOf, pick, price, titleCase} from './copy.js'

/** Terms searched by people who will not buy (English); dropped when one would block an own keyword. */
const GENERIC_NEGATIVES = ['free', 'jobs', 'careers', 'diy', 'how to make', 'wholesale', 'second hand', 'used', 'recipe']

interface Planned {
  final_url: string
  name: string
  product_ids: string[]
  theme: string
}

interface BusinessInfo {
  brand: {colors: string[]; logo: null | string}
  budget: Budget
  business: Business
  formats: CampaignType[]
  search_bid_strategy: BidStrategy
}

interface Brief {
  brand_kit: {business_name: string} | null
  budget: Budget
  business: Business
  campaign: {max_cpc_cents: null | number; name: string; planned: Planned[]; type: CampaignType}
  products: Product[]
}

/**
 * The offline planner: deterministic, no network, no account. It knows nothing the tools do
 * not tell it and changes nothing except through them, exactly like a model would, so it
 * exercises the whole engine and gives a sound account to start from.
 */
export function createLocalProvider(options: ProviderOptions): Provider {
  const delay = Number(process.env.TOOLKIT_CAMPAIGN_LOCAL_DELAY_MS ?? 0)
  return {
    model: options.model,
    name: 'local',
    async runMission(session) {
      const call = async <T>(name: string, input: unknown = {}): Promise<T> => {
        session.transcript({content: [{input, name, type: 'tool_use'}], role: 'assistant'})
        const res = await session.call(name, input)
        session.transcript({content: [{content: res, name, type: 'tool_result'}], role: 'user'})
        if (delay > 0) await sleep(delay, undefined, {signal: session.signal})
        if (!res.ok) throw new Error(`${name} refused: ${res.error}`)
        return res.result as T
      }
      session.transcript({content: session.prompt, role: 'user'})
      if (session.kind === 'plan') await plan(call, session)
      else await build(call, session)
      session.usage({cost_usd: 0, input_tokens: 0, output_tokens: 0})
    },
  }
}

type Call = <T>(name: string, input?: unknown) => Promise<T>

async function plan(call: Call, session: MissionSession): Promise<void> {
  const info = await call<BusinessInfo>('get_business')
  const products: Product[] = []
  for (let offset = 0; offset < 1_000_000; offset += 1000) {
    const page = await call<{products: Product[]; total: number}>('query_catalog', {limit: 1000, offset})
    products.push(...page.products)
    if (products.length >= page.total || page.products.length === 0) break
  }
  const {business, budget} = info
  const colors = info.brand.colors.length > 0 ? info.brand.colors : ['#1f2937', '#f59e0b']
  await call('set_brand_kit', {business_name: fit(business.name, 25) ?? business.name.slice(0, 25), colors, tone: 'clear, factual, friendly'})

  // Categories that differ only by case are one category (their campaigns would share a slug).
  const byCategory = new Map<string, [string, Product[]]>()
  for (const p of products) {
    const key = p.category.toLowerCase()
    const entry = byCategory.get(key) ?? [p.category, []]
    entry[1].push(p)
    byCategory.set(key, entry)
  }
  // Without a catalog, the business's pages stand in for categories.
  if (byCategory.size === 0) for (const pg of business.pages) byCategory.set(pg.name.toLowerCase(), [pg.name, []])
  const categories = [...byCategory.values()].sort((a, b) => b[1].length - a[1].length || a[0].localeCompare(b[0]))
  const pageFor = (category: string) =>
    business.pages.find((pg) => pg.name.toLowerCase() === category.toLowerCase())?.url ??
    business.pages.find((pg) => pg.name.toLowerCase().includes(category.toLowerCase()))?.url ??
    business.url
  const cpc = budget.max_cpc_cents ?? Math.max(10, Math.min(budget.daily_cents, Math.round(budget.daily_cents / 20)))

  interface Draft {
    ad_groups: Planned[]
    bid_strategy: BidStrategy
    max_cpc_cents: null | number
    name: string
    type: CampaignType
    weight: number
  }
  const drafts: Draft[] = []
  if (info.formats.includes('search')) {
    if (business.brand_terms.length > 0) {
      drafts.push({ad_groups: [{final_url: business.url, name: 'Brand', product_ids: [], theme: 'brand'}], bid_strategy: info.search_bid_strategy, max_cpc_cents: cpc, name: `${business.name} - Brand`, type: 'search', weight: 0.1})
    }
    const share = 0.9 - (info.formats.includes('performance_max') ? 0.25 : 0) - (info.formats.includes('demand_gen') ? 0.15 : 0)
    for (const [category, items] of categories) {
      const label = titleCase(category)
      const ids = items.map((p) => p.id)
      const groups: Planned[] = [{final_url: pageFor(category), name: label, product_ids: ids, theme: 'generic'}]
      if (items.length > 0) groups.push({final_url: pageFor(category), name: `${label} - Products`, product_ids: ids, theme: 'products'})
      groups.push({final_url: pageFor(category), name: `${label} - Prices`, product_ids: ids, theme: 'prices'})
      drafts.push({
        ad_groups: groups,
        bid_strategy: info.search_bid_strategy,
        max_cpc_cents: cpc,
        name: `${business.name} - ${label}`,
        type: 'search',
        weight: products.length > 0 ? (share * items.length) / products.length : share / categories.length,
      })
    }
  }
  const top = categories.slice(0, 5)
  const imageGroups: Planned[] = top.map(([category, items]) => ({final_url: pageFor(category), name: titleCase(category), product_ids: items.slice(0, 3).map((p) => p.id), theme: 'image'}))
  if (imageGroups.length === 0) imageGroups.push({final_url: business.url, name: business.name, product_ids: [], theme: 'image'})
  if (info.formats.includes('performance_max')) {
    drafts.push({ad_groups: imageGroups, bid_strategy: 'maximize_conversions', max_cpc_cents: null, name: `${business.name} - Performance Max`, type: 'performance_max', weight: 0.25})
  }
  if (info.formats.includes('demand_gen')) {
    drafts.push({ad_groups: imageGroups.slice(0, 3), bid_strategy: 'maximize_conversions', max_cpc_cents: null, name: `${business.name} - Demand Gen`, type: 'demand_gen', weight: 0.15})
  }
  // Two names with one slug (a category called "Brand", say) would collide: number the later one.
  const used = new Set<string>()
  for (const d of drafts) {
    let name = d.name
    for (let n = 2; used.has(slugify(name)); n++) name = `${d.name} ${n}`
    used.add(slugify(name))
    d.name = name
  }
  const budgets = split(budget.daily_cents, drafts.map((d) => d.weight))
  session.text(`Planned ${drafts.length} campaigns over ${categories.length} categories and ${products.length} products.`)
  if (!/^en\b/i.test(business.language)) session.text(`The local planner writes English copy; the ads' language is ${business.language}, so review the texts before import.`)
  await call('set_account_plan', {
    campaigns: drafts.map((d, i) => ({ad_groups: d.ad_groups, bid_strategy: d.bid_strategy, daily_budget_cents: budgets[i], max_cpc_cents: d.max_cpc_cents, name: d.name, type: d.type})),
  })
  await call('finish', {summary: `${drafts.length} campaigns`})
}

/** Splits `total` cents by weight with the largest-remainder method, so the parts add up exactly. */
export function split(total: number, weights: number[]): number[] {
  const sum = weights.reduce((a, b) => a + b, 0) || 1
  const raw = weights.map((w) => (total * w) / sum)
  const parts = raw.map((r) => Math.max(1, Math.floor(r)))
  let left = total - parts.reduce((a, b) => a + b, 0)
  const order = raw.map((r, i) => [r - Math.floor(r), i] as const).sort((a, b) => b[0] - a[0] || a[1] - b[1])
  for (let k = 0; left > 0; k = (k + 1) % order.length, left--) parts[order[k][1]]++
  // The 1-cent floor can overshoot a tiny budget: take the excess back from the largest parts.
  while (left < 0) {
    const i = parts.indexOf(Math.max(...parts))
    if (parts[i] <= 1) break
    parts[i]--
    left++
  }
  return parts
}

async function build(call: Call, session: MissionSession): Promise<void> {
  const brief = await call<Brief>('get_brief')
  const {business, budget, campaign} = brief
  const byId = new Map(brief.products.map((p) => [p.id, p]))
  const maxCpc = campaign.max_cpc_cents ?? budget.max_cpc_cents ?? 100
  const own: string[] = []
  if (campaign.type === 'search') {
    for (const g of campaign.planned) {
      const items = g.product_ids.map((id) => byId.get(id)).filter((p): p is Product => p !== undefined)
      const category = items[0]?.category ?? g.name
      const keywords = keywordsFor(g.theme, category, items, business)
      own.push(...keywords.map((k) => k.text))
      const factor = g.theme === 'products' ? 1 : g.theme === 'prices' ? 0.9 : 0.8
      await call('upsert_ad_group', {
        ads: [adFor(g, category, items, business, budget)],
        final_url: g.final_url,
        keywords,
        max_cpc_cents: Math.max(1, Math.round(maxCpc * factor)),
        name: g.name,
        negatives: [],
      })
    }
    const negatives = [...GENERIC_NEGATIVES, ...business.avoid, ...business.competitors]
      .map(keywordOf)
      .filter((n) => n !== '' && !own.some((k) => ` ${k} `.includes(` ${n} `) || n.split(' ').every((w) => k.split(' ').includes(w))))
    await call('set_campaign_negatives', {negatives: [...new Set(negatives)].map((text) => ({match: 'phrase', text}))})
  } else {
    const name = brief.brand_kit?.business_name ?? fit(business.name, 25) ?? business.name.slice(0, 25)
    await call('set_assets', {
      asset_groups: campaign.planned.map((g) => {
        const items = g.product_ids.map((id) => byId.get(id)).filter((p): p is Product => p !== undefined)
        return assetGroupFor(g, items, business, budget, name, campaign.type)
      }),
    })
  }
  const check = await call<{errors: unknown[]}>('validate')
  if (check.errors.length > 0) session.text(`validate reports ${check.errors.length} errors the offline planner cannot fix`)
  await call('finish', {summary: campaign.name})
}

function keywordsFor(theme: string, category: string, items: Product[], business: Business): Keyword[] {
  const cat = keywordOf(category)
  const both = (text: string): Keyword[] => [
    {match: 'exact', text},
    {match: 'phrase', text},
  ]
  let list: Keyword[]
  if (theme === 'brand') list = business.brand_terms.flatMap((t) => both(keywordOf(t)))
  else if (theme === 'products') list = items.flatMap((p) => both(keywordOf(p.title)))
  else if (theme === 'prices') list = [`${cat} price`, `${cat} prices`, `best ${cat}`, `${cat} deals`, `${cat} sale`].map((text) => ({match: 'phrase', text: keywordOf(text)}))
  else list = [...both(cat), ...[`buy ${cat}`, `${cat} online`, `${cat} shop`].map((text): Keyword => ({match: 'phrase', text: keywordOf(text)}))]
  const seen = new Set<string>()
  return list.filter((k) => k.text !== '' && !seen.has(`${k.match}:${k.text}`) && seen.add(`${k.match}:${k.text}`))
}

function adFor(g: Planned, category: string, items: Product[], business: Business, budget: Budget) {
  const cat = titleCase(category)
  const min = items.length > 0 ? Math.min(...items.map((p) => p.price_cents)) : null
  const from = min === null ? null : price(min, budget.currency)
  const name = business.name
  const productTitles = items.map((p) => p.title)
  const priceLines = from ? [`${cat} From ${from}`, `Prices From ${from}`] : [`${cat} Deals`, 'Fair Prices']
  const headlines =
    g.theme === 'brand'
      ? [name, `${name} Official Site`, `Shop ${name} Online`, `${name} Store`, 'Order Online Today', 'Secure Checkout', `Discover ${name}`, `Visit ${name}`, 'See the Full Range', 'Browse Our Catalog']
      : [
          ...(g.theme === 'prices' ? priceLines : []),
          ...(g.theme === 'products' ? productTitles.slice(0, 6) : []),
          cat,
          `Shop ${cat}`,
          `${cat} at ${name}`,
          `Buy ${cat} Online`,
          ...priceLines,
          ...productTitles.slice(0, 4),
          `${items.length} ${cat} to Choose`,
          `Compare ${cat}`,
          'Order Online Today',
          'Secure Checkout',
          `Official ${name} Store`,
          'Browse the Full Range',
          `Discover ${name}`,
        ]
  const lower = category.toLowerCase()
  const descriptions = [
    firstSentence(business.description),
    g.theme === 'brand' ? `Shop the full ${name} range online. Order today.` : `Browse ${items.length} ${lower} at ${name} and order online today.`,
    from ? `Prices from ${from}. Compare options side by side and pick the right one for you.` : 'Compare options side by side and pick the right one for you.',
    g.theme === 'brand' ? `Order from the ${name} online store with secure checkout.` : `Order ${lower} from the ${name} online store with secure checkout.`,
    g.theme === 'brand' ? `${name}: chosen with care, ready to order online.` : `${name}: ${lower} chosen with care, ready to order online.`,
    'Secure checkout. Order online today.',
  ]
  const h = pick(headlines, 30, 15)
  for (const extra of ['Order Online', 'Shop Now', 'See the Range', 'Compare Options']) if (h.length < 3) h.push(...pick([extra], 30, 1).filter((x) => !h.includes(x)))
  const d = pick(descriptions, 90, 4)
  for (const extra of ['Order online today.', 'Compare options and choose yours.']) if (d.length < 2) d.push(extra)
  const p1 = pathOf(g.theme === 'brand' ? 'shop' : category)
  return {descriptions: d, final_url: g.final_url, headlines: h, path1: p1, path2: g.theme === 'prices' ? 'prices' : g.theme === 'products' ? 'products' : ''}
}

function assetGroupFor(g: Planned, items: Product[], business: Business, budget: Budget, businessName: string, type: CampaignType) {
  const cat = g.name
  const min = items.length > 0 ? Math.min(...items.map((p) => p.price_cents)) : null
  const from = min === null ? null : price(min, budget.currency)
  const pmax = type === 'performance_max'
  const headlineMax = pmax ? 30 : 40
  const headlines = pick([`Shop ${cat}`, cat, `${cat} at ${business.name}`, `Buy ${cat} Online`, from ? `${cat} From ${from}` : `${cat} Deals`, ...items.map((p) => p.title), 'Order Online Today', `Discover ${business.name}`], headlineMax, pmax ? 15 : 5)
  if (pmax && !headlines.some((x) => x.length <= 15)) headlines.unshift(pick([`Shop ${cat}`, 'Shop Now'], 15, 1)[0])
  const descriptions = pick([`Shop ${cat.toLowerCase()} online.`, firstSentence(business.description), from ? `${cat} from ${from}. Order online today from ${business.name}.` : `Order online today from ${business.name}.`, `Order ${cat.toLowerCase()} from the ${business.name} online store with secure checkout.`, 'Secure checkout. Order online today.'], 90, 5)
  return {
    business_name: businessName,
    call_to_action: 'Shop now',
    descriptions,
    final_url: g.final_url,
    headlines: pmax ? headlines.slice(0, 15) : headlines.slice(0, 5),
    long_headlines: pmax ? pick([`${cat} from ${business.name}, ready to order online`, firstSentence(business.description), `Shop ${cat.toLowerCase()} at ${business.name} with secure checkout`], 90, 5) : [],
    name: g.name,
    product_ids: items.map((p) => p.id),
    search_themes: pmax ? [keywordOf(cat), ...items.slice(0, 4).map((p) => keywordOf(p.title))].filter((t) => t !== '') : [],
  }
}
