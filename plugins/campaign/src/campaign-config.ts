import type {Config} from '@oclif/core'
import {loadConfig} from '@toolkit/kit'

/** The `campaign` section of the shared configuration; '' and 0 mean "not set". */
export const CAMPAIGN_DEFAULTS = {baseUrl: '', images: 'offline', imagesModel: '', maxCost: 0, maxTurns: 200, model: '', out: 'out', parallel: 4, provider: 'local'}

export type CampaignConfig = typeof CAMPAIGN_DEFAULTS

/** defaults < config files (campaign.json) < TOOLKIT_CAMPAIGN_* < flags */
export async function loadCampaignConfig(config: Config, flags: Partial<CampaignConfig>): Promise<CampaignConfig> {
  const {values} = await loadConfig(config, {defaults: CAMPAIGN_DEFAULTS, flags, namespace: 'campaign'})
  return values
}
