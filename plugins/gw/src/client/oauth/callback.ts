import {ToolkitError} from '@toolkit/kit'
import {createServer, type Server} from 'node:http'

import {AuthError} from '../errors.js'

export const CALLBACK_PATH = '/callback'

export interface CallbackListener {
  close(): Promise<void>
  port: number
  redirectUri: string
  /** Resolves with the authorization code once the browser comes back with the expected state. */
  waitForCode(state: string, timeoutMs: number, signal?: AbortSignal): Promise<string>
}

const page = (title: string, body: string): string =>
  `<!doctype html><meta charset="utf-8"><title>${title}</title><body style="font-family:sans-serif;margin:3em"><h1>${title}</h1><p>${body}</p></body>`

const escapeHtml = (s: string): string => s.replaceAll(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

function listen(server: Server, port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException): void => {
      server.off('listening', onListening)
      if (error.code === 'EADDRINUSE' || error.code === 'EACCES') resolve(false)
      else reject(error)
    }
    const onListening = (): void => {
      server.off('error', onError)
      resolve(true)
    }
    server.once('error', onError)
    server.once('listening', onListening)
    server.listen(port, '127.0.0.1')
  })
}

/**
 * Binds the local OAuth callback on the first free port, trying `preferred` first (the port a
 * stored client registration was made for, so no new registration is needed).
 */
export async function listenForCallback(ports: number[], preferred?: number): Promise<CallbackListener> {
  type Outcome = {code: string; state: string | null} | {error: string; state: string | null}
  let deliver: ((o: Outcome) => void) | undefined
  const early: Outcome[] = []

  const server = createServer((req, res) => {
    // A request target such as `//` is no URL: anything on this loopback port must get an answer, not end the login.
    const url = URL.canParse(req.url ?? '/', 'http://localhost') ? new URL(req.url ?? '/', 'http://localhost') : undefined
    if (req.method !== 'GET' || url?.pathname !== CALLBACK_PATH) {
      res.writeHead(404, {'content-type': 'text/plain'}).end('not found')
      return
    }
    const state = url.searchParams.get('state')
    const code = url.searchParams.get('code')
    const error = url.searchParams.get('error')
    let outcome: Outcome
    if (error) {
      const description = url.searchParams.get('error_description')
      outcome = {error: description ? `${error}: ${description}` : error, state}
      res.writeHead(400, {'content-type': 'text/html; charset=utf-8'}).end(page('Authorization failed', escapeHtml(outcome.error)))
    } else if (code) {
      outcome = {code, state}
      res.writeHead(200, {'content-type': 'text/html; charset=utf-8'}).end(page('Signed in', 'toolkit gw received the authorization. You can close this window.'))
    } else {
      res.writeHead(400, {'content-type': 'text/plain'}).end('missing code')
      return
    }
    if (deliver) deliver(outcome)
    else early.push(outcome)
  })
  server.keepAliveTimeout = 1000

  const order = preferred !== undefined && ports.includes(preferred) ? [preferred, ...ports.filter((p) => p !== preferred)] : ports
  let bound: number | undefined
  for (const port of order) {
    if (await listen(server, port)) {
      bound = port
      break
    }
  }
  if (bound === undefined) {
    const range = ports.length === 1 ? `${ports[0]}` : `${ports[0]}-${ports.at(-1)}`
    throw new ToolkitError(
      `cannot listen for the OAuth callback: localhost port${ports.length === 1 ? '' : 's'} ${range} ${ports.length === 1 ? 'is' : 'are all'} in use; free one or set GW_OAUTH_CALLBACK_PORT to a free port or range (e.g. 9000-9010)`,
      {code: 'callback_ports_busy', exit: 1},
    )
  }
  const port = bound

  const close = async (): Promise<void> => {
    if (!server.listening) return
    server.closeAllConnections()
    await new Promise<void>((resolve) => {
      server.close(() => resolve())
    })
  }

  return {
    close,
    port,
    redirectUri: `http://localhost:${port}${CALLBACK_PATH}`,
    waitForCode(state, timeoutMs, signal) {
      return new Promise<string>((resolve, reject) => {
        let settled = false
        const finish = (fn: () => void): void => {
          settled = true
          clearTimeout(timer)
          signal?.removeEventListener('abort', onAbort)
          deliver = undefined
          fn()
        }
        const onAbort = (): void => finish(() => reject(new AuthError('login cancelled', 'auth_cancelled')))
        const handle = (o: Outcome): void => {
          // A callback carrying another state is a stale tab or a forged request: ignore it and keep waiting.
          if (o.state !== state) return
          if ('error' in o) finish(() => reject(new AuthError(`authorization server refused the login: ${o.error}`, 'auth_denied')))
          else finish(() => resolve(o.code))
        }
        const timer = setTimeout(
          () => finish(() => reject(new AuthError(`no OAuth callback within ${Math.round(timeoutMs / 1000)} s; run the command again (GW_OAUTH_TIMEOUT sets the wait in seconds)`, 'auth_timeout'))),
          timeoutMs,
        )
        signal?.addEventListener('abort', onAbort, {once: true})
        deliver = handle
        for (const o of early.splice(0)) if (!settled) handle(o)
      })
    },
  }
}
