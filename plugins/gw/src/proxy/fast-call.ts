import type {CallToolResult} from '@modelcontextprotocol/sdk/types.js'
import {Agent as HttpAgent, type IncomingMessage, request as httpRequest} from 'node:http'
import {Agent as HttpsAgent, request as httpsRequest} from 'node:https'

import type {UpstreamConnection} from './upstreams.js'

/** A JSON-RPC error answered by the upstream: passed through to the proxy's client as is. */
export class UpstreamRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message)
  }
}

/** The upstream answered at the HTTP level (401, 404 for an expired session, 5xx...): the session is unusable. */
export class UpstreamHttpError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message)
  }
}

export type FastCall = (params: Record<string, unknown>, options: {signal?: AbortSignal; timeoutMs: number}) => Promise<CallToolResult>

let nextId = 1

class StaleSocket extends Error {}

/**
 * `tools/call` to a Streamable HTTP upstream over a keep-alive node:http agent, in the session
 * the SDK client opened (same URL, session id, protocol version and credentials: the headers of
 * its latest request, see `HttpSession`). Forwarding a call through the SDK client's fetch +
 * web-streams + SSE stack costs about four times the CPU of this path, and that cost decided
 * whether the proxy could keep up with its upstream (bench/gw-proxy.mjs). Everything else (initialize, tools/list,
 * notifications, ping, reconnection) stays with the SDK client. Returns undefined when the
 * connection is not a Streamable HTTP one (stdio, legacy SSE): calls then use the SDK client.
 */
export function fastCallFor(conn: UpstreamConnection): FastCall | undefined {
  const session = conn.http
  if (!session) return undefined
  const {url} = session
  const https = url.protocol === 'https:'
  // Idle sockets are dropped before a typical server's 5 s keep-alive timeout would close them under us.
  const agentOptions = {keepAlive: true, maxSockets: 64, timeout: 4000}
  const agent = https ? new HttpsAgent(agentOptions) : new HttpAgent(agentOptions)
  const send = https ? httpsRequest : httpRequest

  return async (params, {signal, timeoutMs}) => {
    // Read per call: a token the client renewed in this session is used at once.
    const headers = session.headers()
    headers['content-type'] = 'application/json'
    headers.accept = 'application/json, text/event-stream'
    const id = nextId++
    const body = JSON.stringify({id, jsonrpc: '2.0', method: 'tools/call', params})
    const post = () =>
      new Promise<{status: number; text: string; type: string}>((resolve, reject) => {
        const req = send(url, {agent, headers: {...headers, 'content-length': String(Buffer.byteLength(body))}, method: 'POST', signal, timeout: timeoutMs}, (r: IncomingMessage) => {
          let text = ''
          r.setEncoding('utf8')
          r.on('data', (d: string) => (text += d))
          r.on('end', () => resolve({status: r.statusCode ?? 0, text, type: String(r.headers['content-type'] ?? '')}))
          r.on('error', reject)
        })
        req.on('timeout', () => req.destroy(new UpstreamRpcError(-32001, 'Request timed out')))
        req.on('error', (error: NodeJS.ErrnoException) => {
          // A kept-alive socket the server closed as we reused it: the request never reached the
          // server, so sending it again on a fresh socket is safe (Node's documented pattern).
          reject(req.reusedSocket && (error.code === 'ECONNRESET' || error.code === 'EPIPE') ? new StaleSocket() : error)
        })
        req.end(body)
      })
    let res
    try {
      res = await post()
    } catch (error) {
      if (!(error instanceof StaleSocket)) throw error
      res = await post()
    }
    if (res.status !== 200) throw new UpstreamHttpError(`upstream answered HTTP ${res.status}`, res.status)
    const message = res.type.includes('text/event-stream') ? fromSse(res.text, id) : (JSON.parse(res.text) as Record<string, unknown>)
    if (!message) throw new UpstreamHttpError('upstream closed the response stream without an answer')
    const error = message.error as {code?: unknown; data?: unknown; message?: unknown} | undefined
    if (error) throw new UpstreamRpcError(typeof error.code === 'number' ? error.code : -32603, String(error.message ?? 'upstream error'), error.data)
    const result = message.result as CallToolResult | undefined
    if (typeof result !== 'object' || result === null) throw new UpstreamHttpError('upstream answered without a result')
    return result
  }
}

/** The JSON-RPC response with `id` among the events of an SSE body (notifications are skipped). */
function fromSse(text: string, id: number): Record<string, unknown> | undefined {
  for (const event of text.split(/\r?\n\r?\n/)) {
    const data = event
      .split(/\r?\n/)
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(l[5] === ' ' ? 6 : 5))
      .join('\n')
    if (!data) continue
    const m = JSON.parse(data) as Record<string, unknown>
    if (m.id === id && (m.result !== undefined || m.error !== undefined)) return m
  }
  return undefined
}
