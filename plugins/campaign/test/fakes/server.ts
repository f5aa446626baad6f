import {createServer, type IncomingMessage, type ServerResponse} from 'node:http'
import type {AddressInfo} from 'node:net'
import {setTimeout as sleep} from 'node:timers/promises'

import {type Brain, type BrainReply, type BrainRequest, createBrain} from './brain.js'

/**
 * What a test can make one model request do instead of (or before) the brain's answer:
 * - `status`: an HTTP error with the vendor's error body (`retryAfter` seconds as a header);
 * - `cut`: the stream stops half-way through the message and the connection closes;
 * - `malformed`: the first tool call's arguments are not valid JSON;
 * - `stream-error`: an error event inside an otherwise good stream (Anthropic `event: error`);
 * - a `BrainReply`: answer this instead of the brain.
 */
export type Fault =
  | {kind: 'cut'}
  | {kind: 'malformed'}
  | {kind: 'status'; message?: string; retryAfter?: number; status: number}
  | {kind: 'stream-error'; message?: string}

/** Decides, per model request (1-based `n`), whether something goes wrong. */
export type Script = (n: number, request: BrainRequest) => BrainReply | Fault | undefined

export interface FakeOptions {
  /** The key the server expects (x-api-key, Authorization: Bearer, x-goog-api-key or ?key=); any when unset. */
  apiKey?: string
  brain?: Brain
  /** Requests whose estimated tokens exceed this get the vendor's "context too long" error. */
  contextTokens?: number
  /** Only requests of this mission kind are held to contextTokens (the plan's and the campaigns' sizes differ by example). */
  contextTokensFor?: 'campaign' | 'plan'
  /** Image requests whose prompt this accepts are answered with a 500. */
  imageFailures?: (prompt: string) => boolean
  /** Waited before every model response (simulated model latency). */
  latencyMs?: number
  script?: Script
}

export interface RecordedRequest {
  body: unknown
  headers: IncomingMessage['headers']
  method: string
  path: string
}

export interface Fake {
  close(): Promise<void>
  /** Every request received, in order. */
  requests: RecordedRequest[]
  /** The base URL a client is given (no trailing slash, no `/v1`). */
  url: string
}

/** Per request: the parsed body, what the brain sees, and a writer for the vendor's format. */
export interface Handler {
  (req: IncomingMessage, res: ServerResponse, body: unknown, ctx: HandlerContext): Promise<void>
}

export interface HandlerContext {
  /**
   * Runs the script and the brain for a request already converted to a BrainRequest: an HTTP
   * error fault comes without a reply; other faults come with the reply they spoil.
   */
  decide(request: BrainRequest, tokens: number): Promise<Decision>
  options: FakeOptions
}

export type Decision = {fault: Fault & {kind: 'status'}; reply: null} | {fault: Exclude<Fault, {kind: 'status'}> | null; reply: BrainReply}

export function normalise(arg: Brain | FakeOptions | Script | undefined): FakeOptions {
  if (arg === undefined) return {}
  if (typeof arg === 'function') return arg.length >= 2 ? {script: arg as Script} : {brain: arg as Brain}
  return arg
}

/** The loopback HTTP server every wire fake runs on; `route` returns the handler for a path. */
export async function startFake(options: FakeOptions, route: (method: string, path: string) => Handler | undefined, unauthorised: (res: ServerResponse) => void): Promise<Fake> {
  const brain = options.brain ?? createBrain()
  const requests: RecordedRequest[] = []
  let n = 0
  const ctx: HandlerContext = {
    async decide(request, tokens) {
      n++
      const scripted = options.script?.(n, request)
      if (scripted && !isFault(scripted)) return {fault: null, reply: scripted}
      if (scripted?.kind === 'status') return {fault: scripted, reply: null}
      const kind = request.tools.some((t) => t.endsWith('set_account_plan')) ? 'plan' : 'campaign'
      if (options.contextTokens !== undefined && tokens > options.contextTokens && (options.contextTokensFor ?? kind) === kind) {
        return {fault: {kind: 'status', message: `prompt is too long: ${tokens} tokens > ${options.contextTokens} maximum`, status: 400}, reply: null}
      }
      if (options.latencyMs) await sleep(options.latencyMs)
      return {fault: scripted ?? null, reply: await brain(request)}
    },
    options,
  }
  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost')
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    const raw = Buffer.concat(chunks).toString('utf8')
    let body: unknown = null
    try {
      body = raw === '' ? null : JSON.parse(raw)
    } catch {
      body = raw
    }
    requests.push({body, headers: req.headers, method: req.method ?? 'GET', path: url.pathname + url.search})
    if (options.apiKey !== undefined && !keyOf(req, url).includes(options.apiKey)) return unauthorised(res)
    const handler = route(req.method ?? 'GET', url.pathname)
    if (!handler) {
      res.writeHead(404, {'content-type': 'application/json'}).end(JSON.stringify({error: {message: `no route ${req.method} ${url.pathname}`, type: 'not_found_error'}}))
      return
    }
    try {
      await handler(req, res, body, ctx)
    } catch (error) {
      if (!res.headersSent) res.writeHead(500, {'content-type': 'application/json'})
      res.end(JSON.stringify({error: {message: `fake failed: ${(error as Error).stack}`, type: 'api_error'}}))
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const {port} = server.address() as AddressInfo
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
    requests,
    url: `http://127.0.0.1:${port}`,
  }
}

function keyOf(req: IncomingMessage, url: URL): string[] {
  const auth = req.headers.authorization ?? ''
  return [String(req.headers['x-api-key'] ?? ''), auth.replace(/^Bearer\s+/i, ''), String(req.headers['x-goog-api-key'] ?? ''), url.searchParams.get('key') ?? ''].filter(Boolean)
}

export function isFault(x: BrainReply | Fault): x is Fault {
  return 'kind' in x
}

/** Opens an SSE response; `send(event, data)` writes one event with an `event:` line. */
export function sse(res: ServerResponse): {end(): void; raw(text: string): void; send(event: null | string, data: unknown): void} {
  res.writeHead(200, {'cache-control': 'no-cache', connection: 'keep-alive', 'content-type': 'text/event-stream'})
  return {
    end: () => res.end(),
    raw: (text) => res.write(text),
    send(event, data) {
      res.write(`${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`)
    },
  }
}

/** Splits text into a few pieces, the way deltas arrive. */
export function pieces(text: string, size = 24): string[] {
  const out: string[] = []
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size))
  return out.length > 0 ? out : ['']
}

/** A rough token count: four characters a token. */
export function tokensOf(x: unknown): number {
  return Math.ceil((typeof x === 'string' ? x : JSON.stringify(x ?? '')).length / 4)
}

/** Cuts a stream: the socket closes without the end of the message. */
export function cut(res: ServerResponse): void {
  res.socket?.destroy()
}

export function counter(prefix: string): () => string {
  let i = 0
  return () => `${prefix}${(++i).toString(36).padStart(6, '0')}${Math.random().toString(36).slice(2, 8)}`
}

/** A picture for the image endpoints: a PNG of the given size in one colour; null when the options say this one fails. */
export async function fakePicture(options: FakeOptions, prompt: string, width: number, height: number): Promise<Buffer | null> {
  if (options.imageFailures?.(prompt)) return null
  const {default: sharp} = await import('sharp')
  return sharp({create: {background: {b: 40, g: 120, r: 200}, channels: 3, height, width}}).png().toBuffer()
}
