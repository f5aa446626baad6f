import {closest, UsageError} from '@toolkit/kit'

import {createClaudeProvider} from './agent-cli/claude.js'
import {createCodexProvider} from './agent-cli/codex.js'
import {describeAgentCli} from './agent-cli/describe.js'
import {apiProvider} from './api/provider.js'
import {API_SPECS} from './api/specs.js'
import {type DescribeOptions, describeApi, type ProviderDescription} from './describe.js'
import {createLocalProvider} from './local/provider.js'
import type {Provider, ProviderFactory, ProviderOptions} from './provider.js'

export type {DescribeOptions, ProviderDescription} from './describe.js'

/** A provider: how to make it for a run, and its row in `campaign providers`. */
export interface ProviderEntry {
  create: ProviderFactory
  describe(options: DescribeOptions): Promise<ProviderDescription>
}

/** Providers by name. API and agent-CLI providers register here as they are added. */
const PROVIDERS: Record<string, ProviderEntry> = {
  local: {
    create: createLocalProvider,
    describe: async () => ({base_url: null, default_model: null, detail: 'built in, no account needed', kind: 'offline', name: 'local', usable: true}),
  },
  ...Object.fromEntries(API_SPECS.map((spec) => [spec.name, {create: apiProvider(spec), describe: (o: DescribeOptions) => describeApi(spec, o)}])),
  claude: {create: createClaudeProvider, describe: (o) => describeAgentCli('claude', o)},
  codex: {create: createCodexProvider, describe: (o) => describeAgentCli('codex', o)},
}

export function providerNames(): string[] {
  return Object.keys(PROVIDERS)
}

export function createProvider(name: string, options: ProviderOptions): Provider {
  const entry = PROVIDERS[name]
  if (!entry) {
    const hint = closest(name, Object.keys(PROVIDERS))
    throw new UsageError(`unknown provider "${name}"${hint ? ` (did you mean "${hint}"?)` : ''}; providers: ${providerNames().join(', ')}`)
  }
  return entry.create(options)
}

/**
 * Every provider's row, in the table's order. The configured provider (config, environment or
 * flag) is marked `default`, and its configured model and base URL are the ones shown.
 */
export async function describeProviders(o: {baseUrl: null | string; check: boolean; model: null | string; provider: string}): Promise<Array<ProviderDescription & {default: boolean}>> {
  return Promise.all(
    Object.entries(PROVIDERS).map(async ([name, p]) => {
      const chosen = name === o.provider
      const row = await p.describe({baseUrl: chosen ? o.baseUrl : null, check: o.check, model: chosen ? o.model : null})
      return {...row, default: chosen}
    }),
  )
}
