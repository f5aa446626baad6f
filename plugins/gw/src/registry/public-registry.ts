import {UsageError} from '@toolkit/kit'

import {UnreachableError} from '../client/errors.js'
import {networkReason} from '../client/network-reason.js'

/**
 * A client of the official MCP registry's read API (registry.modelcontextprotocol.io, `/v0.1`):
 * `GET /v0.1/servers?search=` and `GET /v0.1/servers/{name}/versions/latest`. Any registry that
 * serves the same shape (a company's own) works through `--registry` or GW_REGISTRY_URL.
 */
export const DEFAULT_REGISTRY = 'https://registry.modelcontextprotocol.io'

interface Input {
  default?: string
  isRequired?: boolean
  isSecret?: boolean
  name?: string
  value?: string
}

interface Remote {
  headers?: Input[]
  type?: string
  url?: string
}

interface Package {
  environmentVariables?: Input[]
  identifier?: string
  packageArguments?: Array<Input & {type?: string}>
  registryType?: string
  transport?: {type?: string}
  version?: string
}

export interface RegistryServer {
  description?: string
  name: string
  packages?: Package[]
  remotes?: Remote[]
  title?: string
  version?: string
}

export interface SearchRecord {
  [k: string]: unknown
  description?: string
  name: string
  packages: string[]
  remotes: string[]
  title?: string
  version?: string
}

export const registryBase = (flag: string | undefined, env: Record<string, string | undefined>): string => (flag || env.GW_REGISTRY_URL || DEFAULT_REGISTRY).replace(/\/+$/, '')

async function getJson(url: URL): Promise<unknown> {
  let res: Response
  try {
    res = await fetch(url, {headers: {accept: 'application/json'}, signal: AbortSignal.timeout(15_000)})
  } catch (error) {
    throw new UnreachableError(`cannot reach the registry at ${url.origin}: ${networkReason(error) ?? (error as Error).message}`, error)
  }
  if (res.status === 404) return undefined
  if (!res.ok) throw new UnreachableError(`the registry at ${url.origin} answered HTTP ${res.status}`)
  try {
    return await res.json()
  } catch {
    throw new UnreachableError(`the registry at ${url.origin} did not answer JSON`)
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** One page of search results (the registry's latest version of each server). */
export async function searchRegistry(base: string, query: string, limit: number): Promise<SearchRecord[]> {
  const url = new URL(`${base}/v0.1/servers`)
  url.searchParams.set('search', query)
  url.searchParams.set('version', 'latest')
  url.searchParams.set('limit', String(limit))
  const data = await getJson(url)
  const list = isObject(data) && Array.isArray(data.servers) ? data.servers : undefined
  if (!list) throw new UnreachableError(`the registry at ${url.origin} answered something that is not a server list`)
  return list
    .map((item: unknown) => (isObject(item) && isObject(item.server) ? (item.server as unknown as RegistryServer) : undefined))
    .filter((s): s is RegistryServer => typeof s?.name === 'string')
    .map((s) => ({
      description: s.description,
      name: s.name,
      packages: (s.packages ?? []).map((p) => `${p.registryType ?? '?'}:${p.identifier ?? '?'}${p.version ? `@${p.version}` : ''}`),
      remotes: (s.remotes ?? []).map((r) => r.url ?? '').filter(Boolean),
      title: s.title,
      version: s.version,
    }))
}

/** The latest version of one server by its registry name (`io.github.owner/name`). */
export async function fetchRegistryServer(base: string, name: string): Promise<RegistryServer> {
  const data = await getJson(new URL(`${base}/v0.1/servers/${encodeURIComponent(name)}/versions/latest`))
  const server = isObject(data) && isObject(data.server) ? (data.server as unknown as RegistryServer) : undefined
  if (!server) throw new UsageError(`the registry at ${new URL(base).origin} has no server "${name}"; \`toolkit gw search\` finds names`, 'unknown_registry_server')
  return server
}

/** `API_KEY` for `api-key`, `X-Api-Key`: an environment variable name for an input. */
const variableFor = (name: string): string => name.replaceAll(/[^A-Za-z0-9]+/g, '_').replace(/^_+|_+$/g, '').toUpperCase()

/** A registry value template (`Bearer {api_key}`) with each `{x}` as `${X}`, so the secret stays in the environment. */
const template = (value: string): string => value.replaceAll(/\{([^{}]+)\}/g, (_, v: string) => `\${${variableFor(v)}}`)

export interface FromRegistry {
  entry: Record<string, unknown>
  /** Environment variables the entry reads, for the user to set. */
  variables: string[]
}

/**
 * A servers.json entry for a registry server: its Streamable HTTP remote when it has one (else
 * its SSE remote), else its first npm, PyPI or OCI package run over stdio. Every header, env value
 * and argument the registry marks as input becomes `${VAR}`, never a value written in the file.
 */
export function entryFromRegistry(s: RegistryServer): FromRegistry {
  const variables = new Set<string>()
  const input = (i: Input): string | undefined => {
    if (i.value) {
      const t = template(i.value)
      for (const m of t.matchAll(/\$\{([A-Z0-9_]+)\}/g)) variables.add(m[1])
      return t
    }
    if (i.isSecret || i.isRequired || !i.default) {
      const v = variableFor(i.name ?? '')
      if (!v) return undefined
      variables.add(v)
      return `\${${v}}`
    }
    return i.default
  }
  const remote = s.remotes?.find((r) => r.type === 'streamable-http' && r.url) ?? s.remotes?.find((r) => r.type === 'sse' && r.url)
  if (remote?.url) {
    const headers: Record<string, string> = {}
    for (const h of remote.headers ?? []) {
      const v = h.name ? input(h) : undefined
      if (h.name && v !== undefined) headers[h.name] = v
    }
    return {entry: {url: template(remote.url), ...(Object.keys(headers).length > 0 ? {headers} : {})}, variables: [...variables]}
  }
  const pkg = s.packages?.find((p) => ['npm', 'oci', 'pypi'].includes(p.registryType ?? '') && p.identifier && (p.transport?.type ?? 'stdio') === 'stdio')
  if (!pkg?.identifier) {
    throw new UsageError(`registry server "${s.name}" offers neither an HTTP remote nor an npm, PyPI or OCI package gw can run; add it by hand with --url or -- COMMAND`, 'unsupported_registry_server')
  }
  const env: Record<string, string> = {}
  for (const e of pkg.environmentVariables ?? []) {
    const v = e.name ? input(e) : undefined
    if (e.name && v !== undefined) env[e.name] = v
  }
  const args: string[] = []
  for (const a of pkg.packageArguments ?? []) {
    const v = input(a)
    if (v === undefined) continue
    if (a.type === 'named' && a.name) args.push(a.name)
    args.push(v)
  }
  const version = pkg.version ? pkg.version : undefined
  const id = pkg.identifier
  const command =
    pkg.registryType === 'npm'
      ? ['npx', '-y', version ? `${id}@${version}` : id]
      : pkg.registryType === 'pypi'
        ? ['uvx', version ? `${id}==${version}` : id]
        : ['docker', 'run', '-i', '--rm', ...Object.keys(env).flatMap((k) => ['-e', k]), version && !/:[^/]+$/.test(id) ? `${id}:${version}` : id]
  const [cmd, ...rest] = [...command, ...args]
  return {entry: {command: cmd, ...(rest.length > 0 ? {args: rest} : {}), ...(Object.keys(env).length > 0 ? {env} : {})}, variables: [...variables]}
}
