import {randomBytes, timingSafeEqual} from 'node:crypto'
import {createServer, type IncomingMessage, type ServerResponse} from 'node:http'
import type {AddressInfo} from 'node:net'

import {BodyTooLargeError, readBody} from '@toolkit/kit'

import type {ToolResult} from '../../tools/call.js'
import type {ToolSpec} from '../../tools/registry.js'

/** What the server needs of a mission: its tools and the engine's call into them. */
export interface MissionTools {
  call(name: string, input: unknown): Promise<ToolResult>
  readonly mission: string
  readonly tools: readonly ToolSpec[]
}

export interface MissionMcpServer {
  close(): Promise<void>
  /** The secret an MCP client must send as `Authorization: Bearer <token>`. Never log it. */
  readonly token: string
  /** `http://127.0.0.1:<port>/mcp` */
  readonly url: string
}

/** The name the agent CLIs know the server by; their tool names become `mcp__campaign__<tool>`. */
export const MCP_SERVER_NAME = 'campaign'

// Tool inputs are small JSON documents; an ad group with 15 headlines and 200 keywords is ~30 kB.
const MAX_BODY = 4 * 1024 * 1024

/**
 * A loopback MCP server (Streamable HTTP) that exposes exactly one mission's tools to an agent
 * CLI and forwards every call to the engine. It listens on 127.0.0.1 on a random port, and every
 * request must carry the mission's random bearer token, so another local process cannot drive
 * the mission's tools. It runs stateless (a fresh protocol server per request): the CLIs may
 * reconnect, and nothing but the tools' effects needs to survive between requests.
 */
export async function startMissionMcpServer(mission: MissionTools): Promise<MissionMcpServer> {
  const [{Server}, {StreamableHTTPServerTransport}, {CallToolRequestSchema, ListToolsRequestSchema}] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/index.js'),
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ])
  const token = randomBytes(32).toString('base64url')
  const expected = Buffer.from(`Bearer ${token}`)
  const tools = mission.tools.map((t) => {
    // `$schema` names the draft for our own checks; MCP clients and model APIs do not need it.
    const {$schema: _draft, ...inputSchema} = t.input_schema
    return {description: t.description, inputSchema: {...inputSchema, type: 'object' as const}, name: t.name}
  })

  const protocolServer = () => {
    const server = new Server({name: `toolkit-campaign ${mission.mission}`, version: '1'}, {capabilities: {tools: {}}})
    server.setRequestHandler(ListToolsRequestSchema, () => ({tools}))
    server.setRequestHandler(CallToolRequestSchema, async (request) => {
      const result = await mission.call(request.params.name, request.params.arguments ?? {})
      // A refused call is a tool result with isError, not a protocol error: the model reads the
      // reason and fixes its call, as it does with an API provider. The text says it too, for
      // clients that pass the text on without the flag (codex).
      return result.ok
        ? {content: [{text: JSON.stringify(result.result ?? null), type: 'text' as const}]}
        : {content: [{text: `Error: ${result.error}`, type: 'text' as const}], isError: true}
    })
    return server
  }

  const handle = async (req: IncomingMessage, res: ServerResponse, port: number) => {
    const auth = Buffer.from(req.headers.authorization ?? '')
    if (auth.length !== expected.length || !timingSafeEqual(auth, expected)) {
      return reply(res, 401, {error: {code: -32001, message: 'Unauthorized: this mission server needs its bearer token'}, id: null, jsonrpc: '2.0'}, {'WWW-Authenticate': 'Bearer'})
    }
    // DNS rebinding: a page in a browser could reach 127.0.0.1 under another host name.
    const host = req.headers.host ?? ''
    if (host !== `127.0.0.1:${port}` && host !== `localhost:${port}`) {
      return reply(res, 403, {error: {code: -32000, message: `Forbidden host ${host}`}, id: null, jsonrpc: '2.0'})
    }
    if (new URL(req.url ?? '/', 'http://127.0.0.1').pathname !== '/mcp') return reply(res, 404, {error: 'not found'})
    if (req.method !== 'POST') {
      // Stateless: no server-initiated stream to open, no session to delete.
      return reply(res, 405, {error: {code: -32000, message: 'Method not allowed'}, id: null, jsonrpc: '2.0'}, {Allow: 'POST'})
    }
    let body: unknown
    try {
      body = JSON.parse((await readBody(req, MAX_BODY)).toString('utf8'))
    } catch (error) {
      const tooLarge = error instanceof BodyTooLargeError
      return reply(res, tooLarge ? 413 : 400, {error: {code: tooLarge ? -32600 : -32700, message: tooLarge ? 'Request too large' : 'Parse error'}, id: null, jsonrpc: '2.0'})
    }
    const server = protocolServer()
    const transport = new StreamableHTTPServerTransport({enableJsonResponse: true, sessionIdGenerator: undefined})
    res.on('close', () => {
      void transport.close()
      void server.close()
    })
    await server.connect(transport)
    await transport.handleRequest(req, res, body)
  }

  const http = createServer((req, res) => {
    const {port} = http.address() as AddressInfo
    handle(req, res, port).catch((error: unknown) => {
      if (!res.headersSent) reply(res, 500, {error: {code: -32603, message: `Internal error: ${(error as Error).message}`}, id: null, jsonrpc: '2.0'})
      else res.destroy()
    })
  })
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject)
    http.listen(0, '127.0.0.1', () => resolve())
  })
  const {port} = http.address() as AddressInfo
  return {
    async close() {
      http.closeAllConnections()
      await new Promise<void>((resolve) => {
        http.close(() => resolve())
      })
    },
    token,
    url: `http://127.0.0.1:${port}/mcp`,
  }
}

function reply(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, {'Content-Type': 'application/json', ...headers})
  res.end(JSON.stringify(body))
}
