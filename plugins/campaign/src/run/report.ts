import {fromCents} from '../input/money.js'
import {bidRow} from '../budget/bid-row.js'
import {MIN_DAILY_CLICKS} from '../budget/cpc.js'
import {BID_LABELS} from '../export/google-ads/search-csv.js'
import type {UrlResult} from '../steps/url-check.js'
import type {Issue, RunStatus, Totals, Workspace} from '../types.js'

export interface ReportInput {
  exitCode: number
  files: string[]
  issues: Issue[]
  model: null | string
  provider: string
  runId: string
  status: RunStatus
  totals: Totals
  /** null when the URL check was skipped. */
  urls: null | UrlResult[]
  ws: Workspace
}

const cell = (s: number | string) => String(s).replaceAll('|', '\\|').replace(/\s+/g, ' ')

/** report.md: header, status line, Summary, Budget and bids, Validation, URL check, Usage, How to import. */
export function renderReport(r: ReportInput): string {
  const {ws} = r
  const cur = ws.input.budget.currency
  const out: string[] = []
  out.push(`# Campaign run ${r.runId}`, '')
  out.push(`${ws.input.business.name} (${ws.input.business.url}) · provider \`${r.provider}\`${r.model ? ` · model \`${r.model}\`` : ''} · ${ws.input.catalog.length} products`, '')
  const word = {incomplete: 'INCOMPLETE', invalid: 'INVALID', success: 'SUCCESS'}[r.status]
  const why =
    r.status === 'success'
      ? 'the import files are ready'
      : r.status === 'invalid'
        ? `${r.issues.filter((i) => i.severity === 'error').length} errors to fix; no import file was written`
        : `${r.totals.failed_missions} of ${r.totals.missions} missions did not finish; run \`toolkit campaign generate --resume <this run directory>\``
  out.push(`**Status: ${word}** (exit ${r.exitCode}): ${why}.`, '')

  out.push('## Summary', '')
  if (ws.account.campaigns.length === 0) out.push('No campaigns were planned.', '')
  else {
    out.push('| Campaign | Type | Daily budget | Ad groups | Keywords | Ads | Negatives |', '|---|---|---:|---:|---:|---:|---:|')
    for (const c of ws.account.campaigns) {
      const groups = c.type === 'search' ? c.ad_groups.length : c.asset_groups.length
      const keywords = c.ad_groups.reduce((a, g) => a + g.keywords.length, 0)
      const ads = c.type === 'search' ? c.ad_groups.reduce((a, g) => a + g.ads.length, 0) : c.asset_groups.length
      const negs = c.negatives.length + c.ad_groups.reduce((a, g) => a + g.negatives.length, 0)
      out.push(`| ${cell(c.name)} | ${c.type} | ${fromCents(c.daily_budget_cents)} ${cur} | ${groups} | ${keywords} | ${ads} | ${negs} |`)
    }
    out.push('')
  }

  out.push('## Budget and bids', '')
  const sum = ws.account.campaigns.reduce((a, c) => a + c.daily_budget_cents, 0)
  out.push(`Daily budget ${fromCents(ws.input.budget.daily_cents)} ${cur}; campaigns add up to ${fromCents(sum)} ${cur}. Max CPC: ${ws.input.budget.max_cpc_cents === null ? 'not set' : `${fromCents(ws.input.budget.max_cpc_cents)} ${cur}`}.`, '')
  if (ws.account.campaigns.length > 0) {
    out.push(
      `Budget rule: a campaign is planned only if its daily budget buys at least ${MIN_DAILY_CLICKS} clicks at the CPC estimate of what it sells (docs/campaign.md, "Budget rule").`,
      '',
      '| Campaign | Share | Bid strategy | Max CPC (ad groups) | CPC estimate | Clicks a day | Categories |',
      '|---|---:|---|---|---:|---:|---|',
    )
    const byId = new Map(ws.input.catalog.map((p) => [p.id, p]))
    let grouped = 0
    for (const c of ws.account.campaigns) {
      const {clicks, cpcEstimate, range, share} = bidRow(ws, c)
      const cats = [...new Set(c.planned_ad_groups.flatMap((g) => g.product_ids.map((id) => byId.get(id)?.category ?? '')).filter(Boolean))]
      if (c.type === 'search' && cats.length > 1) grouped++
      out.push(`| ${cell(c.name)} | ${share} | ${BID_LABELS[c.bid_strategy]} | ${range} | ${cpcEstimate} | ${clicks} | ${cell(cats.length > 3 ? `${cats.slice(0, 3).join(', ')} and ${cats.length - 3} more` : cats.join(', ') || '-')} |`)
    }
    out.push('')
    if (grouped > 0) {
      out.push(`${grouped} Search campaign${grouped === 1 ? ' covers' : 's cover'} several categories: with this daily budget, one campaign per category would buy fewer than ${MIN_DAILY_CLICKS} clicks a day each, so categories were grouped; each keeps its own ad groups. Raise \`[budget] daily\` to split them.`, '')
    }
    const labels: Record<string, string> = {demand_gen: 'Demand Gen', performance_max: 'Performance Max', search: 'Search'}
    for (const type of ws.input.formats) {
      if (ws.account.campaigns.some((c) => c.type === type)) continue
      out.push(`No ${labels[type]} campaign although \`[campaigns] formats\` asks for one: the planner left it out (a budget that would not buy ${MIN_DAILY_CLICKS} clicks a day next to the other campaigns, or no product photos for its pictures; its reason is in the plan mission's \`agent_text\` events).`, '')
    }
  }

  out.push('## Validation', '')
  const errors = r.issues.filter((i) => i.severity === 'error' && !i.code.startsWith('url_'))
  const warnings = r.issues.filter((i) => i.severity === 'warning' && !i.code.startsWith('url_'))
  out.push(`${errors.length} errors, ${warnings.length} warnings.`, '')
  if (errors.length + warnings.length > 0) {
    out.push('| Severity | Code | Path | Message |', '|---|---|---|---|')
    for (const i of [...errors, ...warnings].slice(0, 500)) out.push(`| ${i.severity} | \`${i.code}\` | \`${cell(i.path)}\` | ${cell(i.message)} |`)
    if (errors.length + warnings.length > 500) out.push('', `(${errors.length + warnings.length - 500} more in events.ndjson)`)
    out.push('')
  }

  out.push('## URL check', '')
  if (r.urls === null) out.push('Skipped (`--skip-url-check`).', '')
  else {
    const bad = r.urls.filter((u) => !u.ok)
    out.push(`${r.urls.length} final URLs checked, ${bad.length} failed.`, '')
    if (r.urls.length > 0) {
      out.push('| URL | Status | Result |', '|---|---:|---|')
      for (const u of r.urls) out.push(`| ${cell(u.url)} | ${u.status ?? '-'} | ${u.ok ? (u.final_url ? `ok, redirects to ${cell(u.final_url)}` : 'ok') : cell(u.reason ?? 'failed')} |`)
      out.push('')
    }
  }

  out.push('## Usage', '')
  out.push(`${r.totals.missions} missions, ${r.totals.failed_missions} failed; ${r.totals.input_tokens} input tokens, ${r.totals.output_tokens} output tokens; cost ${r.totals.cost_usd === null ? 'not reported' : `${r.totals.cost_usd.toFixed(4)} USD`}.`, '')
  out.push('| Mission | Status | Attempts | Input tokens | Output tokens | Cost (USD) |', '|---|---|---:|---:|---:|---:|')
  for (const [id, m] of Object.entries(ws.missions)) {
    const status =
      typeof m.status === 'object'
        ? `failed: ${m.status.failed.reason}${m.status.failed.retry === false ? ' (a retry cannot fix this: change what the reason names, then --resume)' : r.status === 'incomplete' ? ' (--resume retries it)' : ''}`
        : m.status === 'finished'
          ? m.status
          : `${m.status} (did not finish; --resume runs it)`
    out.push(`| ${id} | ${cell(status)} | ${m.attempts} | ${m.usage.input_tokens} | ${m.usage.output_tokens} | ${m.usage.cost_usd === null ? '-' : m.usage.cost_usd.toFixed(4)} |`)
  }
  out.push('')

  out.push('## How to import', '')
  if (r.status !== 'success') out.push('Nothing to import yet: fix the problems above, then run `toolkit campaign export <this run directory>`.', '')
  const hasSearch = r.files.some((f) => f.endsWith('1-campaign.csv'))
  const hasEditor = r.files.some((f) => f.endsWith('image-campaigns.csv'))
  if (hasSearch) {
    out.push(
      'Search campaigns (Google Ads web, bulk upload):',
      '',
      '1. In Google Ads open Tools > Bulk actions > Uploads and click the upload button.',
      '2. Upload `google-ads/1-campaign.csv`, then `2-ad-groups.csv`, `3-keywords.csv`, `4-negative-keywords.csv` and `5-responsive-search-ads.csv`, in that order (each file refers to the rows of the files before it by name).',
      '3. Preview each upload, check the changes, then apply. Campaigns arrive with the status set in `[export] status` (paused by default).',
      '',
    )
  }
  if (hasEditor) {
    out.push(
      'Performance Max and Demand Gen campaigns (Google Ads Editor):',
      '',
      '1. In Google Ads Editor choose Account > Import > From file and pick `google-ads/editor/image-campaigns.csv` (UTF-16, tab-separated).',
      '2. Review the proposed changes and keep them, then Post.',
      '3. Editor does not import the link between an asset group and its pictures: add the pictures from `google-ads/editor/images/` by hand (the folder per campaign, the file name starts with the asset group) and the logo from `google-ads/editor/images/`.',
      '',
    )
  }
  return out.join('\n')
}

