import type {MissionKind} from '../tools/registry.js'
import type {Workspace} from '../types.js'

/** The task text a provider sends as its first message. Tools carry the data; this says the goal. */
export function missionPrompt(ws: Workspace, kind: MissionKind, slug: null | string): string {
  const b = ws.input.business
  if (kind === 'plan') {
    return [
      `You plan a Google Ads account for ${b.name} (${b.url}), goal: ${b.goal}.`,
      `Required campaign types: ${ws.input.formats.join(', ')}. Daily budget: ${ws.input.budget.daily_cents} cents ${ws.input.budget.currency}.`,
      'Read the business and its catalog summary by category with get_business; page through a category with query_catalog only for what the summary does not say. Set the brand kit with set_brand_kit.',
      'Then call set_account_plan once with every campaign: budgets in integer cents that add up exactly to the daily budget,',
      'ad groups by category and search intent (a group takes whole categories by name, or product ids), final URLs on the business site. Finish with finish.',
    ].join('\n')
  }
  const c = ws.account.campaigns.find((x) => x.slug === slug)
  return [
    `You build the campaign "${c?.name ?? slug}" (${c?.type ?? 'unknown'}) of the plan for ${b.name}. Read it with get_brief.`,
    c?.type === 'search'
      ? 'Create every planned ad group with upsert_ad_group (keywords with match types, one responsive search ad within the limits), then set_campaign_negatives.'
      : 'Write the asset groups with set_assets, within the limits in the brief.',
    'Call validate, fix every error it reports, then finish.',
  ].join('\n')
}
