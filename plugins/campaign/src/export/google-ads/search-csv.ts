import {fromCents} from '../../input/money.js'
import type {BidStrategy, Campaign, MatchType, Workspace} from '../../types.js'

/** The five bulk-upload files, with the headers Google Ads itself exports. */
export const SEARCH_FILES = ['1-campaign.csv', '2-ad-groups.csv', '3-keywords.csv', '4-negative-keywords.csv', '5-responsive-search-ads.csv'] as const

const HEADLINES = Array.from({length: 15}, (_, i) => `Headline ${i + 1}`)
const DESCRIPTIONS = Array.from({length: 4}, (_, i) => `Description ${i + 1}`)

export const HEADERS: Record<(typeof SEARCH_FILES)[number], string[]> = {
  '1-campaign.csv': ['Row Type', 'Action', 'Campaign status', 'Campaign', 'Campaign type', 'Networks', 'Budget', 'Budget type', 'Bid strategy type', 'Language', 'Location', 'Final URL suffix', 'EU political ads'],
  '2-ad-groups.csv': ['Row Type', 'Action', 'Ad group status', 'Campaign', 'Ad group', 'Ad group type', 'Default max. CPC'],
  '3-keywords.csv': ['Row Type', 'Action', 'Keyword status', 'Campaign', 'Ad group', 'Keyword', 'Type', 'Final URL'],
  '4-negative-keywords.csv': ['Row Type', 'Action', 'Keyword status', 'Level', 'Campaign', 'Ad group', 'Negative keyword', 'Type'],
  '5-responsive-search-ads.csv': ['Row Type', 'Action', 'Ad status', 'Campaign', 'Ad group', 'Ad type', ...HEADLINES, ...DESCRIPTIONS, 'Path 1', 'Path 2', 'Final URL'],
}

export const BID_LABELS: Record<BidStrategy, string> = {
  manual_cpc: 'Manual CPC',
  maximize_clicks: 'Maximize clicks',
  maximize_conversion_value: 'Maximize conversion value',
  maximize_conversions: 'Maximize conversions',
}

const MATCH_LABELS: Record<MatchType, string> = {broad: 'Broad match', exact: 'Exact match', phrase: 'Phrase match'}

/** Rows of each Search file (header first). Campaigns of other types are not in these files. */
export function searchRows(ws: Workspace): Record<(typeof SEARCH_FILES)[number], string[][]> {
  const search = ws.account.campaigns.filter((c) => c.type === 'search')
  const status = ws.input.export.status === 'enabled' ? 'Enabled' : 'Paused'
  const language = ws.input.business.language.split('-')[0].toLowerCase()
  const eu = ws.input.export.eu_political_ads ? 'Has EU political ads' : "Doesn't have EU political ads"
  const out = Object.fromEntries(SEARCH_FILES.map((f) => [f, [HEADERS[f]]])) as Record<(typeof SEARCH_FILES)[number], string[][]>
  for (const c of search) {
    out['1-campaign.csv'].push(['Campaign', 'Add', status, c.name, 'Search', 'Google search', fromCents(c.daily_budget_cents), 'Daily', BID_LABELS[c.bid_strategy], language, '', suffix(ws, c), eu])
    // Google Ads reads one location per row ("Enter each location on its own row"): a cell
    // joining several is read as one unknown place name. Blank cells mean "no change".
    for (const loc of ws.input.business.locations) out['1-campaign.csv'].push(['Location', 'Add', '', c.name, '', '', '', '', '', '', loc, '', ''])
    for (const n of c.negatives) out['4-negative-keywords.csv'].push(['Negative keyword', 'Add', 'Enabled', 'Campaign', c.name, '', n.text, MATCH_LABELS[n.match]])
    for (const g of c.ad_groups) {
      out['2-ad-groups.csv'].push(['Ad group', 'Add', 'Enabled', c.name, g.name, 'Standard', fromCents(g.max_cpc_cents)])
      for (const k of g.keywords) out['3-keywords.csv'].push(['Keyword', 'Add', 'Enabled', c.name, g.name, k.text, MATCH_LABELS[k.match], k.final_url ?? ''])
      for (const n of g.negatives) out['4-negative-keywords.csv'].push(['Negative keyword', 'Add', 'Enabled', 'Ad group', c.name, g.name, n.text, MATCH_LABELS[n.match]])
      for (const ad of g.ads) {
        const h = HEADLINES.map((_, i) => ad.headlines[i] ?? '')
        const d = DESCRIPTIONS.map((_, i) => ad.descriptions[i] ?? '')
        out['5-responsive-search-ads.csv'].push(['Ad', 'Add', 'Enabled', c.name, g.name, 'Responsive search ad', ...h, ...d, ad.path1, ad.path2, ad.final_url])
      }
    }
  }
  return out
}

/** `{campaign}` in the configured suffix becomes the campaign's slug, so each campaign is tracked apart. */
function suffix(ws: Workspace, c: Campaign): string {
  return ws.input.export.url_suffix.replaceAll('{campaign}', c.slug)
}
