import type {Server as McpServer} from '@modelcontextprotocol/sdk/server/index.js'
import type {SSEServerTransport} from '@modelcontextprotocol/sdk/server/sse.js'
import type {IncomingMessage, ServerResponse} from 'node:http'

import type {User} from './acl.js'
import type {Session, SessionRegistry} from './sessions.js'

export interface SseDeps {
  /** The user's session count key (see `ownerOf`). */
  owner(req: IncomingMessage, user: User): string
  /** Reads and parses a JSON body within the proxy's size limit; answers the error itself and returns undefined when it cannot. */
  readBody(req: IncomingMessage, res: ServerResponse): Promise<{body: unknown} | undefined>
  reject(res: ServerResponse, status: number, message: string, retryAfterSeconds?: number): void
  server(): Promise<McpServer>
  sessions: SessionRegistry
}

/**
 * The legacy HTTP+SSE transport (MCP 2024-11-05) beside Streamable HTTP, for clients that speak
 * only that one: `GET /sse` opens a session and its event stream (the first event names the
 * `/messages?sessionId=...` endpoint), `POST /messages?sessionId=...` carries the client's
 * requests, whose answers arrive on the stream. Same authentication, ACL and session limits as
 * `/mcp`; a session belongs to the user who opened it.
 */
export function sseEndpoints(d: SseDeps): {message(req: IncomingMessage, res: ServerResponse, user: User): Promise<void>; open(req: IncomingMessage, res: ServerResponse, user: User): Promise<void>} {
  let sdk: typeof import('@modelcontextprotocol/sdk/server/sse.js') | undefined
  return {
    async message(req, res, user) {
      if (req.method !== 'POST') {
        res.setHeader('allow', 'POST')
        d.reject(res, 405, `method ${req.method} is not allowed on /messages`)
        return
      }
      const id = new URL(req.url ?? '/', 'http://x').searchParams.get('sessionId')
      const s = id ? d.sessions.get(id) : undefined
      if (!id || !s || s.kind !== 'sse') {
        d.reject(res, 404, 'Session not found: open a new one with GET /sse')
        return
      }
      if (s.subject !== user.subject) {
        d.reject(res, 403, 'this session belongs to another user')
        return
      }
      const read = await d.readBody(req, res)
      if (!read) return
      s.lastSeen = Date.now()
      ;(req as IncomingMessage & {auth?: unknown}).auth = {clientId: user.subject, extra: {user}, scopes: [], token: ''}
      await (s.transport as SSEServerTransport).handlePostMessage(req, res, read.body)
    },

    async open(req, res, user) {
      if (req.method !== 'GET') {
        res.setHeader('allow', 'GET')
        d.reject(res, 405, `method ${req.method} is not allowed on /sse`)
        return
      }
      const owner = d.owner(req, user)
      const admission = d.sessions.admit(owner, user.subject)
      if (!admission.ok) {
        d.reject(res, 429, admission.message, 60)
        return
      }
      sdk ??= await import('@modelcontextprotocol/sdk/server/sse.js')
      const transport = new sdk.SSEServerTransport('/messages', res)
      const server = await d.server()
      const session: Session = {kind: 'sse', lastSeen: Date.now(), owner, server, subject: user.subject, transport}
      d.sessions.add(transport.sessionId, session)
      // The stream closing ends the session (the SDK server keeps this handler and adds its own).
      transport.onclose = () => d.sessions.forget(transport.sessionId, session)
      // Starts the transport: headers, then the endpoint event.
      await server.connect(transport)
    },
  }
}
