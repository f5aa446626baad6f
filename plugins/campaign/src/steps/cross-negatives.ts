import type {Negative, Workspace} from '../types.js'
import {blocks, normal} from './validate.js'

/**
 * Keeps search campaigns from competing for the same queries. When a phrase or broad keyword of
 * campaign A would also match a keyword that campaign B targets, A gets that keyword as a
 * negative, so the query goes to B, the campaign built for it. The negative is phrase match when
 * that blocks none of A's own keywords, exact match when phrase would, and left out when A
 * targets the very same text. Rebuilt from scratch on every run (source `cross`).
 */
export function crossNegatives(ws: Workspace): {added: number; campaigns: number} {
  const search = ws.account.campaigns.filter((c) => c.type === 'search')
  const owned = search.map((c) => {
    const texts = new Set<string>()
    const wide: {match: 'broad' | 'phrase'; text: string}[] = []
    for (const g of c.ad_groups) {
      for (const k of g.keywords) {
        texts.add(normal(k.text))
        if (k.match !== 'exact') wide.push({match: k.match, text: normal(k.text)})
      }
    }
    return {texts, wide}
  })
  let added = 0
  for (const [a, campaign] of search.entries()) {
    const mine = owned[a]
    const cross: Negative[] = []
    const seen = new Set<string>()
    for (const [b, other] of owned.entries()) {
      if (b === a) continue
      for (const text of other.texts) {
        if (mine.texts.has(text) || seen.has(text)) continue
        if (!mine.wide.some((k) => blocks(k, text))) continue
        seen.add(text)
        const phrase = {match: 'phrase' as const, text}
        const hurts = [...mine.texts].some((own) => blocks(phrase, own))
        cross.push({match: hurts ? 'exact' : 'phrase', source: 'cross', text})
      }
    }
    cross.sort((x, y) => x.text.localeCompare(y.text))
    campaign.negatives = [...campaign.negatives.filter((n) => n.source !== 'cross'), ...cross]
    added += cross.length
  }
  return {added, campaigns: search.length}
}
