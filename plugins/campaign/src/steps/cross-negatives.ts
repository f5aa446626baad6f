import type {Negative, Workspace} from '../types.js'
import {normal, subphrases} from './validate.js'

/**
 * Keeps search campaigns from competing for the same queries. When a phrase or broad keyword of
 * campaign A would also match a keyword that campaign B targets, A gets that keyword as a
 * negative, so the query goes to B, the campaign built for it. The negative is phrase match when
 * that blocks none of A's own keywords, exact match when phrase would, and left out when A
 * targets the very same text. Rebuilt from scratch on every run (source `cross`).
 *
 * Phrase keywords are looked up through an index of the sub-phrases of each query text, so the
 * step is linear in the number of keywords (10,000 keywords over 20 campaigns: milliseconds).
 */
export function crossNegatives(ws: Workspace): {added: number; campaigns: number} {
  const search = ws.account.campaigns.filter((c) => c.type === 'search')
  const texts = search.map(() => new Set<string>())
  const phraseOwners = new Map<string, number[]>()
  const broad: {campaign: number; words: string[]}[] = []
  for (const [a, c] of search.entries()) {
    for (const g of c.ad_groups) {
      for (const k of g.keywords) {
        const t = normal(k.text)
        texts[a].add(t)
        if (k.match === 'phrase') {
          const owners = phraseOwners.get(t) ?? []
          if (!owners.includes(a)) owners.push(a)
          phraseOwners.set(t, owners)
        } else if (k.match === 'broad') broad.push({campaign: a, words: t.split(' ')})
      }
    }
  }
  // Only sub-phrases that start with the first word of some phrase keyword can match one.
  const firstWords = new Set([...phraseOwners.keys()].map((p) => p.split(' ')[0]))
  const candidates = search.map(() => new Set<string>())
  for (const [b, own] of texts.entries()) {
    for (const t of own) {
      const startsWell = t.split(' ').some((w) => firstWords.has(w))
      for (const sub of startsWell ? subphrases(t) : []) {
        for (const a of phraseOwners.get(sub) ?? []) if (a !== b && !texts[a].has(t)) candidates[a].add(t)
      }
      if (broad.length > 0) {
        const words = new Set(t.split(' '))
        for (const k of broad) if (k.campaign !== b && !texts[k.campaign].has(t) && k.words.every((w) => words.has(w))) candidates[k.campaign].add(t)
      }
    }
  }
  let added = 0
  for (const [a, campaign] of search.entries()) {
    let inside: Set<string> | undefined
    const cross: Negative[] = []
    for (const text of [...candidates[a]].sort()) {
      inside ??= new Set([...texts[a]].flatMap(subphrases))
      // A phrase negative blocks every own keyword that contains it; fall back to exact then.
      cross.push({match: inside.has(text) ? 'exact' : 'phrase', source: 'cross', text})
    }
    campaign.negatives = [...campaign.negatives.filter((n) => n.source !== 'cross'), ...cross]
    added += cross.length
  }
  return {added, campaigns: search.length}
}
