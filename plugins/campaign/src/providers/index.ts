import {closest, UsageError} from '@toolkit/kit'

import {createClaudeProvider} from './agent-cli/claude.js'
import {createCodexProvider} from './agent-cli/codex.js'
import {createLocalProvider} from './local/provider.js'
import type {Provider, ProviderFactory, ProviderOptions} from './provider.js'

/** Providers by name. API and agent-CLI providers register here as they are added. */
const PROVIDERS: Record<string, ProviderFactory> = {
  claude: createClaudeProvider,
  codex: createCodexProvider,
  local: createLocalProvider,
}


export function providerNames(): string[] {
  return Object.keys(PROVIDERS)
}

export function createProvider(name: string, options: ProviderOptions): Provider {
  const factory = PROVIDERS[name]
  if (!factory) {
    const hint = closest(name, Object.keys(PROVIDERS))
    throw new UsageError(`unknown provider "${name}"${hint ? ` (did you mean "${hint}"?)` : ''}; providers: ${providerNames().join(', ')}`)
  }
  return factory(options)
}
