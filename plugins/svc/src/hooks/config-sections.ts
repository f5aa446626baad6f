import type {ConfigRequest, ConfigSectionsRequest, ConfigValue} from '@toolkit/kit'

/**
 * Answers `toolkit config show`: svc's settings as `svc server` would load them in this
 * directory with no flags (its config.edn as one layer), so the host explains every value.
 */
export default async function configSections(options: ConfigSectionsRequest): Promise<Array<ConfigRequest<Record<string, ConfigValue>>>> {
  const {svcConfigRequest} = await import('../servers/config-edn.js')
  const {request} = await svcConfigRequest({}, {}, options.cwd)
  return [request]
}
