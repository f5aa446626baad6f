import {z} from 'zod'

import {LIMITS, validateCampaign} from '../steps/validate.js'
import {MATCH_TYPES, type Campaign, type MatchType} from '../types.js'
import {catalogSummary} from './catalog-summary.js'
import {finish, queryCatalog} from './plan-tools.js'
import {defineTool, Refusal, type Tool, type ToolContext} from './tool.js'

const match = z.enum(MATCH_TYPES as [MatchType, ...MatchType[]])
const keyword = z.object({match, text: z.string()})
const productKeyword = keyword.extend({final_url: z.string().optional().describe("a product's own page, for a product-name keyword")})
const language = z.string().optional().describe('BCP 47 language the copy is written in; it must be the business language')

function campaignOf(ctx: ToolContext): Campaign {
  const c = ctx.ws.account.campaigns.find((x) => x.slug === ctx.slug)
  if (!c) throw new Refusal(`campaign "${ctx.slug}" is no longer in the plan`)
  return c
}

function issuesFor(ctx: ToolContext, c: Campaign, prefix?: string) {
  const i = ctx.ws.account.campaigns.indexOf(c)
  const all = validateCampaign(ctx.ws, c, `account.campaigns[${i}]`)
  return prefix === undefined ? all : all.filter((x) => x.path.startsWith(prefix))
}

export const getBrief = defineTool({
  description: 'The campaign to build: its plan (type, budget, bid strategy, planned groups with their products), the business, the brand kit and the Google Ads limits to respect.',
  input: z.object({}),
  mutates: false,
  name: 'get_brief',
  run(ctx) {
    const c = campaignOf(ctx)
    const ids = new Set(c.planned_ad_groups.flatMap((g) => g.product_ids))
    return {
      brand_kit: ctx.ws.account.brand_kit,
      budget: ctx.ws.input.budget,
      business: ctx.ws.input.business,
      campaign: {bid_strategy: c.bid_strategy, daily_budget_cents: c.daily_budget_cents, max_cpc_cents: c.max_cpc_cents, name: c.name, planned: c.planned_ad_groups, type: c.type},
      catalog: catalogSummary(ctx.ws),
      limits: LIMITS,
      products: ctx.ws.input.catalog.filter((p) => ids.has(p.id)),
    }
  },
  summary: () => 'campaign brief',
})

export const upsertAdGroup = defineTool({
  description:
    'Creates or replaces one planned ad group of a search campaign: max CPC in cents, final URL, keywords with match types (qualified search terms: never one bare generic word; a product-name keyword may carry the product page as final_url), the language of the copy, ad-group negatives and responsive search ads (3-15 headlines of at most 30 characters, 2-4 descriptions of at most 90, path1/path2 of at most 15). Returns the validation issues of the group.',
  input: z.object({
    ads: z
      .array(
        z.object({
          descriptions: z.array(z.string()),
          final_url: z.string().optional(),
          headlines: z.array(z.string()),
          path1: z.string().default(''),
          path2: z.string().default(''),
        }),
      )
      .min(1),
    final_url: z.string(),
    keywords: z.array(productKeyword).min(1),
    language,
    max_cpc_cents: z.number().int().min(1),
    name: z.string(),
    negatives: z.array(keyword).default([]),
  }),
  mutates: true,
  name: 'upsert_ad_group',
  run(ctx, input) {
    const c = campaignOf(ctx)
    if (c.type !== 'search') throw new Refusal(`"${c.name}" is a ${c.type} campaign: use set_assets`)
    const planned = c.planned_ad_groups.find((g) => g.name.toLowerCase() === input.name.toLowerCase())
    if (!planned) throw new Refusal(`ad group "${input.name}" is not in the plan; planned: ${c.planned_ad_groups.map((g) => g.name).join(', ')}`)
    const group = {
      ads: input.ads.map((a) => ({descriptions: a.descriptions, final_url: a.final_url ?? input.final_url, headlines: a.headlines, path1: a.path1, path2: a.path2})),
      final_url: input.final_url,
      keywords: input.keywords.map((k) => (k.final_url === undefined ? {match: k.match, text: k.text} : k)),
      ...(input.language === undefined ? {} : {language: input.language}),
      max_cpc_cents: input.max_cpc_cents,
      name: planned.name,
      negatives: input.negatives.map((n) => ({...n, source: 'model' as const})),
    }
    const at = c.ad_groups.findIndex((g) => g.name === planned.name)
    if (at === -1) {
      // Keep the plan's order so exports do not depend on which group the model built first.
      const order = c.planned_ad_groups.map((g) => g.name)
      c.ad_groups.push(group)
      c.ad_groups.sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name))
    } else c.ad_groups[at] = group
    const index = c.ad_groups.findIndex((g) => g.name === planned.name)
    const prefix = `account.campaigns[${ctx.ws.account.campaigns.indexOf(c)}].ad_groups[${index}]`
    return {issues: issuesFor(ctx, c, prefix), saved: planned.name}
  },
  summary: (i) => `ad group "${i.name}": ${i.keywords.length} keywords, ${i.ads.length} ads`,
})

export const setCampaignNegatives = defineTool({
  description: "Replaces the campaign-level negative keywords. A negative must never block one of the campaign's own keywords.",
  input: z.object({negatives: z.array(keyword)}),
  mutates: true,
  name: 'set_campaign_negatives',
  run(ctx, input) {
    const c = campaignOf(ctx)
    c.negatives = [...c.negatives.filter((n) => n.source === 'cross'), ...input.negatives.map((n) => ({...n, source: 'model' as const}))]
    return {negatives: input.negatives.length}
  },
  summary: (i) => `${i.negatives.length} campaign negatives`,
})

export const setAssets = defineTool({
  description:
    'Sets the asset groups of a performance_max campaign (3-15 headlines <= 30 with one <= 15, 1-5 long headlines <= 90, 2-5 descriptions <= 90 with one <= 60, business name <= 25, search themes) or the ad groups of a demand_gen campaign (1-5 headlines <= 40, 1-5 descriptions <= 90). Pictures are made afterwards from the named products, the logo and the brand colours.',
  input: z.object({
    asset_groups: z
      .array(
        z.object({
          business_name: z.string(),
          call_to_action: z.string().default('Shop now'),
          descriptions: z.array(z.string()),
          final_url: z.string(),
          headlines: z.array(z.string()),
          language,
          long_headlines: z.array(z.string()).default([]),
          name: z.string().min(1),
          product_ids: z.array(z.string()).default([]),
          search_themes: z.array(z.string()).default([]),
        }),
      )
      .min(1),
  }),
  mutates: true,
  name: 'set_assets',
  run(ctx, input) {
    const c = campaignOf(ctx)
    if (c.type === 'search') throw new Refusal(`"${c.name}" is a search campaign: use upsert_ad_group`)
    const ids = new Set(ctx.ws.input.catalog.map((p) => p.id))
    for (const g of input.asset_groups) {
      const unknown = g.product_ids.find((id) => !ids.has(id))
      if (unknown !== undefined) throw new Refusal(`asset group "${g.name}" names product "${unknown}", which is not in the catalog`)
    }
    const old = new Map(c.asset_groups.map((g) => [g.name, g.images]))
    c.asset_groups = input.asset_groups.map((g) => ({...g, images: old.get(g.name) ?? []}))
    return {asset_groups: c.asset_groups.length, issues: issuesFor(ctx, c).filter((x) => !x.code.startsWith('image_'))}
  },
  summary: (i) => `${i.asset_groups.length} asset groups`,
})

export const validate = defineTool({
  description: "Checks the campaign against Google Ads limits and the account's rules; returns the issues with code, severity, path and message.",
  input: z.object({}),
  mutates: false,
  name: 'validate',
  run(ctx) {
    const c = campaignOf(ctx)
    // Pictures come after the missions, so their absence is not the model's to fix.
    const issues = issuesFor(ctx, c).filter((x) => !x.code.startsWith('image_'))
    return {errors: issues.filter((i) => i.severity === 'error'), warnings: issues.filter((i) => i.severity === 'warning')}
  },
  summary: () => 'validate the campaign',
})

export const CAMPAIGN_TOOLS: Tool[] = [getBrief, queryCatalog, upsertAdGroup, setCampaignNegatives, setAssets, validate, finish]
