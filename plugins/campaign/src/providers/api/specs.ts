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

export const OPENAI: ApiProviderSpec = {
  baseUrlVariable: 'OPENAI_BASE_URL',
  defaultModel: 'gpt-5',
  keyRequired: true,
  keyVariable: 'OPENAI_API_KEY',
  async makeClient({apiKey, baseUrl, model}) {
    const {createResponsesClient} = await import('./openai.js')
    return createResponsesClient({apiKey, baseUrl, keyVariable: 'OPENAI_API_KEY', model, vendor: 'openai'})
  },
  name: 'openai',
  needsBaseUrl: false,
}

/**
 * Any server that speaks OpenAI's Chat Completions. Its own variables, so an OpenAI key is
 * never sent to another server by accident; a local server needs no key at all.
 */
export const OPENAI_COMPATIBLE: ApiProviderSpec = {
  baseUrlVariable: 'OPENAI_COMPATIBLE_BASE_URL',
  defaultModel: null,
  keyRequired: false,
  keyVariable: 'OPENAI_COMPATIBLE_API_KEY',
  async makeClient({apiKey, baseUrl, model}) {
    const {createChatClient} = await import('./openai.js')
    return createChatClient({apiKey, baseUrl, keyVariable: 'OPENAI_COMPATIBLE_API_KEY', model, vendor: 'openai-compatible'})
  },
  name: 'openai-compatible',
  needsBaseUrl: true,
}

export const GEMINI: ApiProviderSpec = {
  baseUrlVariable: 'GOOGLE_GEMINI_BASE_URL',
  defaultModel: 'gemini-2.5-pro',
  keyRequired: true,
  keyVariable: 'GEMINI_API_KEY',
  async makeClient({apiKey, baseUrl, model}) {
    const {createGeminiClient} = await import('./gemini.js')
    return createGeminiClient({apiKey: apiKey ?? '', baseUrl, model})
  },
  name: 'gemini',
  needsBaseUrl: false,
}

export const API_SPECS: readonly ApiProviderSpec[] = [ANTHROPIC, OPENAI, OPENAI_COMPATIBLE, GEMINI]

/** Where each vendor's API lives when no base URL is given (for `campaign providers --check`). */
export const DEFAULT_URLS: Readonly<Record<string, string>> = {
  anthropic: 'https://api.anthropic.com',
  gemini: 'https://generativelanguage.googleapis.com',
  openai: 'https://api.openai.com/v1',
}
