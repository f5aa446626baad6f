import {z} from 'zod'

import {slugify} from '../lib/slug.js'
import {BID_STRATEGIES, CAMPAIGN_TYPES, type BidStrategy, type Campaign, type CampaignType, type Workspace} from '../types.js'
import {CPC_FACTORS, type CpcKind, cpcEstimate, MIN_DAILY_CLICKS} from '../budget/cpc.js'
import {catalogSummary, categoryKey} from './catalog-summary.js'
import {defineTool, Refusal, type Tool} from './tool.js'

const hex = z.string().regex(/^#[0-9a-fA-F]{6}$/)

/** What a model needs to size campaigns: the CPC estimates and the minimum clicks a day. */
function budgetRule(ws: Workspace) {
  const b = ws.input.budget
  return {
    cpc_estimate_cents: Object.fromEntries(Object.keys(CPC_FACTORS).map((k) => [k, cpcEstimate(b, k as CpcKind)])),
    min_daily_clicks: MIN_DAILY_CLICKS,
    rule: `plan a campaign only if its daily budget buys at least ${MIN_DAILY_CLICKS} clicks at the CPC estimate of what it sells (value: median price under 15 USD-equivalent, premium: over 100, brand: brand searches, service: no catalog); group categories into fewer campaigns when the budget is thin`,
  }
}

export const getBusiness = defineTool({
  description:
    'The business, budget (money in integer cents), export settings, required campaign formats, brand colours and logo, and a summary of the catalog by category (products, price range and median, products per CPC price band, products with a photo file, the top products). Plan from the summary; page through a category with query_catalog only for what it does not say.',
  input: z.object({}),
  mutates: false,
  name: 'get_business',
  run: (ctx) => ({
    brand: {colors: ctx.ws.input.colors, logo: ctx.ws.input.logo},
    budget: ctx.ws.input.budget,
    budget_rule: budgetRule(ctx.ws),
    business: ctx.ws.input.business,
    catalog: catalogSummary(ctx.ws),
    export: ctx.ws.input.export,
    formats: ctx.ws.input.formats,
    search_bid_strategy: ctx.ws.input.search_bid_strategy ?? 'manual_cpc',
  }),
  summary: () => 'business, budget and catalog summary',
})

export const queryCatalog = defineTool({
  description: 'Products of the catalog, filtered by category and/or a text search in title and description, paginated (at most 100 a page; `total` is the number of matches). Prices are integer cents.',
  input: z.object({
    category: z.string().optional(),
    limit: z.number().int().min(1).max(100).default(50),
    offset: z.number().int().min(0).default(0),
    text: z.string().optional(),
  }),
  mutates: false,
  name: 'query_catalog',
  run(ctx, input) {
    const needle = input.text?.toLowerCase()
    const hits = ctx.ws.input.catalog.filter(
      (p) =>
        (input.category === undefined || p.category.toLowerCase() === input.category.toLowerCase()) &&
        (needle === undefined || p.title.toLowerCase().includes(needle) || p.description.toLowerCase().includes(needle)),
    )
    return {products: hits.slice(input.offset, input.offset + input.limit), total: hits.length}
  },
  summary: (i) => `products${i.category ? ` in ${i.category}` : ''}${i.text ? ` matching "${i.text}"` : ''} from ${i.offset}`,
})

export const setBrandKit = defineTool({
  description: 'Sets the brand kit image campaigns use: business name (at most 25 characters), 1-5 colours as #rrggbb, and a short tone of voice. The logo comes from [brand] logo.',
  input: z.object({
    business_name: z.string().min(1),
    colors: z.array(hex).min(1).max(5),
    tone: z.string().default(''),
  }),
  mutates: true,
  name: 'set_brand_kit',
  run(ctx, input) {
    ctx.ws.account.brand_kit = {business_name: input.business_name, colors: input.colors.map((c) => c.toLowerCase()), logo: ctx.ws.input.logo, tone: input.tone}
    return {ok: true}
  },
  summary: (i) => `brand kit for ${i.business_name}`,
})

const plannedGroup = z.object({
  categories: z.array(z.string()).default([]).describe('catalog categories whose products all belong to the group (instead of listing their ids)'),
  final_url: z.string(),
  name: z.string().min(1).max(255),
  product_ids: z.array(z.string()).default([]).describe('products of the group, besides those of its categories'),
  theme: z.string().default(''),
})

export const setAccountPlan = defineTool({
  description:
    'Replaces the account plan: campaigns with a type (search, performance_max, demand_gen), a daily budget in integer cents (the budgets must add up to the daily budget), a bid strategy, an optional max CPC in cents, and planned ad groups (search) or asset groups (image campaigns) with their theme, final URL and products (whole categories by name, and/or product ids). One campaign mission per campaign follows.',
  input: z.object({
    campaigns: z
      .array(
        z.object({
          ad_groups: z.array(plannedGroup).min(1),
          bid_strategy: z.enum(BID_STRATEGIES as [BidStrategy, ...BidStrategy[]]),
          daily_budget_cents: z.number().int().min(1),
          max_cpc_cents: z.number().int().min(1).nullable().default(null),
          name: z.string().min(1).max(255),
          type: z.enum(CAMPAIGN_TYPES as [CampaignType, ...CampaignType[]]),
        }),
      )
      .min(1),
  }),
  mutates: true,
  name: 'set_account_plan',
  run(ctx, input) {
    const ids = new Set(ctx.ws.input.catalog.map((p) => p.id))
    const categories = new Map<string, string[]>()
    for (const p of ctx.ws.input.catalog) {
      const key = categoryKey(p.category)
      const list = categories.get(key) ?? []
      list.push(p.id)
      categories.set(key, list)
    }
    const slugs = new Set<string>()
    for (const c of input.campaigns) {
      const slug = slugify(c.name)
      if (slugs.has(slug)) throw new Refusal(`two campaigns have the slug "${slug}"; give campaign "${c.name}" a distinct name`)
      slugs.add(slug)
      const names = new Set<string>()
      for (const g of c.ad_groups) {
        if (names.has(g.name.toLowerCase())) throw new Refusal(`campaign "${c.name}" plans the group "${g.name}" twice`)
        names.add(g.name.toLowerCase())
        const unknown = g.product_ids.find((id) => !ids.has(id))
        if (unknown !== undefined) throw new Refusal(`group "${g.name}" names product "${unknown}", which is not in the catalog`)
        const category = g.categories.find((x) => !categories.has(categoryKey(x)))
        if (category !== undefined) throw new Refusal(`group "${g.name}" names category "${category}", which is not in the catalog; categories: ${[...new Set(ctx.ws.input.catalog.map((p) => p.category))].join(', ') || 'none (no catalog)'}`)
      }
    }
    const previous = new Map(ctx.ws.account.campaigns.map((c) => [c.slug, c]))
    ctx.ws.account.campaigns = input.campaigns.map((c): Campaign => {
      const slug = slugify(c.name)
      const old = previous.get(slug)
      return {
        ad_groups: old?.type === c.type ? old.ad_groups : [],
        asset_groups: old?.type === c.type ? old.asset_groups : [],
        bid_strategy: c.bid_strategy,
        daily_budget_cents: c.daily_budget_cents,
        max_cpc_cents: c.max_cpc_cents,
        name: c.name,
        negatives: old?.type === c.type ? old.negatives : [],
        planned_ad_groups: c.ad_groups.map((g) => ({final_url: g.final_url, name: g.name, product_ids: productsOf(g, categories), theme: g.theme})),
        slug,
        type: c.type,
      }
    })
    for (const id of Object.keys(ctx.ws.missions)) {
      if (id.startsWith('campaign:') && !slugs.has(id.slice('campaign:'.length))) delete ctx.ws.missions[id]
    }
    for (const slug of slugs) {
      ctx.ws.missions[`campaign:${slug}`] ??= {attempts: 0, status: 'pending', usage: {cost_usd: null, input_tokens: 0, output_tokens: 0}}
    }
    const total = input.campaigns.reduce((a, c) => a + c.daily_budget_cents, 0)
    return {
      campaigns: input.campaigns.length,
      missions: [...slugs].map((s) => `campaign:${s}`),
      warning: total === ctx.ws.input.budget.daily_cents ? undefined : `budgets add up to ${total} cents, the daily budget is ${ctx.ws.input.budget.daily_cents}`,
    }
  },
  summary: (i) => `${i.campaigns.length} campaigns: ${i.campaigns.map((c) => c.name).join(', ')}`,
})

/** A group's products: those of its categories in catalog order, then the ids it lists. */
function productsOf(g: {categories: string[]; product_ids: string[]}, categories: Map<string, string[]>): string[] {
  const wanted = new Set(g.categories.map(categoryKey))
  const fromCategories = [...categories].filter(([key]) => wanted.has(key)).flatMap(([, ids]) => ids)
  return [...new Set([...fromCategories, ...g.product_ids])]
}

export const finish = defineTool({
  description: 'Ends the mission. Call it once the work is done.',
  input: z.object({summary: z.string().default('')}),
  mutates: false,
  name: 'finish',
  run(ctx) {
    if (ctx.slug === null) {
      if (ctx.ws.account.campaigns.length === 0) throw new Refusal('the account has no campaigns yet: call set_account_plan first')
      const images = ctx.ws.account.campaigns.some((c) => c.type !== 'search')
      if (images && ctx.ws.account.brand_kit === null) throw new Refusal('image campaigns need a brand kit: call set_brand_kit first')
    } else {
      const c = ctx.ws.account.campaigns.find((x) => x.slug === ctx.slug)
      if (c?.type === 'search') {
        const built = new Set(c.ad_groups.map((g) => g.name.toLowerCase()))
        const missing = c.planned_ad_groups.filter((g) => !built.has(g.name.toLowerCase())).map((g) => g.name)
        if (missing.length > 0) throw new Refusal(`ad groups not built yet: ${missing.join(', ')}`)
      } else if (c && c.asset_groups.length === 0) throw new Refusal('no asset groups yet: call set_assets first')
    }
    ctx.finished = true
    return {ok: true}
  },
  summary: (i) => i.summary || 'done',
})

export const PLAN_TOOLS: Tool[] = [getBusiness, queryCatalog, setBrandKit, setAccountPlan, finish]
