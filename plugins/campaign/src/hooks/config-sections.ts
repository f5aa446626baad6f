import type {ConfigRequest, ConfigSectionsRequest, ConfigValue} from '@toolkit/kit'

import {CAMPAIGN_DEFAULTS} from '../campaign-config.js'

/** Answers `toolkit config show`: campaign's section (it has no file of its own). */
export default async function configSections(_options: ConfigSectionsRequest): Promise<Array<ConfigRequest<Record<string, ConfigValue>>>> {
  return [{defaults: CAMPAIGN_DEFAULTS, namespace: 'campaign'}]
}
