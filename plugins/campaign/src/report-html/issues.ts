import type {Issue} from '../types.js'

/** Where an issue applies: a campaign, one of its ad or asset groups, or the account (null). */
export interface Place {
  campaign: null | number
  group: null | {index: number; kind: 'ad_groups' | 'asset_groups'}
}

const PATH = /^account\.campaigns\[(\d+)\](?:\.(ad_groups|asset_groups)\[(\d+)\])?/

export function placeOf(issue: Issue): Place {
  const m = PATH.exec(issue.path)
  if (!m) return {campaign: null, group: null}
  return {campaign: Number(m[1]), group: m[2] ? {index: Number(m[3]), kind: m[2] as 'ad_groups' | 'asset_groups'} : null}
}

/** Issues grouped by the record they belong to, so each is shown where it applies. */
export class IssueIndex {
  private readonly byKey = new Map<string, Issue[]>()

  constructor(readonly all: Issue[]) {
    for (const issue of all) {
      const p = placeOf(issue)
      const key = IssueIndex.key(p.campaign, p.group?.kind ?? null, p.group?.index ?? null)
      const list = this.byKey.get(key)
      if (list) list.push(issue)
      else this.byKey.set(key, [issue])
    }
  }

  private static key(campaign: null | number, kind: null | string, group: null | number): string {
    return `${campaign ?? '-'}/${kind ?? '-'}/${group ?? '-'}`
  }

  /** The account's own issues (budget sum, empty account, catalog photos, URLs). */
  account(): Issue[] {
    return this.byKey.get(IssueIndex.key(null, null, null)) ?? []
  }

  /** The campaign's own issues, without those of its groups. */
  campaign(i: number): Issue[] {
    return this.byKey.get(IssueIndex.key(i, null, null)) ?? []
  }

  group(i: number, kind: 'ad_groups' | 'asset_groups', j: number): Issue[] {
    return this.byKey.get(IssueIndex.key(i, kind, j)) ?? []
  }
}
