import type {Config} from '@oclif/core'
import type {Output} from '@toolkit/kit'

import {Flags} from '@oclif/core'
import {openTokenStore} from '@toolkit/kit'

import {loadServersConfig} from './servers-file.js'
import {authFilePath, type GwContext, isInteractive, moveLegacyAuthFile} from './context.js'

/** Flags every gw client command shares. */
export const clientFlags = {
  config: Flags.string({
    description: 'servers.json to use (default: ./servers.json, then ~/.config/gw/servers.json; env GW_CONFIG)',
    helpValue: '<file>',
  }),
}

/** The context of a client command: servers.json, the token store through the host's hook, a TTY check. */
export async function commandContext(config: Config, out: Output, flags: {config?: string}, options: {network?: boolean} = {}): Promise<GwContext> {
  const env = process.env
  // Loading the MCP SDK is most of a call's start-up: begin while the config and the store load.
  if (options.network) preloadSdk()
  const authFile = authFilePath(env, config.configDir)
  const moved = await moveLegacyAuthFile(authFile, env)
  if (moved) out.log(`moved the gw token store from ${moved} to ${authFile}`)
  const [servers, store] = await Promise.all([loadServersConfig({env, file: flags.config}), openTokenStore(config, authFile)])
  return {config: servers, env, interactive: isInteractive(env), log: (m) => out.log(m), store}
}

function preloadSdk(): void {
  const ignore = (): void => {}
  import('@modelcontextprotocol/sdk/client/index.js').catch(ignore)
  import('@modelcontextprotocol/sdk/client/streamableHttp.js').catch(ignore)
}
