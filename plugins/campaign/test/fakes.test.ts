import Anthropic from '@anthropic-ai/sdk'
import {expect} from 'chai'
import OpenAI from 'openai'

import {toolSpecs} from '../src/tools/registry.js'
import {startAnthropic} from './fakes/anthropic.js'
import {startOpenAI} from './fakes/openai.js'

// The wire fakes are the only stand-in for the vendors: the vendors' own SDKs must parse them.
describe('loopback model API fakes', () => {
  const tools = toolSpecs('plan')

  it('Anthropic: the SDK streams text and a tool_use block, with cache usage on the second request', async () => {
    const fake = await startAnthropic()
    try {
      const client = new Anthropic({apiKey: 'sk-test', baseURL: fake.url, maxRetries: 0})
      const params = {
        max_tokens: 1024,
        messages: [{content: 'Plan the account.', role: 'user' as const}],
        model: 'claude-sonnet-4-6',
        system: [{cache_control: {type: 'ephemeral' as const}, text: 'You plan.', type: 'text' as const}],
        tools: tools.map((t) => ({description: t.description, input_schema: t.input_schema as Anthropic.Tool.InputSchema, name: t.name})),
      }
      const first = await client.messages.stream(params).finalMessage()
      const use = first.content.find((b) => b.type === 'tool_use')
      expect(use).to.include({name: 'get_business', type: 'tool_use'})
      expect(first.stop_reason).to.equal('tool_use')
      expect(first.usage.cache_creation_input_tokens).to.be.greaterThan(0)
      const second = await client.messages.stream(params).finalMessage()
      expect(second.usage.cache_read_input_tokens).to.equal(first.usage.cache_creation_input_tokens)
      const h = fake.requests[0].headers
      expect(`${h['x-api-key'] ?? ''} ${h.authorization ?? ''}`).to.include('sk-test')
    } finally {
      await fake.close()
    }
  })

  it('Anthropic: 429 with retry-after and 529 come back in the shape the SDK reads', async () => {
    const fake = await startAnthropic({script: (n) => (n === 1 ? {kind: 'status', retryAfter: 7, status: 429} : {kind: 'status', status: 529})})
    try {
      const client = new Anthropic({apiKey: 'k', baseURL: fake.url, maxRetries: 0})
      const call = () => client.messages.create({max_tokens: 10, messages: [{content: 'hi', role: 'user'}], model: 'm'})
      const e1 = await call().catch((error: unknown) => error)
      expect(e1).to.be.instanceOf(Anthropic.RateLimitError)
      expect((e1 as InstanceType<typeof Anthropic.RateLimitError>).headers.get('retry-after')).to.equal('7')
      const e2 = (await call().catch((error: unknown) => error)) as InstanceType<typeof Anthropic.APIError>
      expect(e2.status).to.equal(529)
      expect(JSON.stringify(e2.error)).to.include('overloaded_error')
    } finally {
      await fake.close()
    }
  })

  it('Anthropic: a wrong key gets 401 authentication_error', async () => {
    const fake = await startAnthropic({apiKey: 'right'})
    try {
      const client = new Anthropic({apiKey: 'wrong', baseURL: fake.url, maxRetries: 0})
      const e = await client.messages.create({max_tokens: 10, messages: [{content: 'hi', role: 'user'}], model: 'm'}).catch((error: unknown) => error)
      expect(e).to.be.instanceOf(Anthropic.AuthenticationError)
    } finally {
      await fake.close()
    }
  })

  it('OpenAI: the SDK streams a Responses API function call and a Chat Completions tool call', async () => {
    const fake = await startOpenAI()
    try {
      const client = new OpenAI({apiKey: 'sk-test', baseURL: `${fake.url}/v1`, maxRetries: 0})
      const stream = client.responses.stream({
        input: [{content: 'Plan the account.', role: 'user'}],
        instructions: 'You plan.',
        model: 'gpt-5',
        tools: tools.map((t) => ({description: t.description, name: t.name, parameters: t.input_schema, strict: false, type: 'function' as const})),
      })
      const response = await stream.finalResponse()
      const call = response.output.find((o) => o.type === 'function_call')
      expect(call).to.include({name: 'get_business'})
      expect(response.usage?.input_tokens).to.be.greaterThan(0)

      const chat = await client.chat.completions.create({
        messages: [{content: 'You plan.', role: 'system'}, {content: 'Plan the account.', role: 'user'}],
        model: 'llama3',
        stream: true,
        stream_options: {include_usage: true},
        tools: tools.map((t) => ({function: {description: t.description, name: t.name, parameters: t.input_schema}, type: 'function' as const})),
      })
      let name = ''
      let usage = 0
      for await (const chunk of chat) {
        name += chunk.choices[0]?.delta.tool_calls?.[0]?.function?.name ?? ''
        usage += chunk.usage?.prompt_tokens ?? 0
      }
      expect(name).to.equal('get_business')
      expect(usage).to.be.greaterThan(0)
    } finally {
      await fake.close()
    }
  })
})
