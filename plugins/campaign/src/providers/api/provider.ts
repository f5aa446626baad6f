import {UsageError} from '@toolkit/kit'

import type {Provider, ProviderFactory, ProviderOptions} from '../provider.js'
import {type ModelClient, runToolLoop} from './loop.js'

/** How one API provider finds its key, endpoint and model, and makes its client. */
export interface ApiProviderSpec {
  /** Variable with the base URL, read when neither flag nor config gives one. */
  baseUrlVariable: null | string
  defaultModel: null | string
  /** Variable with the key. */
  keyVariable: string
  /** False for servers that take no key (a local Ollama). */
  keyRequired: boolean
  makeClient(settings: {apiKey: null | string; baseUrl: null | string; model: string}): Promise<ModelClient>
  name: string
  /** A base URL is required (OpenAI-compatible servers have no default one). */
  needsBaseUrl: boolean
}

const LOOP = {contextChars: 400_000, retries: 5}

export function keyOf(spec: ApiProviderSpec): null | string {
  const v = process.env[spec.keyVariable]
  return v && v.trim() !== '' ? v.trim() : null
}

export function baseUrlOf(spec: ApiProviderSpec, options: {baseUrl?: null | string}): null | string {
  return options.baseUrl || (spec.baseUrlVariable ? process.env[spec.baseUrlVariable] || null : null)
}

/**
 * A provider over a vendor API. Everything a run needs is checked here, when the provider is
 * made, so a missing key or endpoint exits 2 before any mission starts; the SDK loads on the
 * first mission.
 */
export function apiProvider(spec: ApiProviderSpec): ProviderFactory {
  return (options: ProviderOptions): Provider => {
    const apiKey = keyOf(spec)
    if (spec.keyRequired && apiKey === null) throw new UsageError(`the ${spec.name} provider needs an API key: set ${spec.keyVariable}`, 'missing_key')
    const baseUrl = baseUrlOf(spec, options)
    if (spec.needsBaseUrl && !baseUrl) {
      throw new UsageError(`the ${spec.name} provider needs the server's URL: give --base-url (for example http://127.0.0.1:11434/v1 for Ollama)${spec.baseUrlVariable ? ` or set ${spec.baseUrlVariable}` : ''}`, 'missing_base_url')
    }
    if (baseUrl) {
      try {
        const u = new URL(baseUrl)
        if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('not http')
      } catch {
        throw new UsageError(`the base URL must be an http(s) URL, got "${baseUrl}"`, 'invalid_base_url')
      }
    }
    const model = options.model ?? spec.defaultModel
    if (!model) throw new UsageError(`the ${spec.name} provider needs a model name: give --model`, 'missing_model')
    let client: null | Promise<ModelClient> = null
    return {
      // Only a flag's or the configuration's: a vendor variable is read again by a resumed run.
      baseUrl: options.baseUrl || null,
      model,
      name: spec.name,
      async runMission(session) {
        client ??= spec.makeClient({apiKey, baseUrl, model})
        await runToolLoop(session, await client, LOOP)
      },
    }
  }
}
