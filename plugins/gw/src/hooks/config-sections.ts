import type {ConfigRequest, ConfigSectionsRequest, ConfigValue} from '@toolkit/kit'

/**
 * Answers `toolkit config show`: `gw serve`'s settings as it would load them from this directory
 * with no flags (the "serve" object of the servers.json it finds as one layer).
 */
export default async function configSections(options: ConfigSectionsRequest): Promise<Array<ConfigRequest<Record<string, ConfigValue>>>> {
  const [{loadServersConfig}, {serveConfigRequest}] = await Promise.all([import('../client/servers-file.js'), import('../proxy/serve-config.js')])
  const servers = await loadServersConfig({cwd: options.cwd, env: options.env})
  return [serveConfigRequest(servers)]
}
