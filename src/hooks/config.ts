import type {Config} from '@oclif/core'
import type {ConfigRequest, ConfigResult, ConfigValue} from '@toolkit/kit'

import {loadLayeredConfig} from '../lib/layered-config.js'

type Request = ConfigRequest<Record<string, ConfigValue>> & {config: Config}

export default async function configHook(options: Request): Promise<ConfigResult<Record<string, ConfigValue>>> {
  return loadLayeredConfig(options.config.configDir, options)
}
