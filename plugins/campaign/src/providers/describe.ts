import type {ApiProviderSpec} from './api/provider.js'
import {baseUrlOf, keyOf} from './api/provider.js'
import {DEFAULT_URLS} from './api/specs.js'

export type ProviderKind = 'agent-cli' | 'api' | 'offline'

/** One row of `campaign providers`. */
export interface ProviderDescription {
  base_url: null | string
  default_model: null | string
  /** Why it is or is not usable, in a few words. */
  detail: string
  kind: ProviderKind
  name: string
  usable: boolean
}

export interface DescribeOptions {
  baseUrl: null | string
  /** Also contact the endpoint (or run the CLI) to see that it answers. */
  check: boolean
  /** The model configured for this provider, if any. */
  model: null | string
}

/** An API provider's row: usable when its key is set (and, with --check, its endpoint answers). */
export async function describeApi(spec: ApiProviderSpec, o: DescribeOptions): Promise<ProviderDescription> {
  const key = keyOf(spec) !== null
  const baseUrl = baseUrlOf(spec, o)
  const row: ProviderDescription = {base_url: baseUrl, default_model: o.model ?? spec.defaultModel, detail: '', kind: 'api', name: spec.name, usable: true}
  const missing: string[] = []
  if (spec.keyRequired && !key) missing.push(`set ${spec.keyVariable}`)
  if (spec.needsBaseUrl && !baseUrl) missing.push(`give --base-url${spec.baseUrlVariable ? ` or set ${spec.baseUrlVariable}` : ''}`)
  if (!row.default_model) missing.push('give --model')
  if (missing.length > 0) return {...row, detail: missing.join('; '), usable: false}
  row.detail = spec.keyRequired || key ? `${spec.keyVariable} is set` : 'no key needed'
  const target = baseUrl ?? DEFAULT_URLS[spec.name]
  if (o.check && target) {
    const reached = await reachable(target)
    row.detail += reached === null ? `; ${target} answers` : `; ${target} is unreachable (${reached})`
    row.usable = reached === null
  }
  return row
}

/** Null when the URL answers anything at all over HTTP within 5 s; otherwise why not. */
async function reachable(url: string): Promise<null | string> {
  try {
    await fetch(url, {method: 'GET', signal: AbortSignal.timeout(5000)})
    return null
  } catch (error) {
    const cause = (error as {cause?: {code?: string}}).cause?.code
    return cause ?? (error as Error).message
  }
}
