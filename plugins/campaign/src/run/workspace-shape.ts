import {BID_STRATEGIES, CAMPAIGN_TYPES, MATCH_TYPES} from '../types.js'

/**
 * The shape of workspace.json, checked on load so a hand edit that breaks it gets a message
 * naming the field instead of a crash in a later step. Hand-written rather than zod: `export`
 * never loads zod, which keeps its start-up inside the 1-second budget.
 */
type Shape =
  | 'absent'
  | 'null'
  | 'boolean'
  | 'number'
  | 'number?'
  | 'string'
  | 'string?'
  | readonly [Shape]
  | {anyOf: readonly Shape[]; described: string}
  | {enum: readonly string[]}
  | {values: Shape}
  | {[key: string]: Shape}

const keyword = {final_url: 'string?', match: {enum: MATCH_TYPES}, text: 'string'} as const
const negative = {match: {enum: MATCH_TYPES}, text: 'string'} as const

const SHAPE: Shape = {
  account: {
    brand_kit: {anyOf: ['null', {business_name: 'string', colors: ['string'], logo: 'string?', tone: 'string'}], described: 'must be null or an object with business_name, colors, logo and tone'},
    campaigns: [
      {
        ad_groups: [
          {
            ads: [{descriptions: ['string'], final_url: 'string', headlines: ['string'], path1: 'string', path2: 'string'}],
            final_url: 'string',
            keywords: [keyword],
            language: 'string?',
            max_cpc_cents: 'number',
            name: 'string',
            negatives: [negative],
          },
        ],
        asset_groups: [
          {
            business_name: 'string',
            call_to_action: 'string',
            descriptions: ['string'],
            final_url: 'string',
            headlines: ['string'],
            images: [{height: 'number', id: 'string', kind: {enum: ['landscape', 'portrait', 'square']}, path: 'string', width: 'number'}],
            language: 'string?',
            long_headlines: ['string'],
            name: 'string',
            product_ids: ['string'],
            search_themes: ['string'],
          },
        ],
        bid_strategy: {enum: BID_STRATEGIES},
        daily_budget_cents: 'number',
        max_cpc_cents: 'number?',
        name: 'string',
        negatives: [negative],
        planned_ad_groups: [{final_url: 'string', name: 'string', product_ids: ['string'], theme: 'string'}],
        slug: 'string',
        type: {enum: CAMPAIGN_TYPES},
      },
    ],
  },
  input: {
    budget: {currency: 'string', daily_cents: 'number', max_cpc_cents: 'number?'},
    business: {
      avoid: ['string'],
      brand_terms: ['string'],
      competitors: ['string'],
      description: 'string',
      goal: 'string',
      language: 'string',
      locations: ['string'],
      name: 'string',
      pages: [{name: 'string', url: 'string'}],
      url: 'string',
    },
    catalog: [{category: 'string', description: 'string', id: 'string', image: 'string?', price_cents: 'number', title: 'string', url: 'string'}],
    catalog_file: 'string?',
    colors: ['string'],
    export: {eu_political_ads: 'boolean', status: {enum: ['enabled', 'paused']}, url_suffix: 'string'},
    formats: [{enum: CAMPAIGN_TYPES}],
    logo: 'string?',
    // Absent in workspaces written before the field existed; the plan tools default it then.
    search_bid_strategy: {anyOf: ['absent', {enum: BID_STRATEGIES}], described: `must be one of ${BID_STRATEGIES.join(', ')}`},
  },
  // Keyed by mission name: every value is one mission's state.
  missions: {
    values: {
      attempts: 'number',
      status: {anyOf: [{enum: ['finished', 'pending', 'running']}, {failed: {reason: 'string'}}], described: 'must be "finished", "pending", "running" or {"failed": {"reason": ...}}'},
      usage: {cost_usd: 'number?', input_tokens: 'number', output_tokens: 'number'},
    },
  },
}

/** The first place where `value` departs from the workspace shape, or null. */
export function shapeProblem(value: unknown): null | string {
  const path: (number | string)[] = []
  const problem = check(value, SHAPE, path)
  if (problem === null) return null
  const at = path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('') || '(top level)'
  return `${at} ${problem}`
}

/**
 * The first problem under `value`, with `path` left pointing at it. The path is a stack of keys
 * and indexes, turned into text only on failure: a 10,000-keyword workspace is checked on every
 * `export`, and a string per visited field costs more than the check itself.
 */
function check(value: unknown, shape: Shape, path: (number | string)[]): null | string {
  if (shape === 'null') return value === null ? null : 'must be null'
  if (shape === 'absent') return value === undefined ? null : 'must be absent'
  if (typeof shape === 'string') {
    const optional = shape.endsWith('?')
    if (optional && (value === null || value === undefined)) return null
    const type = optional ? shape.slice(0, -1) : shape
    return typeof value === type && (type !== 'number' || Number.isFinite(value)) ? null : `must be ${optional ? `a ${type} or null` : `a ${type}`}`
  }
  if (Array.isArray(shape)) {
    if (!Array.isArray(value)) return 'must be an array'
    const [item] = shape as readonly [Shape]
    for (let i = 0; i < value.length; i++) {
      path.push(i)
      const problem = check(value[i], item, path)
      if (problem) return problem
      path.pop()
    }
    return null
  }
  if ('anyOf' in shape && Array.isArray(shape.anyOf)) {
    const depth = path.length
    for (const option of shape.anyOf as readonly Shape[]) {
      if (check(value, option, path) === null) return null
      path.length = depth
    }
    return shape.described as string
  }
  if ('values' in shape && typeof shape.values === 'object') {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'must be an object'
    for (const key of Object.keys(value)) {
      path.push(key)
      const problem = check((value as Record<string, unknown>)[key], shape.values as Shape, path)
      if (problem) return problem
      path.pop()
    }
    return null
  }
  if ('enum' in shape && Array.isArray(shape.enum)) {
    return typeof value === 'string' && shape.enum.includes(value) ? null : `must be one of ${shape.enum.join(', ')}`
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'must be an object'
  for (const key in shape as Record<string, Shape>) {
    path.push(key)
    const problem = check((value as Record<string, unknown>)[key], (shape as Record<string, Shape>)[key], path)
    if (problem) return problem
    path.pop()
  }
  return null
}
