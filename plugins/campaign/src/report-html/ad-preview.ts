import {LIMITS} from '../steps/validate.js'
import type {AssetGroup, ResponsiveSearchAd} from '../types.js'
import {esc} from './html.js'

/** How many headline and description combinations of a responsive search ad the report shows. */
export const PREVIEWS_PER_AD = 3

export interface Combination {
  descriptions: string[]
  headlines: string[]
}

/**
 * Combinations the way Google assembles a responsive search ad on a results page: up to three
 * headlines and two descriptions, each asset at most once per combination, rotating through
 * the lists so every asset appears in some preview when the lists are short enough.
 */
export function combinations(ad: ResponsiveSearchAd, count = PREVIEWS_PER_AD): Combination[] {
  const out: Combination[] = []
  const pick = (list: string[], start: number, n: number): string[] => {
    const chosen: string[] = []
    for (let k = 0; k < list.length && chosen.length < Math.min(n, list.length); k++) {
      const item = list[(start + k) % list.length]
      if (!chosen.includes(item)) chosen.push(item)
    }
    return chosen
  }
  if (ad.headlines.length === 0) return out
  for (let i = 0; i < count; i++) {
    const combo = {descriptions: pick(ad.descriptions, 2 * i, 2), headlines: pick(ad.headlines, 3 * i, 3)}
    if (out.some((c) => c.headlines.join('\n') === combo.headlines.join('\n') && c.descriptions.join('\n') === combo.descriptions.join('\n'))) break
    out.push(combo)
  }
  return out
}

/** "acme-coffee.example › shop › beans": the display URL Google writes above a text ad. */
export function displayUrl(finalUrl: string, path1: string, path2: string): string {
  let host = finalUrl
  try {
    host = new URL(finalUrl).hostname.replace(/^www\./, '')
  } catch {
    // An invalid final URL is a validation error, shown beside the ad; preview it as written.
  }
  return [host, path1, path2].filter(Boolean).join(' › ')
}

/** One ad as it would look among the results: the Sponsored label, the advertiser, the display URL, headlines and descriptions. */
export function searchAdCard(ad: ResponsiveSearchAd, combo: Combination, businessName: string, label: string): string {
  const initial = esc([...businessName.trim()][0] ?? '?')
  return `<article class="serp-ad" aria-label="${esc(label)}">
<p class="serp-sponsored">Sponsored</p>
<div class="serp-site"><span class="serp-icon" aria-hidden="true">${initial}</span><span><span class="serp-name">${esc(businessName)}</span><span class="serp-url">${esc(displayUrl(ad.final_url, ad.path1, ad.path2))}</span></span></div>
<p class="serp-headline">${combo.headlines.map(esc).join(' | ')}</p>
<p class="serp-desc">${combo.descriptions.map(esc).join(' ')}</p>
</article>`
}

/** A list of texts with their length against Google's limit; an over-long one says so in words. */
export function assetList(title: string, texts: string[], limit: number): string {
  if (texts.length === 0) return ''
  const items = texts
    .map((t) => {
      const n = [...t].length
      const over = n > limit
      return `<li${over ? ' class="over"' : ''}>${esc(t)} <span class="count">${n}/${limit}${over ? ' (over the limit)' : ''}</span></li>`
    })
    .join('')
  return `<div class="assets"><h6>${esc(title)} (${texts.length})</h6><ol>${items}</ol></div>`
}

export function rsaAssets(ad: ResponsiveSearchAd): string {
  return assetList('Headlines', ad.headlines, LIMITS.headline) + assetList('Descriptions', ad.descriptions, LIMITS.description)
}

export function assetGroupTexts(g: AssetGroup, headlineLimit: number): string {
  return (
    assetList('Headlines', g.headlines, headlineLimit) +
    assetList('Long headlines', g.long_headlines, LIMITS.long_headline) +
    assetList('Descriptions', g.descriptions, LIMITS.description) +
    (g.search_themes.length > 0 ? `<div class="assets"><h6>Search themes (${g.search_themes.length})</h6><p>${g.search_themes.map(esc).join(', ')}</p></div>` : '')
  )
}
