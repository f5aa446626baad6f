import {expect} from 'chai'

import {parseToolArguments, resultText, validateArguments} from '../../src/client/call.js'
import {callbackPorts} from '../../src/client/oauth/ports.js'
import {TOKEN_HINTS, tokenHint} from '../../src/client/token-hints.js'
import {tokenQuestion} from '../../src/client/manual-prompt.js'

const schema = {
  properties: {count: {type: 'integer'}, flag: {type: 'boolean'}, name: {type: 'string'}, tags: {type: 'array'}},
  required: ['name'],
  type: 'object' as const,
}

describe('gw client: tool arguments', () => {
  it('types key=value pairs by the input schema', () => {
    expect(parseToolArguments(['name=42', 'count=7', 'flag=false', 'tags=["a","b"]'], schema)).to.deep.equal({count: 7, flag: false, name: '42', tags: ['a', 'b']})
  })

  it('accepts one JSON object, key:=json, and = inside values', () => {
    expect(parseToolArguments(['{"name": "x", "count": 1}', 'count:=2', 'q=a=b'], schema)).to.deep.equal({count: 2, name: 'x', q: 'a=b'})
  })

  it('refuses text that is neither JSON nor key=value, and broken JSON', () => {
    expect(() => parseToolArguments(['oops'], schema)).to.throw(/neither a JSON object nor key=value/)
    expect(() => parseToolArguments(['{"a":'], schema)).to.throw(/arguments are not valid JSON/)
    expect(() => parseToolArguments(['[1]'], schema)).to.throw(/neither a JSON object/)
    expect(() => parseToolArguments(['tags=[1,'], schema)).to.throw(/argument tags: not valid JSON/)
  })

  it('validates against the schema before sending', async () => {
    const tool = {inputSchema: schema, name: 't'}
    await validateArguments(tool, {name: 'x'})
    let message = ''
    await validateArguments(tool, {count: 'seven', name: 'x'}).catch((error: Error) => {
      message = error.message
    })
    expect(message).to.match(/input schema of tool "t": .*count must be integer/)
  })

  it('prints text, structured content and summaries of binary items', () => {
    const text = resultText({
      content: [
        {text: 'hello', type: 'text'},
        {data: 'AAAA', mimeType: 'image/png', type: 'image'},
      ],
      structuredContent: {a: 1},
    })
    expect(text).to.equal('hello\n[image image/png, 3 bytes]\n{\n  "a": 1\n}')
  })
})

describe('gw client: callback ports', () => {
  it('defaults to 8085..8099', () => {
    const ports = callbackPorts({})
    expect(ports[0]).to.equal(8085)
    expect(ports.at(-1)).to.equal(8099)
    expect(ports).to.have.length(15)
  })

  it('GW_OAUTH_CALLBACK_PORT takes one port or a range', () => {
    expect(callbackPorts({GW_OAUTH_CALLBACK_PORT: '9000'})).to.deep.equal([9000])
    expect(callbackPorts({GW_OAUTH_CALLBACK_PORT: '9000-9002'})).to.deep.equal([9000, 9001, 9002])
    expect(() => callbackPorts({GW_OAUTH_CALLBACK_PORT: '9002-9000'})).to.throw(/not a valid port range/)
    expect(() => callbackPorts({GW_OAUTH_CALLBACK_PORT: 'abc'})).to.throw(/must be a port/)
  })
})

describe('gw client: manual prompt hints', () => {
  it('has twelve services covering the spec token types', () => {
    expect(TOKEN_HINTS).to.have.length(12)
    const types = new Set(TOKEN_HINTS.map((h) => h.tokenType))
    for (const t of ['API Key', 'Personal Access Token', 'Auth Token', 'Integration Token', 'Bot/User Token', 'Service Account Token', 'API Token']) expect(types).to.include(t)
  })

  it('matches a host or subdomain, and falls back to a generic prompt', () => {
    expect(tokenHint('https://api.githubcopilot.com/mcp/')?.service).to.equal('GitHub')
    expect(tokenHint('https://mcp.notion.com/mcp')?.tokenType).to.equal('Integration Token')
    expect(tokenHint('https://notgithub.com/mcp')).to.equal(undefined)
    const q = tokenQuestion('gh', 'https://api.githubcopilot.com/mcp/', 'no registration')
    expect(q.message).to.equal('GitHub Personal Access Token')
    expect(q.hint.join('\n')).to.include('https://github.com/settings/personal-access-tokens')
    expect(tokenQuestion('x', 'https://mcp.example.org', 'r').message).to.equal('Access token for https://mcp.example.org')
  })
})
