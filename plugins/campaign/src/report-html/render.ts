import {bidRow} from '../budget/bid-row.js'
import {MIN_DAILY_CLICKS} from '../budget/cpc.js'
import {BID_LABELS} from '../export/google-ads/search-csv.js'
import {fromCents} from '../input/money.js'
import type {ReportInput} from '../run/report.js'
import {LIMITS} from '../steps/validate.js'
import type {AdGroup, AssetGroup, Campaign, ImageKind, Issue, Keyword, Negative} from '../types.js'
import {assetGroupTexts, combinations, rsaAssets, searchAdCard} from './ad-preview.js'
import {budgetChart} from './budget-chart.js'
import {anchor, esc, relHref} from './html.js'
import {IssueIndex} from './issues.js'
import {STYLES} from './styles.js'

/** Pictures as data: URLs by their path in the run directory; null for one that could not be read. */
export type Pictures = Map<string, null | string>

const TYPE_LABELS: Record<Campaign['type'], string> = {demand_gen: 'Demand Gen', performance_max: 'Performance Max', search: 'Search'}
const KIND_LABELS: Record<ImageKind, string> = {landscape: 'Landscape (1.91:1)', portrait: 'Portrait (4:5)', square: 'Square (1:1)'}
const KINDS: ImageKind[] = ['landscape', 'square', 'portrait']
/** Keyword lists longer than this start folded. */
const OPEN_KEYWORDS = 40

// The page loads nothing: no script, no request; pictures are inside it.
const CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

/** The paths of every picture the report shows: the logo and each asset group's pictures. */
export function picturePaths(r: ReportInput): string[] {
  const paths = r.ws.account.campaigns.flatMap((c) => c.asset_groups.flatMap((g) => g.images.map((i) => i.path)))
  const logo = r.ws.account.brand_kit?.logo ?? r.ws.input.logo
  return logo ? [logo, ...paths] : paths
}

/** report.html: the run as a person looks at it, one self-contained page. */
export function renderReportHtml(r: ReportInput, pictures: Pictures): string {
  const {ws} = r
  const biz = ws.input.business
  const cur = ws.input.budget.currency
  const issues = new IssueIndex(r.issues)
  const logoPath = ws.account.brand_kit?.logo ?? ws.input.logo
  const logo = logoPath ? (pictures.get(logoPath) ?? null) : null
  const campaignIds = ws.account.campaigns.map((c, i) => anchor('campaign', i + 1, c.slug))
  const money = (cents: number) => `${fromCents(cents)} ${cur}`

  const out: string[] = []
  out.push(`<!doctype html>
<html lang="${esc(biz.language || 'en')}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="${esc(CSP)}">
<title>${esc(`${biz.name}: campaign run ${r.runId}`)}</title>
<style>${STYLES}</style>
</head>
<body>
<a class="skip" href="#main">Skip to the report</a>
<header class="top">
<h1>${logo ? `<img class="logo-brand" src="${logo}" alt="">` : ''}${esc(biz.name)}: campaign report</h1>
<p class="meta">Run <code>${esc(r.runId)}</code> · <a href="${esc(biz.url)}">${esc(biz.url)}</a> · provider <code>${esc(r.provider)}</code>${r.model ? ` · model <code>${esc(r.model)}</code>` : ''} · ${ws.input.catalog.length} products</p>
</header>
<div class="layout">`)

  out.push('<nav class="toc" aria-label="Sections of the report"><ul>')
  for (const [id, title] of [['status', 'Status'], ['summary', 'Summary'], ['budget', 'Budget and bids'], ['validation', 'Validation']]) out.push(`<li><a href="#${id}">${title}</a></li>`)
  out.push('<li><a href="#campaigns">Campaigns</a><ul>')
  for (const [i, c] of ws.account.campaigns.entries()) out.push(`<li><a href="#${campaignIds[i]}">${esc(c.name)}</a></li>`)
  out.push('</ul></li>')
  for (const [id, title] of [['url-check', 'URL check'], ['usage', 'Usage and cost'], ['import', 'Import files']]) out.push(`<li><a href="#${id}">${title}</a></li>`)
  out.push('</ul></nav>')

  out.push('<main id="main">')

  // Status
  const word = {incomplete: 'Incomplete', invalid: 'Invalid', success: 'Success'}[r.status]
  const errors = r.issues.filter((i) => i.severity === 'error')
  const warnings = r.issues.filter((i) => i.severity === 'warning')
  const why =
    r.status === 'success'
      ? 'The import files are ready.'
      : r.status === 'invalid'
        ? `${errors.length} errors to fix; no import file was written.`
        : `${r.totals.failed_missions} of ${r.totals.missions} missions did not finish; run <code>toolkit campaign generate --resume ${esc(r.runId)}</code> with this run directory.`
  out.push(`<section id="status" aria-labelledby="status-h"><h2 id="status-h">Status</h2><p><span class="status status-${r.status}">${word}</span> (exit ${r.exitCode}): ${why}</p>`)
  const failed = Object.entries(ws.missions).filter(([, m]) => typeof m.status === 'object')
  if (failed.length > 0) {
    out.push('<ul class="issues">')
    for (const [id, m] of failed) if (typeof m.status === 'object') out.push(`<li class="error"><span class="sev">Mission failed</span> <code>${esc(id)}</code>: ${esc(m.status.failed.reason)}</li>`)
    out.push('</ul>')
  }
  out.push('</section>')

  // Summary
  out.push('<section id="summary" aria-labelledby="summary-h"><h2 id="summary-h">Summary</h2>')
  if (ws.account.campaigns.length === 0) out.push('<p>No campaigns were planned.</p>')
  else {
    out.push('<table><caption>Campaigns of the account</caption><thead><tr><th scope="col">Campaign</th><th scope="col">Type</th><th scope="col" class="num">Daily budget</th><th scope="col" class="num">Groups</th><th scope="col" class="num">Keywords</th><th scope="col" class="num">Ads</th><th scope="col" class="num">Negatives</th><th scope="col" class="num">Issues</th></tr></thead><tbody>')
    for (const [i, c] of ws.account.campaigns.entries()) {
      const groups = c.type === 'search' ? c.ad_groups.length : c.asset_groups.length
      const keywords = c.ad_groups.reduce((a, g) => a + g.keywords.length, 0)
      const ads = c.type === 'search' ? c.ad_groups.reduce((a, g) => a + g.ads.length, 0) : c.asset_groups.length
      const negs = c.negatives.length + c.ad_groups.reduce((a, g) => a + g.negatives.length, 0)
      const n = r.issues.filter((x) => x.path.startsWith(`account.campaigns[${i}]`)).length
      out.push(`<tr><th scope="row"><a href="#${campaignIds[i]}">${esc(c.name)}</a></th><td>${TYPE_LABELS[c.type]}</td><td class="num">${money(c.daily_budget_cents)}</td><td class="num">${groups}</td><td class="num">${keywords}</td><td class="num">${ads}</td><td class="num">${negs}</td><td class="num">${n}</td></tr>`)
    }
    out.push('</tbody></table>')
  }
  out.push('</section>')

  // Budget
  const sum = ws.account.campaigns.reduce((a, c) => a + c.daily_budget_cents, 0)
  out.push(`<section id="budget" aria-labelledby="budget-h"><h2 id="budget-h">Budget and bids</h2><p>Daily budget <b>${money(ws.input.budget.daily_cents)}</b>; campaigns add up to ${money(sum)}. Max CPC: ${ws.input.budget.max_cpc_cents === null ? 'not set' : money(ws.input.budget.max_cpc_cents)}. A campaign is planned only if its daily budget buys at least ${MIN_DAILY_CLICKS} clicks at the CPC estimate of what it sells.</p>`)
  out.push(budgetChart(ws.account.campaigns, ws.input.budget.daily_cents, cur))
  if (ws.account.campaigns.length > 0) {
    out.push('<table><caption>Budget split and bids</caption><thead><tr><th scope="col">Campaign</th><th scope="col" class="num">Daily budget</th><th scope="col" class="num">Share</th><th scope="col">Bid strategy</th><th scope="col">Max CPC (ad groups)</th><th scope="col" class="num">CPC estimate</th><th scope="col" class="num">Clicks a day</th></tr></thead><tbody>')
    for (const c of ws.account.campaigns) {
      const {clicks, cpcEstimate, range, share} = bidRow(ws, c)
      out.push(`<tr><th scope="row">${esc(c.name)}</th><td class="num">${money(c.daily_budget_cents)}</td><td class="num">${share}</td><td>${BID_LABELS[c.bid_strategy]}</td><td>${esc(range)}</td><td class="num">${esc(cpcEstimate)}</td><td class="num">${clicks}</td></tr>`)
    }
    out.push('</tbody></table>')
  }
  out.push('</section>')

  // Validation
  out.push(`<section id="validation" aria-labelledby="validation-h"><h2 id="validation-h">Validation</h2><p>${errors.length} errors, ${warnings.length} warnings. Each is also shown beside the campaign or group it is about.</p>`)
  out.push(issueList(issues.account(), 'The account'))
  if (r.issues.length > 0) {
    out.push('<table><caption>Every finding</caption><thead><tr><th scope="col">Severity</th><th scope="col">Code</th><th scope="col">Where</th><th scope="col">Message</th></tr></thead><tbody>')
    for (const i of [...errors, ...warnings].slice(0, 1000)) {
      const m = /^account\.campaigns\[(\d+)\]/.exec(i.path)
      const where = m && campaignIds[Number(m[1])] ? `<a href="#${campaignIds[Number(m[1])]}"><code>${esc(i.path)}</code></a>` : `<code>${esc(i.path)}</code>`
      out.push(`<tr class="${i.severity}"><td class="sev">${i.severity === 'error' ? 'Error' : 'Warning'}</td><td><code>${esc(i.code)}</code></td><td>${where}</td><td>${esc(i.message)}</td></tr>`)
    }
    out.push('</tbody></table>')
    if (r.issues.length > 1000) out.push(`<p>${r.issues.length - 1000} more in <a href="events.ndjson">events.ndjson</a>.</p>`)
  }
  out.push('</section>')

  // Campaigns
  out.push('<section id="campaigns" aria-labelledby="campaigns-h"><h2 id="campaigns-h">Campaigns</h2>')
  if (ws.account.campaigns.length === 0) out.push('<p>No campaigns were planned.</p>')
  for (const [i, c] of ws.account.campaigns.entries()) out.push(campaignSection(r, c, i, campaignIds[i], issues, pictures, logo))
  out.push('</section>')

  // URL check
  out.push('<section id="url-check" aria-labelledby="url-h"><h2 id="url-h">URL check</h2>')
  if (r.urls === null) out.push('<p>Skipped (<code>--skip-url-check</code>).</p>')
  else {
    const bad = r.urls.filter((u) => !u.ok)
    out.push(`<p>${r.urls.length} final URLs checked, ${bad.length} failed.</p>`)
    if (r.urls.length > 0) {
      out.push('<table><caption>Final URLs</caption><thead><tr><th scope="col">URL</th><th scope="col" class="num">Status</th><th scope="col">Result</th></tr></thead><tbody>')
      for (const u of r.urls) out.push(`<tr><td>${esc(u.url)}</td><td class="num">${u.status ?? '-'}</td><td>${u.ok ? (u.final_url ? `ok, redirects to ${esc(u.final_url)}` : 'ok') : `<span class="sev">Failed</span>: ${esc(u.reason ?? 'failed')}`}</td></tr>`)
      out.push('</tbody></table>')
    }
  }
  out.push('</section>')

  // Usage
  const t = r.totals
  out.push(`<section id="usage" aria-labelledby="usage-h"><h2 id="usage-h">Usage and cost</h2><p>${t.missions} missions, ${t.failed_missions} failed; ${t.input_tokens} input tokens, ${t.output_tokens} output tokens; cost <b>${t.cost_usd === null ? 'not reported' : `${t.cost_usd.toFixed(4)} USD`}</b>.</p>`)
  out.push('<table><caption>Missions</caption><thead><tr><th scope="col">Mission</th><th scope="col">Status</th><th scope="col" class="num">Attempts</th><th scope="col" class="num">Input tokens</th><th scope="col" class="num">Output tokens</th><th scope="col" class="num">Cost (USD)</th></tr></thead><tbody>')
  for (const [id, m] of Object.entries(ws.missions)) {
    const status = typeof m.status === 'object' ? `failed: ${m.status.failed.reason}` : m.status
    out.push(`<tr><th scope="row"><code>${esc(id)}</code></th><td>${esc(status)}</td><td class="num">${m.attempts}</td><td class="num">${m.usage.input_tokens}</td><td class="num">${m.usage.output_tokens}</td><td class="num">${m.usage.cost_usd === null ? '-' : m.usage.cost_usd.toFixed(4)}</td></tr>`)
  }
  out.push('</tbody></table></section>')

  // Import files
  out.push('<section id="import" aria-labelledby="import-h"><h2 id="import-h">Import files</h2>')
  if (r.files.length === 0) out.push(`<p>Nothing to import yet: fix the problems above, then run <code>toolkit campaign export</code> on this run directory.</p>`)
  else {
    out.push('<ul>')
    for (const f of r.files) out.push(`<li><a href="${esc(relHref(f))}">${esc(f)}</a></li>`)
    out.push('</ul><p>Search CSV files go to Google Ads (Tools › Bulk actions › Uploads) in their numbered order; <code>editor/image-campaigns.csv</code> goes to Google Ads Editor (Account › Import › From file), then add the pictures of <code>editor/images/</code> by hand. <a href="report.md">report.md</a> has the steps.</p>')
  }
  out.push('</section></main></div>')
  out.push(`<footer>Written by <code>toolkit campaign</code> from <a href="workspace.json">workspace.json</a> and <a href="events.ndjson">events.ndjson</a>. Ad previews show how Google may assemble the headlines and descriptions; the combinations it serves vary.</footer>
</body>
</html>
`)
  return out.join('\n')
}

function issueList(list: Issue[], where: string): string {
  if (list.length === 0) return ''
  const items = list.map((i) => `<li class="${i.severity}"><span class="sev">${i.severity === 'error' ? 'Error' : 'Warning'}</span> <code>${esc(i.code)}</code> <span class="visually-hidden">at</span> <code class="path">${esc(i.path)}</code>: ${esc(i.message)}</li>`)
  return `<ul class="issues" aria-label="${esc(`Findings for ${where}`)}">${items.join('')}</ul>`
}

const MATCH: Record<Keyword['match'], (t: string) => string> = {broad: (t) => t, exact: (t) => `[${t}]`, phrase: (t) => `"${t}"`}

function keywordList(list: Array<Keyword | Negative>, what: string): string {
  if (list.length === 0) return ''
  const items = list.map((k) => `<li>${esc(MATCH[k.match](k.text))}</li>`).join('')
  return `<details${list.length <= OPEN_KEYWORDS ? ' open' : ''}><summary>${list.length} ${what}</summary><ul class="kw">${items}</ul></details>`
}

function campaignSection(r: ReportInput, c: Campaign, i: number, id: string, issues: IssueIndex, pictures: Pictures, logo: null | string): string {
  const cur = r.ws.input.budget.currency
  const biz = r.ws.input.business
  const out: string[] = []
  out.push(`<article class="campaign" id="${id}" aria-labelledby="${id}-h"><h3 id="${id}-h">${esc(c.name)}</h3>`)
  out.push(`<ul class="facts"><li>Type <b>${TYPE_LABELS[c.type]}</b></li><li>Daily budget <b>${fromCents(c.daily_budget_cents)} ${esc(cur)}</b></li><li>Bidding <b>${BID_LABELS[c.bid_strategy]}</b></li>${c.max_cpc_cents === null ? '' : `<li>Max CPC <b>${fromCents(c.max_cpc_cents)} ${esc(cur)}</b></li>`}</ul>`)
  out.push(issueList(issues.campaign(i), c.name))
  out.push(keywordList(c.negatives, 'campaign negative keywords'))
  for (const [j, g] of c.ad_groups.entries()) out.push(adGroupSection(r, g, `${id}-g${j + 1}`, issues.group(i, 'ad_groups', j), biz.name))
  for (const [j, g] of c.asset_groups.entries()) out.push(assetGroupSection(c, g, `${id}-a${j + 1}`, issues.group(i, 'asset_groups', j), pictures, logo))
  out.push('</article>')
  return out.join('\n')
}

function adGroupSection(r: ReportInput, g: AdGroup, id: string, found: Issue[], businessName: string): string {
  const cur = r.ws.input.budget.currency
  const out: string[] = []
  out.push(`<section class="group" id="${id}" aria-labelledby="${id}-h"><h4 id="${id}-h">Ad group: ${esc(g.name)}</h4>`)
  out.push(`<ul class="facts"><li>Max CPC <b>${fromCents(g.max_cpc_cents)} ${esc(cur)}</b></li><li>Final URL <a href="${esc(g.final_url)}">${esc(g.final_url)}</a></li>${g.language ? `<li>Language <b>${esc(g.language)}</b></li>` : ''}</ul>`)
  out.push(issueList(found, g.name))
  out.push(keywordList(g.keywords, 'keywords'))
  out.push(keywordList(g.negatives, 'negative keywords'))
  for (const [k, ad] of g.ads.entries()) {
    const combos = combinations(ad)
    const adName = g.ads.length > 1 ? `Responsive search ad ${k + 1}` : 'Responsive search ad'
    out.push(`<h5>${adName}: previews</h5><div class="previews">`)
    for (const [n, combo] of combos.entries()) out.push(searchAdCard(ad, combo, businessName, `${adName} of ${g.name}, preview ${n + 1} of ${combos.length}`))
    out.push(`</div><details><summary>All headlines and descriptions of ${adName.toLowerCase()}</summary>${rsaAssets(ad)}</details>`)
  }
  out.push('</section>')
  return out.join('\n')
}

function assetGroupSection(c: Campaign, g: AssetGroup, id: string, found: Issue[], pictures: Pictures, logo: null | string): string {
  const out: string[] = []
  const headlineLimit = c.type === 'demand_gen' ? LIMITS.dg_headline : LIMITS.headline
  out.push(`<section class="group" id="${id}" aria-labelledby="${id}-h"><h4 id="${id}-h">Asset group: ${esc(g.name)}</h4>`)
  out.push(`<ul class="facts"><li>Business name <b>${esc(g.business_name)}</b></li><li>Call to action <b>${esc(humanize(g.call_to_action))}</b></li><li>Final URL <a href="${esc(g.final_url)}">${esc(g.final_url)}</a></li><li>${g.images.length} pictures</li></ul>`)
  out.push(issueList(found, g.name))
  const hero = g.images.find((img) => img.kind === 'landscape' && pictures.get(img.path))
  if (hero) {
    out.push(`<h5>Preview</h5><article class="display-ad" aria-label="${esc(`Image ad preview of ${g.name}`)}"><img class="hero" src="${pictures.get(hero.path)}" alt="${esc(`Landscape picture of ${g.name}`)}"><div class="body">${logo ? `<img class="logo" src="${logo}" alt="${esc(`${g.business_name} logo`)}">` : ''}<div><p class="h">${esc(g.headlines[0] ?? '')}</p><p class="d">${esc(g.descriptions[0] ?? '')}</p></div></div><span class="cta">${esc(humanize(g.call_to_action))}</span></article>`)
  }
  out.push(assetGroupTexts(g, headlineLimit))
  for (const kind of KINDS) {
    const imgs = g.images.filter((img) => img.kind === kind)
    if (imgs.length === 0) continue
    out.push(`<h5>${KIND_LABELS[kind]}</h5><div class="pictures">`)
    for (const [n, img] of imgs.entries()) {
      const src = pictures.get(img.path)
      const file = img.path.split('/').pop() ?? img.path
      const alt = `${KIND_LABELS[kind]} picture ${n + 1} of ${imgs.length} for ${g.name}, ${img.width}×${img.height}`
      out.push(`<figure>${src ? `<img src="${src}" alt="${esc(alt)}" width="${img.width}" height="${img.height}" style="width:auto;height:auto">` : `<div class="missing" role="img" aria-label="${esc(`${alt}: missing`)}">picture missing</div>`}<figcaption><a href="${esc(relHref(img.path))}">${esc(file)}</a> · ${img.width}×${img.height}</figcaption></figure>`)
    }
    out.push('</div>')
  }
  if (logo) out.push(`<h5>Logo</h5><div class="pictures"><figure><img src="${logo}" alt="${esc(`${g.business_name} logo`)}"><figcaption>logo</figcaption></figure></div>`)
  out.push('</section>')
  return out.join('\n')
}

/** `shop_now` or `SHOP_NOW` -> "Shop now". */
function humanize(value: string): string {
  const words = value.replaceAll('_', ' ').trim().toLowerCase()
  return words.charAt(0).toUpperCase() + words.slice(1)
}
