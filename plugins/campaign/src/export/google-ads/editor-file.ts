import {fromCents} from '../../input/money.js'
import type {Campaign, Workspace} from '../../types.js'
import {BID_LABELS} from './search-csv.js'

const H = (n: number, name: string) => Array.from({length: n}, (_, i) => `${name} ${i + 1}`)

/**
 * Google Ads Editor columns for Performance Max and Demand Gen. Editor matches headers by name
 * (case and spaces ignored) and reads the filled cells of a row to know what the row is, so
 * there is no row-type column and a blank cell means "no change".
 */
export const EDITOR_HEADERS = [
  'Campaign', 'Campaign Type', 'Campaign Status', 'Budget', 'Budget type', 'Bid Strategy Type', 'Languages', 'Location', 'EU political ads',
  'Ad Group', 'Asset Group', 'Status', 'Ad type', 'Final URL', ...H(15, 'Headline'), ...H(5, 'Long headline'), ...H(5, 'Description'),
  'Business name', 'Call to action', 'Search theme',
]

const TYPE_LABEL: Record<Campaign['type'], string> = {demand_gen: 'Demand Gen', performance_max: 'Performance Max', search: 'Search'}

export function imageCampaigns(ws: Workspace): Campaign[] {
  return ws.account.campaigns.filter((c) => c.type === 'performance_max' || c.type === 'demand_gen')
}

export function editorRows(ws: Workspace): string[][] {
  const col = new Map(EDITOR_HEADERS.map((h, i) => [h, i]))
  const row = (cells: Record<string, string>) => {
    const r = new Array<string>(EDITOR_HEADERS.length).fill('')
    for (const [k, v] of Object.entries(cells)) r[col.get(k) as number] = v.replace(/[\t\r\n]+/g, ' ')
    return r
  }
  const list = (prefix: string, n: number, values: string[]) => Object.fromEntries(H(n, prefix).map((h, i) => [h, values[i] ?? '']))
  const status = ws.input.export.status === 'enabled' ? 'Enabled' : 'Paused'
  const language = ws.input.business.language.split('-')[0].toLowerCase()
  const rows: string[][] = [EDITOR_HEADERS]
  for (const c of imageCampaigns(ws)) {
    rows.push(
      row({
        'Bid Strategy Type': BID_LABELS[c.bid_strategy],
        Budget: fromCents(c.daily_budget_cents),
        'Budget type': 'Daily',
        Campaign: c.name,
        'Campaign Status': status,
        'Campaign Type': TYPE_LABEL[c.type],
        'EU political ads': ws.input.export.eu_political_ads ? 'Has EU political ads' : "Doesn't have EU political ads",
        Languages: language,
      }),
    )
    for (const loc of ws.input.business.locations) rows.push(row({Campaign: c.name, Location: loc, Status: 'Enabled'}))
    for (const g of c.asset_groups) {
      const texts = {'Business name': g.business_name, 'Call to action': g.call_to_action, 'Final URL': g.final_url, ...list('Headline', 15, g.headlines), ...list('Description', 5, g.descriptions)}
      if (c.type === 'performance_max') {
        rows.push(row({'Asset Group': g.name, Campaign: c.name, Status: 'Enabled', ...texts, ...list('Long headline', 5, g.long_headlines)}))
        for (const theme of g.search_themes) rows.push(row({'Asset Group': g.name, Campaign: c.name, 'Search theme': theme}))
      } else {
        rows.push(row({'Ad Group': g.name, Campaign: c.name, Status: 'Enabled'}))
        rows.push(row({'Ad Group': g.name, 'Ad type': 'Demand Gen image ad', Campaign: c.name, Status: 'Enabled', ...texts}))
      }
    }
  }
  return rows
}
