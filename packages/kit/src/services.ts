import type {Config} from '@oclif/core'

import {
  type ConfigRequest,
  type ConfigResult,
  type ConfigValue,
  HOOK_CONFIG,
  HOOK_OUTPUT,
  HOOK_TOKEN_STORE,
  type Output,
  type OutputFormat,
  type TokenStore,
} from './contract.js'
import {ToolkitError} from './errors.js'

type Event = typeof HOOK_CONFIG | typeof HOOK_OUTPUT | typeof HOOK_TOKEN_STORE

/**
 * Fires a service hook and returns the host's answer. A hook that throws (a malformed config
 * file, say) is rethrown so its message and exit code reach the user unchanged.
 */
async function callHost<R>(config: Config, event: Event, options: object): Promise<R> {
  // oclif types runHook per event; the union here is resolved by the callers' signatures.
  const {failures, successes} = await config.runHook(event, options as never)
  if (failures.length > 0) throw failures[0].error
  const own = successes.find((s) => s.plugin.name === config.pjson.name) ?? successes[0]
  if (!own) {
    throw new ToolkitError(`no plugin answers the ${event} hook: run this command from toolkit`, {code: 'no_host'})
  }
  return own.result as R
}

export function useOutput(config: Config, format: OutputFormat): Promise<Output> {
  return callHost<Output>(config, HOOK_OUTPUT, {format})
}

export function loadConfig<T extends Record<string, ConfigValue>>(config: Config, request: ConfigRequest<T>): Promise<ConfigResult<T>> {
  return callHost<ConfigResult<T>>(config, HOOK_CONFIG, request)
}

export function openTokenStore(config: Config, file: string): Promise<TokenStore> {
  return callHost<TokenStore>(config, HOOK_TOKEN_STORE, {file})
}
