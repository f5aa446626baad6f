import type {ApiProviderSpec} from './provider.js'

/** The API providers: where each finds its key, endpoint and default model. */
export const ANTHROPIC: ApiProviderSpec = {
  baseUrlVariable: 'ANTHROPIC_BASE_URL',
  defaultModel: 'claude-opus-4-5',
  keyRequired: true,
  keyVariable: 'ANTHROPIC_API_KEY',
  async makeClient({apiKey, baseUrl, model}) {
    const {createAnthropicClient} = await import('./anthropic.js')
    return createAnthropicClient({apiKey: apiKey ?? '', baseUrl, maxTokens: 16_384, model})
  },
  name: 'anthropic',
  needsBaseUrl: false,
}

export const API_SPECS: readonly ApiProviderSpec[] = [ANTHROPIC]

/** Where each vendor's API lives when no base URL is given (for `campaign providers --check`). */
export const DEFAULT_URLS: Readonly<Record<string, string>> = {
  anthropic: 'https://api.anthropic.com',
  gemini: 'https://generativelanguage.googleapis.com',
  openai: 'https://api.openai.com/v1',
}
