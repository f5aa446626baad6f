import {createServer} from 'node:http'
import type {AddressInfo} from 'node:net'

import type {Fake} from '../fakes/server.js'

type Json = Record<string, unknown>

/**
 * Codex speaks a dialect of the Responses API the shared fake (`../fakes/openai.ts`) does not:
 * an MCP server's tools come as one `namespace` tool, a call names its `namespace` apart from the
 * tool, and a tool's output starts with the call's wall time. This loopback proxy translates
 * codex's requests to the plain dialect, forwards them to the fake, and translates the streamed
 * answer back, so the shared brain drives codex unchanged. `requests` are the fake's (translated);
 * `received` are the bodies as codex sent them.
 */
export async function startCodexDialect(fake: Fake): Promise<Fake & {received: Array<{body: Json}>}> {
  const received: Array<{body: Json}> = []
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Json
    received.push({body})
    const namespaces = new Set<string>()
    const tools = ((body.tools ?? []) as Json[]).flatMap((t) => {
      if (t.type !== 'namespace' || !Array.isArray(t.tools)) return [t]
      namespaces.add(String(t.name))
      return (t.tools as Json[]).map((x) => ({...x, name: `${String(t.name)}__${String(x.name)}`}))
    })
    const input = ((Array.isArray(body.input) ? body.input : []) as Json[]).map((item) => {
      if (item.type === 'function_call' && typeof item.namespace === 'string') {
        const {namespace, ...rest} = item
        return {...rest, name: `${namespace}__${String(item.name)}`}
      }
      if (item.type === 'function_call_output') {
        const text = Array.isArray(item.output) ? (item.output as Json[]).map((o) => String(o.text ?? '')).join('') : String(item.output)
        return {...item, output: text.replace(/^Wall time: [^\n]*\nOutput:/, '')}
      }
      return item
    })
    const upstream = await fetch(`${fake.url}${req.url}`, {
      body: JSON.stringify({...body, input, tools}),
      headers: {authorization: req.headers.authorization ?? '', 'content-type': 'application/json'},
      method: req.method,
    })
    res.writeHead(upstream.status, {'content-type': upstream.headers.get('content-type') ?? 'application/json'})
    const text = await upstream.text()
    // Split a namespaced call back into the two fields codex expects.
    const call = (item: Json): Json => {
      const name = String(item.name ?? '')
      const i = name.lastIndexOf('__')
      return item.type === 'function_call' && i > 0 && namespaces.has(name.slice(0, i)) ? {...item, name: name.slice(i + 2), namespace: name.slice(0, i)} : item
    }
    const rewrite = (data: Json): Json => {
      const out: Json = {...data}
      if (out.item && typeof out.item === 'object') out.item = call(out.item as Json)
      const response = out.response as Json | undefined
      if (response && Array.isArray(response.output)) out.response = {...response, output: (response.output as Json[]).map(call)}
      return out
    }
    res.end(text.replaceAll(/^data: (\{.*\})$/gm, (_m, json: string) => `data: ${JSON.stringify(rewrite(JSON.parse(json) as Json))}`))
  })
  await new Promise<void>((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve())
  })
  return {
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
      })
    },
    received,
    requests: fake.requests,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
  }
}
