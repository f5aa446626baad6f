import type {Tool} from '@modelcontextprotocol/sdk/types.js'

import {InputError} from '@toolkit/kit'

import type {ServersConfig} from '../client/config.js'

import {type Access, AclConfigError, classify, type CompiledAcl, compileAcl, compileToolAccess} from '../proxy/acl.js'

/** The proxy's ACL and per-server `toolAccess` overrides, compiled from servers.json by the proxy's own code. */
export interface Policy {
  acl: CompiledAcl | undefined
  file: string | undefined
  overrides: Map<string, (tool: string) => Access | undefined>
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * Only the ACL parts of `serverAuth` are read: a check must not need the proxy's secrets (bearer
 * tokens, the JWT secret) in the environment. Errors are the ones the proxy stops at start with.
 */
export function loadPolicy(config: ServersConfig): Policy {
  const sa = isObject(config.raw.serverAuth) ? config.raw.serverAuth : {}
  const overrides = new Map<string, (tool: string) => Access | undefined>()
  try {
    const acl = compileAcl(sa.acl)
    for (const [name, entry] of Object.entries(config.servers)) {
      const o = compileToolAccess(entry.toolAccess, `gwServers.${name}.toolAccess`)
      if (o) overrides.set(name, o)
    }
    return {acl, file: config.file, overrides}
  } catch (error) {
    if (error instanceof AclConfigError) throw new InputError(error.message, {code: 'config_invalid', file: config.file})
    throw error
  }
}

export interface Classified {
  access: Access
  /** Why: `override (gwServers.x.toolAccess)`, `annotation readOnlyHint: true`, `default (...)`. */
  reason: string
}

/** A tool's access class as the proxy decides it (its `classify`), with the reason spelled out. */
export function classifyTool(policy: Policy, server: string, tool: string, annotations: Tool['annotations'] | undefined): Classified {
  const override = policy.overrides.get(server)
  const access = classify(override, tool, annotations)
  if (override?.(tool)) return {access, reason: `override (gwServers.${server}.toolAccess)`}
  if (access === 'read') return {access, reason: 'annotation readOnlyHint: true'}
  const hint = annotations?.readOnlyHint
  return {access, reason: hint === undefined ? 'default (no readOnlyHint annotation)' : `default (readOnlyHint: ${JSON.stringify(hint)})`}
}
