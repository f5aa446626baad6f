import {expect} from 'chai'

import {type Access, type AclConfig, classify, compileAcl, compileToolAccess, evaluate, type User} from '../../src/proxy/acl.js'

const user = (subject: string, ...roles: string[]): User => ({provider: 'bearer', roles, subject})
const alice = user('alice', 'admin')
const bob = user('bob', 'viewer')
const carol = user('carol', 'viewer', 'dev')
const dave = user('dave', 'dev')
const eve = user('eve', 'intern')
const ghost = user('ghost', 'no-such-role')
const anon: User = {provider: 'none', roles: [], subject: 'anonymous'}
const Viewer = user('vic', 'Viewer')

const rbac: AclConfig = {
  default: 'deny',
  roles: {
    admin: [{access: '*', server: '*'}],
    dev: [
      {access: 'write', server: ['github', 'everything']},
      {access: 'read', server: 'everything'},
      {access: '*', deny: true, server: 'everything', tools: ['trigger*']},
    ],
    intern: [
      {access: '*', server: '*'},
      {access: 'write', deny: true, server: '*'},
    ],
    viewer: [{access: 'read', server: '*'}],
  },
}

const legacy: AclConfig = {
  default: 'allow',
  rules: [
    {policy: 'deny', roles: ['viewer'], tools: ['everything__trigger*']},
    {policy: 'allow', roles: ['viewer'], tools: ['everything__*']},
    {policy: 'deny', roles: ['viewer'], tools: ['*']},
    {roles: ['dev'], tools: ['github__*']},
    {policy: 'deny', subjects: ['eve'], tools: ['*']},
    {policy: 'deny', roles: ['*'], tools: ['*__delete_*']},
  ],
}

const legacyDenyDefault: AclConfig = {default: 'deny', rules: [{policy: 'allow', roles: ['dev'], tools: ['everything__echo']}]}

const mixed: AclConfig = {
  default: 'deny',
  roles: {ops: [{access: '*', deny: true, server: 'prod'}], reader: [{access: 'read', server: '*'}]},
  rules: [
    {policy: 'allow', roles: ['ops'], tools: ['prod__*']},
    {policy: 'deny', roles: ['reader'], tools: ['docs__secret*']},
  ],
}

const byName = {'acl.default-allow-only': {default: 'allow'}, 'default-only': {default: 'deny'}, 'empty-object': {}, legacy, legacyDenyDefault, mixed, rbac} as const

type Case = [name: string, acl: keyof typeof byName | 'none', who: User, server: string, tool: string, access: Access, allowed: boolean, rule: string]

const cases: Case[] = [
  // no ACL and default-only ACLs
  ['no acl allows everything', 'none', anon, 'everything', 'echo', 'write', true, 'no acl'],
  ['default deny with no rules denies', 'default-only', alice, 'everything', 'echo', 'read', false, 'acl.default'],
  ['default allow with no rules allows', 'acl.default-allow-only', anon, 'everything', 'echo', 'write', true, 'acl.default'],
  ['an acl without default denies (secure default)', 'empty-object', alice, 'everything', 'echo', 'read', false, 'acl.default'],
  // role-based: wildcard server and access
  ['admin "*" grants a write tool', 'rbac', alice, 'everything', 'echo', 'write', true, 'acl.roles.admin[0]'],
  ['admin "*" grants a read tool on any server', 'rbac', alice, 'github', 'get_issue', 'read', true, 'acl.roles.admin[0]'],
  // read/write expansion
  ['viewer read grant allows a read tool', 'rbac', bob, 'everything', 'get-sum', 'read', true, 'acl.roles.viewer[0]'],
  ['viewer read grant does not cover a write tool', 'rbac', bob, 'everything', 'echo', 'write', false, 'acl.default'],
  ['dev write grant covers a write tool on a listed server', 'rbac', dave, 'github', 'create_issue', 'write', true, 'acl.roles.dev[0]'],
  ['dev write grant does not cover read on github', 'rbac', dave, 'github', 'get_issue', 'read', false, 'acl.default'],
  ['dev read grant on everything covers read there', 'rbac', dave, 'everything', 'get-sum', 'read', true, 'acl.roles.dev[1]'],
  ['dev has nothing on an unlisted server', 'rbac', dave, 'slack', 'post', 'write', false, 'acl.default'],
  // deny always wins, whatever the order and the other roles
  ['dev deny on trigger* beats the dev write grant', 'rbac', dave, 'everything', 'trigger-long-running', 'write', false, 'acl.roles.dev[2]'],
  ['dev deny on trigger* beats the read grant too', 'rbac', dave, 'everything', 'trigger-sampling', 'read', false, 'acl.roles.dev[2]'],
  ['a deny in one role beats an allow in another role (union)', 'rbac', carol, 'everything', 'trigger-sampling', 'read', false, 'acl.roles.dev[2]'],
  ['union: viewer read + dev write both apply', 'rbac', carol, 'github', 'create_issue', 'write', true, 'acl.roles.dev[0]'],
  ['union: viewer read on github for carol', 'rbac', carol, 'github', 'get_issue', 'read', true, 'acl.roles.viewer[0]'],
  ['intern deny write beats intern "*" grant', 'rbac', eve, 'everything', 'echo', 'write', false, 'acl.roles.intern[1]'],
  ['intern deny write leaves read allowed', 'rbac', eve, 'everything', 'get-sum', 'read', true, 'acl.roles.intern[0]'],
  // unknown roles and case sensitivity
  ['an unknown role grants nothing', 'rbac', ghost, 'everything', 'get-sum', 'read', false, 'acl.default'],
  ['anonymous (no roles) gets the default', 'rbac', anon, 'everything', 'get-sum', 'read', false, 'acl.default'],
  ['role names are case-sensitive', 'rbac', Viewer, 'everything', 'get-sum', 'read', false, 'acl.default'],
  // legacy: first match wins
  ['legacy: first deny rule matches before the allow rule', 'legacy', bob, 'everything', 'trigger-long-running', 'write', false, 'acl.rules[0]'],
  ['legacy: allow rule for the viewer on everything', 'legacy', bob, 'everything', 'echo', 'write', true, 'acl.rules[1]'],
  ['legacy: viewer caught by the catch-all deny elsewhere', 'legacy', bob, 'github', 'get_issue', 'read', false, 'acl.rules[2]'],
  ['legacy: a rule without policy allows', 'legacy', dave, 'github', 'create_issue', 'write', true, 'acl.rules[3]'],
  ['legacy: subjects match by name', 'legacy', eve, 'github', 'get_issue', 'read', false, 'acl.rules[4]'],
  ['legacy: roles ["*"] matches anyone', 'legacy', alice, 'files', 'delete_file', 'write', false, 'acl.rules[5]'],
  ['legacy: roles ["*"] matches anonymous too', 'legacy', anon, 'files', 'delete_all', 'write', false, 'acl.rules[5]'],
  ['legacy: nothing matches, default allow', 'legacy', alice, 'files', 'read_file', 'read', true, 'acl.default'],
  ['legacy: dev on a server with no rule falls to default', 'legacy', dave, 'everything', 'echo', 'write', true, 'acl.default'],
  ['legacy: access class does not matter', 'legacy', bob, 'everything', 'get-sum', 'read', true, 'acl.rules[1]'],
  ['legacy: exact tool allow with default deny', 'legacyDenyDefault', dave, 'everything', 'echo', 'write', true, 'acl.rules[0]'],
  ['legacy: exact pattern does not match a longer name', 'legacyDenyDefault', dave, 'everything', 'echo2', 'write', false, 'acl.default'],
  ['legacy: exact pattern does not match another server', 'legacyDenyDefault', dave, 'other', 'echo', 'write', false, 'acl.default'],
  ['legacy: wrong role falls to default deny', 'legacyDenyDefault', bob, 'everything', 'echo', 'write', false, 'acl.default'],
  // both schemas: role deny > legacy first match > role allow > default
  ['mixed: role deny beats a legacy allow', 'mixed', user('o', 'ops'), 'prod', 'restart', 'write', false, 'acl.roles.ops[0]'],
  ['mixed: legacy deny beats a role allow', 'mixed', user('r', 'reader'), 'docs', 'secret_get', 'read', false, 'acl.rules[1]'],
  ['mixed: role allow when no legacy rule matches', 'mixed', user('r', 'reader'), 'docs', 'get', 'read', true, 'acl.roles.reader[0]'],
  ['mixed: nothing matches, default deny', 'mixed', user('r', 'reader'), 'docs', 'put', 'write', false, 'acl.default'],
  ['mixed: ops on another server matches nothing: default deny', 'mixed', user('o', 'ops', 'x'), 'staging', 'x', 'write', false, 'acl.default'],
]

describe('proxy ACL evaluator (table)', () => {
  const compiled = Object.fromEntries(Object.entries(byName).map(([k, v]) => [k, compileAcl(v)]))
  for (const [name, aclName, who, server, tool, access, allowed, rule] of cases) {
    it(name, () => {
      const acl = aclName === 'none' ? undefined : compiled[aclName]
      expect(evaluate(acl, who, {access, server, tool})).to.deep.equal({allowed, rule})
    })
  }

  it('has at least 40 cases', () => expect(cases.length).to.be.at.least(40))

  it('grant order inside and across roles does not change a decision', () => {
    const reversed = compileAcl({
      default: 'deny',
      roles: {dev: [...rbac.roles!.dev].reverse(), viewer: rbac.roles!.viewer},
    })
    const who = user('c', 'dev', 'viewer')
    const whoReversed = user('c', 'viewer', 'dev')
    for (const [tool, access] of [['trigger-x', 'read'], ['echo', 'write'], ['get-sum', 'read']] as const) {
      const a = evaluate(compileAcl(rbac), who, {access, server: 'everything', tool}).allowed
      expect(evaluate(reversed, whoReversed, {access, server: 'everything', tool}).allowed).to.equal(a)
    }
  })

  it('grant tools may name the prefixed tool', () => {
    const acl = compileAcl({default: 'deny', roles: {r: [{access: '*', server: '*', tools: ['everything__get-*']}]}})
    expect(evaluate(acl, user('x', 'r'), {access: 'write', server: 'everything', tool: 'get-env'}).allowed).to.equal(true)
    expect(evaluate(acl, user('x', 'r'), {access: 'write', server: 'other', tool: 'get-env'}).allowed).to.equal(false)
  })

  it('a "*" in a pattern matches across underscores and dots; other characters are literal', () => {
    const acl = compileAcl({default: 'deny', rules: [{policy: 'allow', tools: ['a.b__x*']}]})
    expect(evaluate(acl, anon, {access: 'read', server: 'a.b', tool: 'x_y.z'}).allowed).to.equal(true)
    expect(evaluate(acl, anon, {access: 'read', server: 'aXb', tool: 'x'}).allowed).to.equal(false)
  })
})

describe('proxy ACL config validation', () => {
  const bad: Array<[string, unknown, RegExp]> = [
    ['default typo', {default: 'alow'}, /acl.default must be "allow" or "deny"/],
    ['legacy policy typo', {rules: [{policy: 'Deny', tools: ['*']}]}, /acl.rules\[0\].policy/],
    ['legacy rule without tools', {rules: [{policy: 'deny'}]}, /acl.rules\[0\].tools is required/],
    ['grant access typo', {roles: {a: [{access: 'readonly', server: '*'}]}}, /acl.roles.a\[0\].access/],
    ['grant without server', {roles: {a: [{access: 'read'}]}}, /acl.roles.a\[0\].server is required/],
    ['role not an array', {roles: {a: {access: 'read', server: '*'}}}, /acl.roles.a must be an array/],
    ['deny not boolean', {roles: {a: [{access: '*', deny: 'yes', server: '*'}]}}, /deny must be true or false/],
    ['acl not an object', ['x'], /acl must be an object/],
  ]
  for (const [name, raw, message] of bad) {
    it(`refuses ${name}`, () => expect(() => compileAcl(raw)).to.throw(message))
  }
})

describe('tool classification', () => {
  const override = compileToolAccess({'*': 'read', 'danger*': 'write', echo: 'write', 'get-env': 'read'}, 'gwServers.x.toolAccess')
  it('an exact override wins', () => {
    expect(classify(override, 'echo', {readOnlyHint: true})).to.equal('write')
    expect(classify(override, 'get-env', {readOnlyHint: false})).to.equal('read')
  })
  it('among patterns, write wins', () => expect(classify(override, 'danger-zone', undefined)).to.equal('write'))
  it('a broad read pattern applies to the rest', () => expect(classify(override, 'other', undefined)).to.equal('read'))
  it('without override, readOnlyHint true is read and anything else write', () => {
    expect(classify(undefined, 'a', {readOnlyHint: true})).to.equal('read')
    expect(classify(undefined, 'a', {readOnlyHint: 'true'})).to.equal('write')
    expect(classify(undefined, 'a', {})).to.equal('write')
    expect(classify(undefined, 'a', undefined)).to.equal('write')
  })
  it('refuses an override value other than read or write', () => {
    expect(() => compileToolAccess({x: 'ro'}, 'gwServers.s.toolAccess')).to.throw(/gwServers.s.toolAccess.x must be "read" or "write"/)
  })
})
