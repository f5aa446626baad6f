import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {expect} from 'chai'
import type {ChildProcess} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {type Everything, serveCli, startEverything} from '../proxy/helpers.js'
import {records, toolkit} from './cli.js'

/**
 * `gw acl check` and `gw acl classify` evaluate servers.json with the proxy's own ACL code; the
 * test holds them to what a running `gw serve` with the same file actually does.
 */
describe('gw acl check | classify (built CLI, server-everything, compared with gw serve)', function () {
  this.timeout(180_000)
  let everything: Everything
  let dir: string
  let config: string
  const children: ChildProcess[] = []
  const run = (args: string[], env: Record<string, string> = {}) => toolkit([...args, '--config', config], {cwd: dir, env, home: dir, timeoutMs: 60_000})

  before(async () => {
    everything = await startEverything()
    dir = mkdtempSync(join(tmpdir(), 'gw-acl-tools-'))
    config = join(dir, 'servers.json')
    writeFileSync(
      config,
      JSON.stringify({
        gwServers: {everything: {toolAccess: {'get-env': 'read', 'get-sum': 'write'}, url: everything.url}},
        serverAuth: {
          acl: {
            default: 'deny',
            roles: {
              dev: [{access: '*', server: '*'}, {deny: true, server: 'everything', tools: ['get-env']}],
              docs: [{access: 'read', server: 'everything', tools: ['simple-prompt', 'architecture.md', 'Dynamic Text Resource']}],
              viewer: [{access: 'read', server: 'everything'}],
            },
            rules: [{policy: 'deny', roles: ['*'], tools: ['*__toggle-*']}],
          },
          bearer: {tokens: {'${DEV_TOKEN}': {roles: ['dev'], subject: 'dana'}, '${DOCS_TOKEN}': {roles: ['docs'], subject: 'doc'}, '${VIEWER_TOKEN}': {roles: ['viewer'], subject: 'vic'}}},
          providers: ['bearer'],
        },
      }),
    )
  })

  after(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL')
    await everything?.kill()
    rmSync(dir, {force: true, recursive: true})
  })

  it('classify: every tool as read or write with the reason (override, annotation, default)', async () => {
    const r = await run(['gw', 'acl', 'classify', 'everything', '--format', 'json'])
    expect(r.code, r.stderr).to.equal(0)
    const byTool = Object.fromEntries(records(r.stdout).map((x) => [x.tool, x]))
    expect(byTool['get-sum']).to.deep.include({access: 'write', name: 'everything__get-sum', reason: 'override (gwServers.everything.toolAccess)', type: 'tool_access'})
    expect(byTool['get-env']).to.deep.include({access: 'read', reason: 'override (gwServers.everything.toolAccess)'})
    expect(byTool.echo).to.deep.include({access: 'read', reason: 'annotation readOnlyHint: true'})
    expect(byTool['toggle-simulated-logging']).to.deep.include({access: 'write', reason: 'default (readOnlyHint: false)'})
    const text = await run(['gw', 'acl', 'classify', 'everything'])
    expect(text.stdout).to.match(/^read\s+echo\s+annotation readOnlyHint: true$/m)
  })

  it('check: the decision and the rule are the ones gw serve applies to the same users', async () => {
    const cases = [
      {roles: 'viewer', token: 'viewer-secret', tool: 'echo', user: 'vic'},
      {roles: 'viewer', token: 'viewer-secret', tool: 'get-sum', user: 'vic'},
      {roles: 'dev', token: 'dev-secret', tool: 'get-sum', user: 'dana'},
      {roles: 'dev', token: 'dev-secret', tool: 'get-env', user: 'dana'},
      {roles: 'dev', token: 'dev-secret', tool: 'toggle-simulated-logging', user: 'dana'},
    ]
    const env = {...process.env, DEV_TOKEN: 'dev-secret', DOCS_TOKEN: 'docs-secret', GW_AUTH_FILE: join(dir, 'auth.json'), HOME: dir, VIEWER_TOKEN: 'viewer-secret', XDG_CONFIG_HOME: join(dir, 'xdg')}
    const serve = await serveCli(['--port', '0', '--config', config], env, (c) => children.push(c))
    for (const c of cases) {
      const check = await run(['gw', 'acl', 'check', '--user', c.user, '--roles', c.roles, '--tool', `everything__${c.tool}`, '--format', 'json'])
      expect(check.code, check.stderr).to.equal(0)
      const decision = records(check.stdout)[0] as {allowed: boolean; rule: string}
      const client = new Client({name: 'acl-compare', version: '1'})
      await client.connect(new StreamableHTTPClientTransport(new URL(serve.url), {requestInit: {headers: {authorization: `Bearer ${c.token}`}}}))
      const listed = (await client.listTools()).tools.some((t) => t.name === `everything__${c.tool}`)
      const called = await client.callTool({arguments: {a: 1, b: 2, message: 'x'}, name: `everything__${c.tool}`}).then(
        () => ({denied: false, message: ''}),
        (error: {code: number; message: string}) => ({denied: error.code === -32_003, message: error.message}),
      )
      await client.close()
      const what = `${c.user} ${c.tool}`
      expect(decision.allowed, what).to.equal(listed)
      expect(decision.allowed, what).to.equal(!called.denied)
      if (called.denied) expect(called.message, what).to.include(`decided by ${decision.rule}`)
    }
    serve.child.kill('SIGTERM')
    const text = await run(['gw', 'acl', 'check', '--user', 'dana', '--roles', 'dev', '--tool', 'everything__get-env'])
    expect(text.stdout).to.include('denied: dana (roles: dev) may not call everything__get-env (read tool: override (gwServers.everything.toolAccess)), decided by acl.roles.dev[1]')
  })

  it('check --prompt / --resource: the decision and rule gw serve applies to prompts/get and resources/read', async () => {
    const env = {...process.env, DEV_TOKEN: 'dev-secret', DOCS_TOKEN: 'docs-secret', GW_AUTH_FILE: join(dir, 'auth.json'), HOME: dir, VIEWER_TOKEN: 'viewer-secret', XDG_CONFIG_HOME: join(dir, 'xdg')}
    const serve = await serveCli(['--port', '0', '--config', config], env, (c) => children.push(c))
    const client = new Client({name: 'acl-compare', version: '1'})
    await client.connect(new StreamableHTTPClientTransport(new URL(serve.url), {requestInit: {headers: {authorization: 'Bearer docs-secret'}}}))
    const denied = (p: Promise<unknown>) =>
      p.then(
        () => ({denied: false, message: ''}),
        (error: {code: number; message: string}) => ({denied: error.code === -32_003, message: error.message}),
      )
    const cases = [
      {by: 'resource "architecture.md"', resource: 'everything__demo://resource/static/document/architecture.md'},
      {by: 'template "Dynamic Text Resource"', resource: 'everything__demo://resource/dynamic/text/7'},
      {by: 'template "Dynamic Blob Resource"', resource: 'everything__demo://resource/dynamic/blob/7'},
      {prompt: 'everything__simple-prompt'},
      {prompt: 'everything__args-prompt'},
    ]
    const seen: boolean[] = []
    try {
      for (const c of cases) {
        const flag = c.prompt === undefined ? ['--resource', c.resource!] : ['--prompt', c.prompt]
        const check = await run(['gw', 'acl', 'check', '--user', 'doc', '--roles', 'docs', ...flag, '--format', 'json'])
        expect(check.code, check.stderr).to.equal(0)
        const d = records(check.stdout)[0] as {access: string; access_reason: string; allowed: boolean; kind: string; rule: string; target: string}
        const what = c.prompt ?? c.resource!
        expect(d, what).to.deep.include({access: 'read', kind: c.prompt === undefined ? 'resource' : 'prompt', target: what})
        if (c.by) expect(d.access_reason, what).to.include(c.by)
        const got = await denied(c.prompt === undefined ? client.readResource({uri: c.resource!}) : client.getPrompt({arguments: {city: 'x'}, name: c.prompt}))
        expect(d.allowed, what).to.equal(!got.denied)
        if (got.denied) expect(got.message, what).to.include(`decided by ${d.rule}`)
        seen.push(d.allowed)
      }
    } finally {
      await client.close()
      serve.child.kill('SIGTERM')
    }
    expect(seen).to.deep.equal([true, true, false, true, false])
    const text = await run(['gw', 'acl', 'check', '--user', 'doc', '--roles', 'docs', '--prompt', 'everything__args-prompt'])
    expect(text.stdout).to.include('denied: doc (roles: docs) may not get prompt everything__args-prompt (prompts are reads), decided by acl.default')
    const unknown = await run(['gw', 'acl', 'check', '--prompt', 'everything__simple-promt'])
    expect(unknown.code).to.equal(2)
    expect(unknown.stderr).to.include('did you mean "everything__simple-prompt"?')
    const offline = await run(['gw', 'acl', 'check', '--resource', 'everything__demo://x', '--offline'])
    expect(offline.code).to.equal(2)
    const none = await run(['gw', 'acl', 'check', '--user', 'x'])
    expect(none.code).to.equal(2)
  })

  it('works offline: --access, an override or the cached tool list, without connecting; errors are usage errors', async () => {
    await everything.kill()
    try {
      const given = await run(['gw', 'acl', 'check', '--user', 'vic', '--roles', 'viewer', '--tool', 'everything__anything', '--access', 'read', '--offline', '--format', 'json'])
      expect(given.code, given.stderr).to.equal(0)
      expect(records(given.stdout)[0]).to.deep.include({access: 'read', access_reason: 'given (--access)', allowed: true, rule: 'acl.roles.viewer[0]'})
      // The earlier listing left a cached tool list: echo's annotation is known without the server.
      const cached = await run(['gw', 'acl', 'check', '--user', 'vic', '--roles', 'viewer', '--tool', 'everything__echo', '--offline', '--format', 'json'])
      expect(cached.code, cached.stderr).to.equal(0)
      expect(records(cached.stdout)[0]).to.deep.include({access: 'read', allowed: true})
      const noCache = await run(['gw', 'acl', 'classify', 'everything', '--offline'], {GW_TOOLS_CACHE_TTL: '0'})
      expect(noCache.code).to.equal(2)
      expect(noCache.stderr).to.include('no cached tool list for "everything" (--offline)')
      const unknownServer = await run(['gw', 'acl', 'check', '--tool', 'everythin__echo', '--offline'])
      expect(unknownServer.code).to.equal(2)
      expect(unknownServer.stderr).to.include('did you mean "everything__..."?')
      const unknownTool = await run(['gw', 'acl', 'check', '--tool', 'everything__ecoh', '--offline'])
      expect(unknownTool.code).to.equal(2)
      expect(unknownTool.stderr).to.include('did you mean "everything__echo"?')
    } finally {
      await everything.restart()
    }
  })

  it('an ACL the proxy would refuse is refused the same way (exit 2, naming the entry)', async () => {
    const bad = join(dir, 'bad.json')
    writeFileSync(bad, JSON.stringify({gwServers: {everything: {url: everything.url}}, serverAuth: {acl: {default: 'deny', rules: [{policy: 'Deny', tools: ['*']}]}}}))
    const r = await toolkit(['gw', 'acl', 'check', '--tool', 'everything__echo', '--access', 'read', '--config', bad], {cwd: dir, home: dir})
    expect(r.code).to.equal(2)
    expect(r.stderr).to.include('acl.rules[0].policy must be "allow" or "deny", not "Deny"')
  })
})
