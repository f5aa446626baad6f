import {closest, InputError} from '@toolkit/kit'

import {type Access, AclConfigError, type CompiledAcl, compileAcl, compileToolAccess} from './acl.js'
import {CidrError} from './cidr.js'
import {BearerConfigError, bearerProvider} from './auth-providers/bearer.js'
import {type Chain, chain} from './auth-providers/chain.js'
import {ForwardedConfigError, forwardedProvider} from './auth-providers/forwarded.js'
import {noneProvider} from './auth-providers/none.js'
import {OAuthAsConfigError, type OAuthAsOptions, oauthAsOptions, oauthAsProvider} from './auth-providers/oauth-as.js'
import type {AuthProvider} from './auth-providers/types.js'

export const PROVIDER_NAMES = ['none', 'bearer', 'forwarded', 'oauth_as'] as const

export interface ProxyAuth {
  acl: CompiledAcl | undefined
  chain: Chain
  /** Set when `oauth_as` is among the providers. */
  oauthAs: OAuthAsOptions | undefined
  providers: string[]
  /** Per server: the operator's read/write override from `gwServers.<name>.toolAccess`. */
  toolAccess: Map<string, (tool: string) => Access | undefined>
  /** Things an operator must fix; printed at start and listed by /health. */
  warnings: string[]
}

const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g
const fill = (text: string, env: Record<string, string | undefined>): string => text.replaceAll(VARIABLE, (_, n: string) => env[n] ?? '')

/**
 * `${NAME}` replaced from the environment in every string inside `serverAuth`, object keys
 * included (static bearer tokens are keys, and secrets are given that way).
 */
function substitute(value: unknown, env: Record<string, string | undefined>): unknown {
  if (typeof value === 'string') return fill(value, env)
  if (Array.isArray(value)) return value.map((v) => substitute(v, env))
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [fill(k, env), substitute(v, env)]))
  }
  return value
}

/**
 * A bearer token given as `${NAME}` whose variable is unset would become an empty or partial
 * token that anyone could guess: that is a start-up error, never a usable credential.
 */
function checkTokenVariables(serverAuth: unknown, env: Record<string, string | undefined>): string | undefined {
  const tokens = isObject(serverAuth) && isObject(serverAuth.bearer) ? serverAuth.bearer.tokens : undefined
  if (!isObject(tokens)) return undefined
  let entry = 0
  for (const key of Object.keys(tokens)) {
    entry++
    const unset = [...key.matchAll(VARIABLE)].map((m) => m[1]).filter((n) => !env[n])
    if (unset.length > 0) return `serverAuth.bearer.tokens (entry ${entry}): the token is \${${unset[0]}}, which is not set in the environment`
  }
  return undefined
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * Reads `serverAuth` (and the per-server `toolAccess` overrides) of a servers.json object into
 * a ready chain, compiled ACL and warnings. Anything that would make the proxy less safe than
 * the operator meant (a short JWT secret, an unknown provider, an ACL policy typo) is an
 * error: the proxy refuses to start rather than guess.
 */
export function buildProxyAuth(
  raw: Record<string, unknown>,
  options: {env?: Record<string, string | undefined>; file?: string; oauthStateFile?: string} = {},
): ProxyAuth {
  const file = options.file
  const fail = (message: string): never => {
    throw new InputError(message, {code: 'config_invalid', file})
  }
  const env = options.env ?? process.env
  const unsetToken = checkTokenVariables(raw.serverAuth, env)
  if (unsetToken) fail(unsetToken)
  const sa = substitute(raw.serverAuth ?? {}, env)
  if (!isObject(sa)) return fail('serverAuth must be an object')
  const warnings: string[] = []

  let names: string[]
  if (sa.providers === undefined) {
    names = []
    if (sa.provider !== undefined) {
      warnings.push(
        `serverAuth.provider (${JSON.stringify(sa.provider)}) is the old single-provider form and is IGNORED: this proxy accepts every request WITHOUT authentication. ` +
          `Fix: replace it with "providers": [${JSON.stringify(String(sa.provider))}].`,
      )
    }
  } else {
    if (!Array.isArray(sa.providers) || !sa.providers.every((p) => typeof p === 'string')) return fail('serverAuth.providers must be an array of provider names')
    names = sa.providers as string[]
    if (sa.provider !== undefined) warnings.push('serverAuth.provider (the old single-provider form) is ignored because serverAuth.providers is set; remove it.')
  }
  for (const n of names) {
    if (!(PROVIDER_NAMES as readonly string[]).includes(n)) {
      const hint = closest(n, PROVIDER_NAMES)
      fail(`serverAuth.providers: unknown provider ${JSON.stringify(n)}${hint ? ` (did you mean "${hint}"?)` : ''}; known: ${PROVIDER_NAMES.join(', ')}`)
    }
  }
  if (new Set(names).size !== names.length) fail('serverAuth.providers lists a provider twice')
  if (names.length === 0) names = ['none']

  let oauthAs: OAuthAsOptions | undefined
  const providers: AuthProvider[] = []
  try {
    for (const n of names) {
      switch (n) {
        case 'bearer': {
          providers.push(bearerProvider(sa.bearer))
          break
        }
        case 'forwarded': {
          providers.push(forwardedProvider(sa.forwarded))
          break
        }
        case 'oauth_as': {
          oauthAs = oauthAsOptions(sa.oauthAs, {stateFile: options.oauthStateFile})
          providers.push(oauthAsProvider(oauthAs))
          break
        }
        default: {
          providers.push(noneProvider())
        }
      }
    }
  } catch (error) {
    if (error instanceof BearerConfigError || error instanceof ForwardedConfigError || error instanceof OAuthAsConfigError || error instanceof CidrError) fail(error.message)
    throw error
  }
  if (names.includes('none') && names.length > 1) {
    warnings.push('serverAuth.providers includes "none": every request is accepted (anonymously) whatever the other providers say.')
  }
  if (names.includes('forwarded') && !(isObject(sa.forwarded) && sa.forwarded.trusted_proxies !== undefined)) {
    warnings.push('forwarded: identity headers are trusted from any peer; run the proxy only behind a reverse proxy that strips them, or set serverAuth.forwarded.trusted_proxies.')
  }

  let acl: CompiledAcl | undefined
  const toolAccess = new Map<string, (tool: string) => Access | undefined>()
  try {
    acl = compileAcl(sa.acl)
    const servers = raw.gwServers ?? raw.mcpServers
    if (isObject(servers)) {
      for (const [name, entry] of Object.entries(servers)) {
        const t = isObject(entry) ? compileToolAccess(entry.toolAccess, `gwServers.${name}.toolAccess`) : undefined
        if (t) toolAccess.set(name, t)
      }
    }
  } catch (error) {
    if (error instanceof AclConfigError) fail(error.message)
    throw error
  }
  if (acl && names.length === 1 && names[0] === 'none' && acl.grants.size > 0) {
    warnings.push('acl.roles is set but no provider assigns roles (providers is "none"): only acl.default and role-less rules apply.')
  }
  return {acl, chain: chain(providers), oauthAs, providers: names, toolAccess, warnings}
}
