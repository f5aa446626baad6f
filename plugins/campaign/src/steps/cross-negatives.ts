import type {Negative, Workspace} from '../types.js'
import {normal, subphrases} from './validate.js'

/**
 * Keeps search campaigns from competing for the same queries. When a phrase or broad keyword of
 * campaign A would also match a keyword that campaign B targets, A gets that keyword as a
 * negative, so the query goes to B, the campaign built for it. The negative is phrase match when
 * that blocks none of A's own keywords, exact match when phrase would, and left out when A
 * targets the very same text. Rebuilt from scratch on every run (source `cross`).
 *
 * Phrase keywords are looked up by walking each query text word by word through an index of
 * their prefixes, so the step is about linear in the number of keywords.
 */
const SEVERAL = -1

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
  // Every word-prefix of every phrase, with the one campaign whose phrases start with it (or
  // SEVERAL). A query text is walked from each of its words and a walk stops as soon as no
  // phrase, or only the text's own campaign's, starts that way (the common case: a campaign's
  // product names), so few sub-phrases are ever looked up.
  const prefixOnly = new Map<string, number>()
  for (const [phrase, owners] of phraseOwners) {
    const only = owners.length === 1 ? owners[0] : SEVERAL
    for (let end = phrase.indexOf(' '); ; end = phrase.indexOf(' ', end + 1)) {
      const prefix = end === -1 ? phrase : phrase.slice(0, end)
      const had = prefixOnly.get(prefix)
      prefixOnly.set(prefix, had === undefined || had === only ? only : SEVERAL)
      if (end === -1) break
    }
  }
  const candidates = search.map(() => new Set<string>())
  for (const [b, own] of texts.entries()) {
    for (const t of own) {
      const w = t.split(' ')
      let start = 0
      for (let i = 0; i < w.length; i++) {
        let end = start
        for (let j = i; j < w.length; j++) {
          end += (j > i ? 1 : 0) + w[j].length
          const sub = t.slice(start, end)
          const only = prefixOnly.get(sub)
          if (only === undefined || only === b) break
          const owners = phraseOwners.get(sub)
          if (owners) for (const a of owners) if (a !== b && !texts[a].has(t)) candidates[a].add(t)
        }
        start += w[i].length + 1
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

