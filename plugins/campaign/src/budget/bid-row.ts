import {fromCents} from '../input/money.js'
import type {Campaign, Workspace} from '../types.js'
import {campaignCpc} from './cpc.js'

/** One campaign's line of the "Budget and bids" tables of report.md and report.html, as text. */
export interface BidRow {
  /** "12.50 USD (standard)", or "unknown" when the currency has no CPC estimate. */
  cpcEstimate: string
  /** Clicks a day the budget buys at the estimate; "-" when unknown. */
  clicks: string
  /** Lowest and highest max CPC of the ad groups ("0.80-1.20 USD"), "-" without ad groups. */
  range: string
  /** Share of the account's daily budget ("25.0%"), "-" when the budget is 0. */
  share: string
}

export function bidRow(ws: Workspace, c: Campaign): BidRow {
  const cur = ws.input.budget.currency
  const cpcs = c.ad_groups.map((g) => g.max_cpc_cents)
  const est = campaignCpc(ws, c)
  return {
    clicks: est.cents === null ? '-' : String(Math.floor(c.daily_budget_cents / est.cents)),
    cpcEstimate: est.cents === null ? 'unknown' : `${fromCents(est.cents)} ${cur} (${est.kind})`,
    range: cpcs.length === 0 ? '-' : `${fromCents(Math.min(...cpcs))}-${fromCents(Math.max(...cpcs))} ${cur}`,
    share: ws.input.budget.daily_cents > 0 ? `${((100 * c.daily_budget_cents) / ws.input.budget.daily_cents).toFixed(1)}%` : '-',
  }
}
