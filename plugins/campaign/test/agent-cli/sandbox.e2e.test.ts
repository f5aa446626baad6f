import {expect} from 'chai'
import {join} from 'node:path'

import {startAnthropic} from '../fakes/anthropic.js'
import {startOpenAI} from '../fakes/openai.js'
import type {Fake, Script} from '../fakes/server.js'
import {exampleDir, runCli, tempDir} from '../helpers.js'
import {KEY} from './cases.js'
import {cliPath} from './cli-env.js'
import {startCodexDialect} from './codex-dialect.js'

type Json = Record<string, unknown>

const MCP_RESOURCE_TOOLS = new Set(['list_mcp_resource_templates', 'list_mcp_resources', 'read_mcp_resource'])

// The model answers every request with words and no tool call: each CLI sends its first request
// (tools included) and ends, which is all this test needs to see; the plan then fails (no finish).
const talkOnly: Script = () => ({calls: [], text: 'Nothing to do.'})

async function generate(provider: string, env: Record<string, string>) {
  return runCli(['campaign', 'generate', join(exampleDir, 'business.toml'), '--provider', provider, '--model', 'test-model', '--skip-url-check', '--out', tempDir()], {
    env: {ANTHROPIC_API_KEY: '', CODEX_API_KEY: '', OPENAI_API_KEY: '', PATH: cliPath, TOOLKIT_CAMPAIGN_AGENT_TIMEOUT_MS: '120000', ...env},
    timeoutMs: 280_000,
  })
}

/** The tool definitions of every model request that offered tools. */
function toolsOffered(requests: Array<{body: unknown}>): Json[][] {
  return requests.map((r) => ((r.body as Json | null)?.tools ?? []) as Json[]).filter((t) => t.length > 0)
}

describe('agent-cli sandbox: the model is offered our MCP tools and nothing else', function () {
  this.timeout(300_000)
  const fakes: Fake[] = []
  after(async () => {
    for (const f of fakes) await f.close()
  })

  it('claude: every tool in every request is mcp__campaign__*, no Bash, Read, Edit, WebFetch or Task', async () => {
    const api = await startAnthropic({apiKey: KEY, script: talkOnly})
    fakes.push(api)
    const result = await generate('claude', {ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: api.url})
    expect(result.code, result.stderr).to.equal(1)
    const offered = toolsOffered(api.requests.filter((r) => r.path.startsWith('/v1/messages')))
    expect(offered.length, 'requests that offered tools').to.be.greaterThan(0)
    for (const tools of offered) {
      const names = tools.map((t) => String(t.name ?? t.type))
      expect(names.filter((n) => !n.startsWith('mcp__campaign__')), 'tools that are not ours').to.deep.equal([])
      expect(names).to.include.members(['mcp__campaign__set_account_plan', 'mcp__campaign__finish'])
    }
  })

  it('codex: the only tools are the campaign MCP server\'s, no shell, apply_patch, file, image, web or ask-the-user tools', async () => {
    const inner = await startOpenAI({apiKey: KEY, script: talkOnly})
    const api = await startCodexDialect(inner)
    fakes.push(api, inner)
    const result = await generate('codex', {OPENAI_API_KEY: KEY, OPENAI_BASE_URL: `${api.url}/v1`})
    expect(result.code, result.stderr).to.equal(1)
    // What codex sent, before the dialect proxy flattened its namespace tool for the fake.
    const offered = toolsOffered(api.received)
    expect(offered.length, 'requests that offered tools').to.be.greaterThan(0)
    for (const tools of offered) {
      // codex always adds its three MCP-resource readers; they reach only the configured MCP
      // servers, and ours is the only one (one namespace), so they read nothing but our server.
      expect(tools.filter((t) => t.type === 'namespace').map((t) => t.name)).to.deep.equal(['mcp__campaign'])
      const foreign = tools.filter((t) => !(t.type === 'namespace' || (t.type === 'function' && MCP_RESOURCE_TOOLS.has(String(t.name)))))
      expect(foreign.map((t) => `${String(t.type)} ${String(t.name ?? '')}`), 'tools that are not ours').to.deep.equal([])
      const ours = tools.flatMap((t) => (t.tools ?? []) as Json[]).map((t) => String(t.name))
      expect(ours).to.include.members(['set_account_plan', 'finish'])
    }
  })
})
