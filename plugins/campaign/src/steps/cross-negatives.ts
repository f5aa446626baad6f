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
  // A phrase of two or more words can only match where its first two words do, so each query
  // text is probed by word pairs first: pairs that only its own campaign's phrases start with
  // (the common case: a campaign's product names) are skipped without building sub-phrases.
  const pairOwners = new Map<string, Set<number>>()
  const singles = new Map<string, number[]>()
  for (const [phrase, owners] of phraseOwners) {
    const w = phrase.split(' ')
    if (w.length === 1) singles.set(phrase, owners)
    else {
      const pair = `${w[0]} ${w[1]}`
      const set = pairOwners.get(pair) ?? new Set<number>()
      for (const o of owners) set.add(o)
      pairOwners.set(pair, set)
    }
  }
  const candidates = search.map(() => new Set<string>())
  const take = (owners: Iterable<number>, b: number, t: string) => {
    for (const a of owners) if (a !== b && !texts[a].has(t)) candidates[a].add(t)
  }
  for (const [b, own] of texts.entries()) {
    for (const t of own) {
      const w = t.split(' ')
      for (let i = 0; i < w.length; i++) {
        const single = singles.get(w[i])
        if (single) take(single, b, t)
        if (i + 1 >= w.length) continue
        let sub = `${w[i]} ${w[i + 1]}`
        const starts = pairOwners.get(sub)
        if (!starts || (starts.size === 1 && starts.has(b))) continue
        for (let j = i + 1; j < w.length; j++) {
          if (j > i + 1) sub = `${sub} ${w[j]}`
          const owners = phraseOwners.get(sub)
          if (owners) take(owners, b, t)
        }
      }
      if (broad.length > 0) {
        const words = new Set(w)
        for (const k of broad) if (k.campaign !== b && !texts[k.campaign].has(t) && k.words.every((x) => words.has(x))) candidates[k.campaign].add(t)
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
