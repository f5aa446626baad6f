/** The records inside workspace.json. Money is integer cents; enumerations are snake_case. */

export type CampaignType = 'demand_gen' | 'performance_max' | 'search'
export type MatchType = 'broad' | 'exact' | 'phrase'
export type BidStrategy = 'manual_cpc' | 'maximize_clicks' | 'maximize_conversion_value' | 'maximize_conversions'
export type ExportStatus = 'enabled' | 'paused'

export const CAMPAIGN_TYPES: readonly CampaignType[] = ['search', 'performance_max', 'demand_gen']
export const MATCH_TYPES: readonly MatchType[] = ['exact', 'phrase', 'broad']
export const BID_STRATEGIES: readonly BidStrategy[] = ['manual_cpc', 'maximize_clicks', 'maximize_conversions', 'maximize_conversion_value']

export interface Page {
  name: string
  url: string
}

export interface Business {
  avoid: string[]
  brand_terms: string[]
  competitors: string[]
  description: string
  goal: string
  language: string
  locations: string[]
  name: string
  pages: Page[]
  url: string
}

export interface Budget {
  currency: string
  daily_cents: number
  max_cpc_cents: null | number
}

export interface ExportConfig {
  eu_political_ads: boolean
  status: ExportStatus
  url_suffix: string
}

export interface Product {
  category: string
  description: string
  id: string
  /** Absolute path or http(s) URL of the product photo; null when the catalog has none. */
  image: null | string
  price_cents: number
  title: string
  url: string
}

export interface Input {
  budget: Budget
  business: Business
  catalog: Product[]
  /** Name of the catalog file as given in `catalog.file`; null without a catalog. */
  catalog_file: null | string
  /** Brand colours from `[brand] colors`, `#rrggbb`. */
  colors: string[]
  export: ExportConfig
  /** Campaign types the plan must cover, from `[campaigns] formats`. */
  formats: CampaignType[]
  /** Bid strategy for Search campaigns, from `[campaigns] search_bid_strategy`. */
  search_bid_strategy: BidStrategy
  /** The logo copy, relative to the run directory (`input/<file>`), or null. */
  logo: null | string
}

export interface Keyword {
  /** A product's own page, for a product-name keyword; the ad group's final URL otherwise. */
  final_url?: string
  match: MatchType
  text: string
}

export interface Negative {
  match: MatchType
  /** `cross` negatives belong to the cross-negatives step, which rebuilds them on every run. */
  source: 'cross' | 'model'
  text: string
}

export interface ResponsiveSearchAd {
  descriptions: string[]
  final_url: string
  headlines: string[]
  path1: string
  path2: string
}

export interface AdGroup {
  ads: ResponsiveSearchAd[]
  final_url: string
  keywords: Keyword[]
  /** BCP 47 language the copy is written in, as the provider declared it. */
  language?: string
  max_cpc_cents: number
  name: string
  negatives: Negative[]
}

export interface PlannedAdGroup {
  final_url: string
  name: string
  product_ids: string[]
  theme: string
}

export type ImageKind = 'landscape' | 'portrait' | 'square'

export interface ImageRecord {
  height: number
  id: string
  kind: ImageKind
  /** Relative to the run directory. */
  path: string
  width: number
}

export interface AssetGroup {
  business_name: string
  call_to_action: string
  descriptions: string[]
  final_url: string
  headlines: string[]
  images: ImageRecord[]
  /** BCP 47 language the copy is written in, as the provider declared it. */
  language?: string
  long_headlines: string[]
  name: string
  product_ids: string[]
  search_themes: string[]
}

export interface Campaign {
  ad_groups: AdGroup[]
  asset_groups: AssetGroup[]
  bid_strategy: BidStrategy
  daily_budget_cents: number
  max_cpc_cents: null | number
  name: string
  negatives: Negative[]
  planned_ad_groups: PlannedAdGroup[]
  slug: string
  type: CampaignType
}

export interface BrandKit {
  business_name: string
  colors: string[]
  logo: null | string
  tone: string
}

export interface Account {
  brand_kit: BrandKit | null
  campaigns: Campaign[]
}

/** `retry: false` marks a failure another attempt cannot fix (see missions/failure.ts). */
export type MissionStatus = 'finished' | 'pending' | 'running' | {failed: {reason: string; retry?: false}}

export interface Usage {
  cost_usd: null | number
  input_tokens: number
  output_tokens: number
}

export interface MissionState {
  attempts: number
  status: MissionStatus
  usage: Usage
}

export interface Workspace {
  account: Account
  input: Input
  missions: Record<string, MissionState>
  version: 1
}

export type Severity = 'error' | 'warning'

export interface Issue {
  code: string
  message: string
  path: string
  severity: Severity
}

export interface Totals {
  cost_usd: null | number
  failed_missions: number
  input_tokens: number
  missions: number
  output_tokens: number
}

export type RunStatus = 'incomplete' | 'invalid' | 'success'
