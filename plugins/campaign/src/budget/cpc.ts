import type {Budget, Campaign, Product, Workspace} from '../types.js'

/**
 * The budget rule: a campaign is worth running only if its daily budget buys at least this many
 * clicks at the CPC estimate. Fewer clicks a day teach the bidding nothing and spread a thin
 * budget over campaigns that each stay invisible; docs/campaign.md explains the figures.
 */
export const MIN_DAILY_CLICKS = 10

/**
 * Typical Search CPC for a retail category, in units of each currency (about 1 US dollar; from
 * public industry averages, rounded). Other currencies have no estimate unless `max_cpc` is set.
 */
export const BASE_CPC: Readonly<Record<string, number>> = {
  AUD: 1.5, BRL: 2.5, CAD: 1.4, CHF: 1, CLP: 900, COP: 4000, CZK: 23, DKK: 7, EUR: 0.9, GBP: 0.8, HKD: 8, INR: 40, JPY: 150,
  KRW: 1300, MXN: 17, NOK: 10, NZD: 1.6, PLN: 4, SEK: 10, SGD: 1.3, TRY: 30, USD: 1, ZAR: 18,
}

/** How the estimate scales with what is sold; see docs/campaign.md. */
export const CPC_FACTORS = {brand: 0.4, premium: 1.5, service: 2, standard: 1, value: 0.6} as const
export type CpcKind = keyof typeof CPC_FACTORS

/** Products by price band, in "about a dollar" units: under 15 value, over 100 premium. */
export interface PriceBands {
  premium: number
  standard: number
  value: number
}

export function priceBand(priceCents: number, currency: string): keyof PriceBands {
  const units = priceCents / 100 / (BASE_CPC[currency] ?? 1)
  return units < 15 ? 'value' : units > 100 ? 'premium' : 'standard'
}

export function priceBands(products: readonly Product[], currency: string): PriceBands {
  const bands: PriceBands = {premium: 0, standard: 0, value: 0}
  for (const p of products) bands[priceBand(p.price_cents, currency)]++
  return bands
}

/**
 * The band of the median price, from band counts alone: bands are price ranges in order, so the
 * median's band is the one where the running count passes the median's index. Band counts add
 * up across categories, so a campaign of several categories gets its kind from their summaries.
 */
export function kindOfBands(bands: PriceBands): CpcKind {
  const n = bands.value + bands.standard + bands.premium
  if (n === 0) return 'service'
  const median = Math.floor(n / 2)
  return median < bands.value ? 'value' : median < bands.value + bands.standard ? 'standard' : 'premium'
}

export function sumBands(parts: readonly {price_bands: PriceBands}[]): PriceBands {
  const sum: PriceBands = {premium: 0, standard: 0, value: 0}
  for (const {price_bands: b} of parts) for (const k of ['premium', 'standard', 'value'] as const) sum[k] += b[k]
  return sum
}

/** The kind of the median product price (see kindOfBands). */
export function kindOfProducts(products: readonly Product[], currency: string): CpcKind {
  return kindOfBands(priceBands(products, currency))
}

/** The CPC estimate in cents for this kind of search, never above `max_cpc`; null when unknown. */
export function cpcEstimate(budget: Budget, kind: CpcKind): null | number {
  const base = BASE_CPC[budget.currency]
  if (base === undefined) return budget.max_cpc_cents
  const cents = Math.max(1, Math.round(base * 100 * CPC_FACTORS[kind]))
  return budget.max_cpc_cents === null ? cents : Math.min(cents, budget.max_cpc_cents)
}

/** Cents a day a campaign of this kind needs to buy MIN_DAILY_CLICKS clicks; null when unknown. */
export function minimumDailyBudget(budget: Budget, kind: CpcKind): null | number {
  const cpc = cpcEstimate(budget, kind)
  return cpc === null ? null : cpc * MIN_DAILY_CLICKS
}

/**
 * What a campaign is expected to pay per click: the estimate for what it sells (its planned
 * products; brand searches when every keyword holds a brand term; a service without products),
 * capped by its own highest bid.
 */
export function campaignCpc(ws: Workspace, c: Campaign): {cents: null | number; kind: CpcKind} {
  const ids = new Set(c.planned_ad_groups.flatMap((g) => g.product_ids))
  const products = ws.input.catalog.filter((p) => ids.has(p.id))
  const brand = ws.input.business.brand_terms.map((t) => t.toLowerCase().trim()).filter(Boolean)
  const keywords = c.ad_groups.flatMap((g) => g.keywords.map((k) => k.text.toLowerCase()))
  const branded = c.type === 'search' && keywords.length > 0 && brand.length > 0 && keywords.every((k) => brand.some((b) => k.includes(b)))
  const kind: CpcKind = branded ? 'brand' : products.length > 0 ? kindOfProducts(products, ws.input.budget.currency) : ws.input.catalog.length > 0 ? 'standard' : 'service'
  let cents = cpcEstimate(ws.input.budget, kind)
  const bids = [c.max_cpc_cents, ...(c.bid_strategy === 'manual_cpc' ? [Math.max(0, ...c.ad_groups.map((g) => g.max_cpc_cents))] : [])].filter((b): b is number => b !== null && b > 0)
  if (cents !== null && bids.length > 0) cents = Math.min(cents, Math.max(...bids))
  return {cents, kind}
}
