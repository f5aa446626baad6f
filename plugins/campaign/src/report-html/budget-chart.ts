import {fromCents} from '../input/money.js'
import type {Campaign} from '../types.js'
import {esc} from './html.js'

/** Bar colours, each with at least 3:1 contrast against the white page (WCAG non-text contrast). */
const COLOURS = ['#1a73e8', '#188038', '#b06000', '#a142f4', '#d93025', '#007b83', '#5f6368', '#9c27b0']

/**
 * The daily budget split as an SVG bar chart drawn in the page (no script, no network). The
 * numbers are also in the table that follows it, which screen readers use; the chart is an
 * image with a text summary.
 */
export function budgetChart(campaigns: Campaign[], dailyCents: number, currency: string): string {
  if (campaigns.length === 0) return ''
  const rowH = 28
  const labelW = 300
  const barW = 420
  const width = labelW + barW + 140
  const height = campaigns.length * rowH + 8
  const max = Math.max(1, ...campaigns.map((c) => c.daily_budget_cents))
  const rows = campaigns
    .map((c, i) => {
      const y = 4 + i * rowH
      const w = Math.max(1, Math.round((barW * c.daily_budget_cents) / max))
      const share = dailyCents > 0 ? `${((100 * c.daily_budget_cents) / dailyCents).toFixed(1)}%` : ''
      const name = c.name.length > 42 ? `${c.name.slice(0, 41)}…` : c.name
      return `<text x="${labelW - 8}" y="${y + 18}" text-anchor="end">${esc(name)}</text><rect x="${labelW}" y="${y + 4}" width="${w}" height="${rowH - 10}" rx="3" fill="${COLOURS[i % COLOURS.length]}"/><text x="${labelW + w + 6}" y="${y + 18}">${esc(`${fromCents(c.daily_budget_cents)} ${currency}${share ? ` · ${share}` : ''}`)}</text>`
    })
    .join('')
  const summary = campaigns.map((c) => `${c.name} ${fromCents(c.daily_budget_cents)} ${currency}`).join(', ')
  return `<figure class="chart"><svg role="img" aria-labelledby="budget-chart-title" viewBox="0 0 ${width} ${height}" width="100%" preserveAspectRatio="xMinYMin meet"><title id="budget-chart-title">Daily budget per campaign: ${esc(summary)}</title>${rows}</svg><figcaption>Daily budget per campaign, ${esc(fromCents(dailyCents))} ${esc(currency)} in all.</figcaption></figure>`
}
