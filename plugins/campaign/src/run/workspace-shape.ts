import {BID_STRATEGIES, CAMPAIGN_TYPES, MATCH_TYPES} from '../types.js'

/**
 * The shape of workspace.json, checked on load so a hand edit that breaks it gets a message
 * naming the field instead of a crash in a later step. Hand-written rather than zod: `export`
 * never loads zod, which keeps its start-up inside the 1-second budget.
 */
type Shape = 'boolean' | 'number' | 'number?' | 'string' | 'string?' | readonly [Shape] | {enum: readonly string[]} | {[key: string]: Shape}

const keyword = {final_url: 'string?', match: {enum: MATCH_TYPES}, text: 'string'} as const
const negative = {match: {enum: MATCH_TYPES}, text: 'string'} as const

const SHAPE: Shape = {
  account: {
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
    catalog: [{category: 'string', id: 'string', image: 'string?', price_cents: 'number', title: 'string', url: 'string'}],
    colors: ['string'],
    export: {eu_political_ads: 'boolean', status: {enum: ['enabled', 'paused']}, url_suffix: 'string'},
    formats: [{enum: CAMPAIGN_TYPES}],
    logo: 'string?',
  },
}

/** The first place where `value` departs from the workspace shape, or null. */
export function shapeProblem(value: unknown): null | string {
  return check(value, SHAPE, '')
}

function check(value: unknown, shape: Shape, path: string): null | string {
  const at = path || '(top level)'
  if (typeof shape === 'string') {
    const optional = shape.endsWith('?')
    if (optional && (value === null || value === undefined)) return null
    const type = optional ? shape.slice(0, -1) : shape
    return typeof value === type && (type !== 'number' || Number.isFinite(value)) ? null : `${at} must be ${optional ? `a ${type} or null` : `a ${type}`}`
  }
  if (Array.isArray(shape)) {
    if (!Array.isArray(value)) return `${at} must be an array`
    for (const [i, item] of value.entries()) {
      const problem = check(item, shape[0], `${path}[${i}]`)
      if (problem) return problem
    }
    return null
  }
  if ('enum' in shape && Array.isArray(shape.enum)) {
    return typeof value === 'string' && shape.enum.includes(value) ? null : `${at} must be one of ${shape.enum.join(', ')}`
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return `${at} must be an object`
  for (const [key, sub] of Object.entries(shape as Record<string, Shape>)) {
    const problem = check((value as Record<string, unknown>)[key], sub, path ? `${path}.${key}` : key)
    if (problem) return problem
  }
  return null
}
