import {compileGlob, compileGlobs} from './glob.js'

/**
 * The tool ACL: a pure function from (user, tool, classification) to a decision and the rule that
 * made it. docs/gw-acl.md is the prose version of `evaluate()` below; keep the two in step.
 */

export type Access = 'read' | 'write'
export type Policy = 'allow' | 'deny'

export interface User {
  /** The provider that accepted the request (`none`, `bearer`, `forwarded`, `oauth_as`, `stdio`). */
  provider: string
  roles: readonly string[]
  subject: string
}

export interface Grant {
  access: '*' | Access
  /** A deny grant removes what it matches, whatever any other role grants. */
  deny?: boolean
  server: string | string[]
  tools?: string[]
}

export interface LegacyRule {
  /** Missing means `allow` (the legacy schema's implicit value); anything but allow/deny is refused at start. */
  policy?: Policy
  roles?: string[]
  subjects?: string[]
  tools: string[]
}

export interface AclConfig {
  default?: Policy
  roles?: Record<string, Grant[]>
  rules?: LegacyRule[]
}

export interface ToolRef {
  access: Access
  server: string
  /** The upstream tool name, without the `<server>__` prefix. */
  tool: string
}

export interface Decision {
  allowed: boolean
  /** Which rule decided, as a config path: `acl.roles.dev[0]`, `acl.rules[2]`, `acl.default`, `no acl`. */
  rule: string
}

export const TOOL_SEPARATOR = '__'

interface CompiledGrant {
  access: '*' | Access
  deny: boolean
  name: string
  server: (server: string) => boolean
  tool: (server: string, tool: string) => boolean
}

interface CompiledRule {
  name: string
  policy: Policy
  roles?: Set<string>
  subjects?: Set<string>
  tools: (fullName: string) => boolean
}

export interface CompiledAcl {
  defaultPolicy: Policy
  /** Grants by role name, in file order. */
  grants: Map<string, CompiledGrant[]>
  rules: CompiledRule[]
}

/** Thrown for an ACL that cannot be evaluated safely; the proxy refuses to start with it. */
export class AclConfigError extends Error {}

function asList(v: unknown, where: string): string[] | undefined {
  if (v === undefined) return undefined
  const list = typeof v === 'string' ? [v] : v
  if (!Array.isArray(list) || !list.every((x) => typeof x === 'string')) {
    throw new AclConfigError(`${where} must be a string or an array of strings`)
  }
  return list
}

function compileGrant(raw: unknown, name: string): CompiledGrant {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new AclConfigError(`${name} must be an object {server, access, tools?}`)
  const g = raw as Record<string, unknown>
  const servers = asList(g.server, `${name}.server`)
  if (!servers || servers.length === 0) throw new AclConfigError(`${name}.server is required ("*" means every server)`)
  const access = g.access ?? '*'
  if (access !== '*' && access !== 'read' && access !== 'write') {
    throw new AclConfigError(`${name}.access must be "*", "read" or "write", not ${JSON.stringify(access)}`)
  }
  if (g.deny !== undefined && typeof g.deny !== 'boolean') throw new AclConfigError(`${name}.deny must be true or false`)
  const tools = asList(g.tools, `${name}.tools`)
  let tool: CompiledGrant['tool'] = () => true
  if (tools && tools.length > 0) {
    // A pattern with `__` names the prefixed tool (`everything__get*`); a bare one names the upstream tool.
    const bare = compileGlobs(tools.filter((t) => !t.includes(TOOL_SEPARATOR)))
    const full = compileGlobs(tools.filter((t) => t.includes(TOOL_SEPARATOR)))
    tool = (server, t) => bare(t) || full(`${server}${TOOL_SEPARATOR}${t}`)
  }
  return {access, deny: g.deny === true, name, server: compileGlobs(servers), tool}
}

function compileRule(raw: unknown, name: string): CompiledRule {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new AclConfigError(`${name} must be an object {roles, tools, policy}`)
  const r = raw as Record<string, unknown>
  const policy = r.policy ?? 'allow'
  if (policy !== 'allow' && policy !== 'deny') {
    throw new AclConfigError(`${name}.policy must be "allow" or "deny", not ${JSON.stringify(policy)}`)
  }
  const tools = asList(r.tools, `${name}.tools`)
  if (!tools || tools.length === 0) throw new AclConfigError(`${name}.tools is required (use ["*"] for every tool)`)
  const roles = asList(r.roles, `${name}.roles`)
  const subjects = asList(r.subjects, `${name}.subjects`)
  return {
    name,
    policy,
    // Empty or containing "*" means "anyone": a Set of undefined skips the test.
    roles: roles && roles.length > 0 && !roles.includes('*') ? new Set(roles) : undefined,
    subjects: subjects && subjects.length > 0 && !subjects.includes('*') ? new Set(subjects) : undefined,
    tools: compileGlobs(tools),
  }
}

/** Validates and precompiles an `acl` object; `undefined` means no ACL (everything allowed). */
export function compileAcl(raw: unknown): CompiledAcl | undefined {
  if (raw === undefined || raw === null) return undefined
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new AclConfigError('acl must be an object {default, roles?, rules?}')
  const acl = raw as Record<string, unknown>
  const defaultPolicy = acl.default ?? 'deny'
  if (defaultPolicy !== 'allow' && defaultPolicy !== 'deny') {
    throw new AclConfigError(`acl.default must be "allow" or "deny", not ${JSON.stringify(defaultPolicy)}`)
  }
  const grants = new Map<string, CompiledGrant[]>()
  if (acl.roles !== undefined) {
    if (typeof acl.roles !== 'object' || acl.roles === null || Array.isArray(acl.roles)) {
      throw new AclConfigError('acl.roles must be an object mapping a role name to an array of grants')
    }
    for (const [role, list] of Object.entries(acl.roles)) {
      if (!Array.isArray(list)) throw new AclConfigError(`acl.roles.${role} must be an array of grants`)
      grants.set(role, list.map((g, i) => compileGrant(g, `acl.roles.${role}[${i}]`)))
    }
  }
  let rules: CompiledRule[] = []
  if (acl.rules !== undefined) {
    if (!Array.isArray(acl.rules)) throw new AclConfigError('acl.rules must be an array')
    rules = acl.rules.map((r, i) => compileRule(r, `acl.rules[${i}]`))
  }
  return {defaultPolicy, grants, rules}
}

function covers(grantAccess: '*' | Access, access: Access): boolean {
  return grantAccess === '*' || grantAccess === access
}

/**
 * The decision for one tool. Order (docs/gw-acl.md):
 *   1. no ACL configured: allow;
 *   2. a deny grant of any of the user's roles that matches server, tool and access: deny;
 *   3. the legacy rules, first match wins;
 *   4. an allow grant of any of the user's roles that matches: allow;
 *   5. acl.default.
 */
export function evaluate(acl: CompiledAcl | undefined, user: User, ref: ToolRef): Decision {
  if (!acl) return {allowed: true, rule: 'no acl'}
  let allow: string | undefined
  if (acl.grants.size > 0) {
    for (const role of user.roles) {
      const list = acl.grants.get(role)
      if (!list) continue
      for (const g of list) {
        if (!g.server(ref.server) || !covers(g.access, ref.access) || !g.tool(ref.server, ref.tool)) continue
        if (g.deny) return {allowed: false, rule: g.name}
        allow ??= g.name
      }
    }
  }
  if (acl.rules.length > 0) {
    const full = `${ref.server}${TOOL_SEPARATOR}${ref.tool}`
    for (const r of acl.rules) {
      if (r.subjects && !r.subjects.has(user.subject)) continue
      if (r.roles && !user.roles.some((role) => r.roles!.has(role))) continue
      if (!r.tools(full)) continue
      return {allowed: r.policy === 'allow', rule: r.name}
    }
  }
  if (allow) return {allowed: true, rule: allow}
  return {allowed: acl.defaultPolicy === 'allow', rule: 'acl.default'}
}

/** A tool's access class: the operator's override first, then `readOnlyHint: true`, else write. */
export function classify(
  override: ((tool: string) => Access | undefined) | undefined,
  tool: string,
  annotations: {readOnlyHint?: unknown} | undefined,
): Access {
  const forced = override?.(tool)
  if (forced) return forced
  return annotations?.readOnlyHint === true ? 'read' : 'write'
}

/**
 * Compiles `gwServers.<name>.toolAccess` ({"<tool or pattern>": "read" | "write"}). An exact name
 * wins over patterns; among matching patterns `write` wins, so a broad `"*": "read"` cannot
 * silently downgrade a tool the operator also marked as write.
 */
export function compileToolAccess(raw: unknown, where: string): ((tool: string) => Access | undefined) | undefined {
  if (raw === undefined) return undefined
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new AclConfigError(`${where} must be an object mapping a tool name or pattern to "read" or "write"`)
  }
  const exact = new Map<string, Access>()
  const patterns: Array<{access: Access; test: (t: string) => boolean}> = []
  for (const [pattern, access] of Object.entries(raw)) {
    if (access !== 'read' && access !== 'write') {
      throw new AclConfigError(`${where}.${pattern} must be "read" or "write", not ${JSON.stringify(access)}`)
    }
    if (pattern.includes('*')) patterns.push({access, test: compileGlob(pattern)})
    else exact.set(pattern, access)
  }
  return (tool) => {
    const e = exact.get(tool)
    if (e) return e
    let found: Access | undefined
    for (const p of patterns) {
      if (!p.test(tool)) continue
      if (p.access === 'write') return 'write'
      found = 'read'
    }
    return found
  }
}
