#!/usr/bin/env node
// The peer of bench/gw-call.mjs: the least a Node program needs to call one MCP tool with the
// SDK client over Streamable HTTP. Usage: node bench/gw-call-peer.mjs <url> <tool> <json-args>
import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'

const [url, tool, args] = process.argv.slice(2)
const client = new Client({name: 'bench-peer', version: '1.0.0'})
await client.connect(new StreamableHTTPClientTransport(new URL(url)))
const result = await client.callTool({arguments: JSON.parse(args), name: tool})
process.stdout.write(`${result.content.map((c) => c.text ?? '').join('\n')}\n`)
await client.close()
