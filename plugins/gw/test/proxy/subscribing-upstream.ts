import {Server} from '@modelcontextprotocol/sdk/server/index.js'
import {StreamableHTTPServerTransport} from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import {ListResourcesRequestSchema, ReadResourceRequestSchema, SubscribeRequestSchema, UnsubscribeRequestSchema} from '@modelcontextprotocol/sdk/types.js'
import {randomUUID} from 'node:crypto'
import {createServer, type IncomingMessage} from 'node:http'
import type {AddressInfo} from 'node:net'

export interface SubscribingUpstream {
  close(): Promise<void>
  /**
   * Holds every resources/subscribe (logged on arrival) until the returned function is called. A
   * request cancelled meanwhile (notifications/cancelled) is logged `cancelled <uri>` and not
   * applied, as the spec asks of a receiver.
   */
  holdSubscribes(): () => void
  /** Every resources/subscribe and resources/unsubscribe received, in order: `subscribe <uri>`. */
  log: string[]
  /** The URIs some session of this server is subscribed to right now. */
  subscribed(): string[]
  /** How long resources/unsubscribe takes between being logged and taking effect (a slow upstream). */
  unsubscribeDelayMs: number
  /** Sends notifications/resources/updated for `uri` to each session subscribed to it. */
  update(uri: string): Promise<void>
  url: string
}

const RESOURCES = ['test://doc', 'test://other']

async function body(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = []
  for await (const c of req) chunks.push(c as Buffer)
  return chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined
}

/**
 * An MCP server built with the SDK, over Streamable HTTP on loopback, that offers two resources
 * with subscriptions and records what it is asked to subscribe and unsubscribe, so a test can see
 * what the proxy sends upstream.
 */
export async function startSubscribingUpstream(): Promise<SubscribingUpstream> {
  const log: string[] = []
  let gate: Promise<void> = Promise.resolve()
  const sessions = new Map<string, {server: Server; transport: StreamableHTTPServerTransport; uris: Set<string>}>()
  const open = () => {
    const server = new Server({name: 'subscribing', version: '1.0.0'}, {capabilities: {resources: {subscribe: true}}})
    const uris = new Set<string>()
    server.setRequestHandler(ListResourcesRequestSchema, () => ({resources: RESOURCES.map((uri) => ({name: uri.slice('test://'.length), uri}))}))
    server.setRequestHandler(ReadResourceRequestSchema, (req) => ({contents: [{text: `contents of ${req.params.uri}`, uri: req.params.uri}]}))
    server.setRequestHandler(SubscribeRequestSchema, async (req, extra) => {
      log.push(`subscribe ${req.params.uri}`)
      await gate
      if (extra.signal.aborted) {
        log.push(`cancelled ${req.params.uri}`)
        return {}
      }
      uris.add(req.params.uri)
      return {}
    })
    server.setRequestHandler(UnsubscribeRequestSchema, async (req) => {
      log.push(`unsubscribe ${req.params.uri}`)
      if (self.unsubscribeDelayMs > 0) await new Promise((r) => setTimeout(r, self.unsubscribeDelayMs))
      uris.delete(req.params.uri)
      return {}
    })
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      enableJsonResponse: true,
      onsessioninitialized(id) {
        sessions.set(id, {server, transport, uris})
      },
      sessionIdGenerator: randomUUID,
    })
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId)
    }
    return {server, transport}
  }
  const http = createServer((req, res) => {
    ;(async () => {
      const parsed = req.method === 'POST' ? await body(req) : undefined
      const id = req.headers['mcp-session-id']
      const known = typeof id === 'string' ? sessions.get(id) : undefined
      if (known) return known.transport.handleRequest(req, res, parsed)
      if (typeof id === 'string') {
        res.writeHead(404).end()
        return
      }
      const s = open()
      await s.server.connect(s.transport)
      await s.transport.handleRequest(req, res, parsed)
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500)
      res.end()
    })
  })
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  const self: SubscribingUpstream = {
    async close() {
      for (const s of sessions.values()) await s.transport.close().catch(() => {})
      http.closeAllConnections()
      await new Promise<void>((resolve) => http.close(() => resolve()))
    },
    holdSubscribes() {
      let open!: () => void
      gate = new Promise<void>((resolve) => (open = resolve))
      return () => {
        gate = Promise.resolve()
        open()
      }
    },
    log,
    subscribed: () => [...new Set([...sessions.values()].flatMap((s) => [...s.uris]))].sort(),
    unsubscribeDelayMs: 0,
    async update(uri) {
      for (const s of sessions.values()) if (s.uris.has(uri)) await s.server.sendResourceUpdated({uri})
    },
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
  }
  return self
}
