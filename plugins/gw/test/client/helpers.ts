import type {TokenStore} from '@toolkit/kit'

import getPort from 'get-port'
import {mkdtempSync, rmSync} from 'node:fs'
import {createServer, type Server} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {createTokenStore} from '../../../../src/lib/token-store.js'

export interface Sandbox {
  authFile: string
  dir: string
  remove(): void
  store: TokenStore
}

/** A temporary directory holding the token store, so nothing touches the real home. */
export function sandbox(): Sandbox {
  const dir = mkdtempSync(join(tmpdir(), 'gw-client-'))
  const authFile = join(dir, 'auth.json')
  return {authFile, dir, remove: () => rmSync(dir, {force: true, recursive: true}), store: createTokenStore(authFile)}
}

/**
 * Plays the user's browser: opens the authorization URL, follows the authorization server's
 * redirect to the local callback, and returns the callback's answer.
 */
export function browser(visited: string[] = []): (url: string) => Promise<void> {
  return async (url) => {
    visited.push(url)
    const res = await fetch(url, {redirect: 'manual'})
    const location = res.headers.get('location')
    if (res.status < 300 || res.status >= 400 || !location) throw new Error(`authorization server answered ${res.status}: ${await res.text()}`)
    const cb = await fetch(new URL(location, url))
    await cb.text()
  }
}

/** A free loopback port for GW_OAUTH_CALLBACK_PORT. */
export function freePort(): Promise<number> {
  return getPort({host: '127.0.0.1'})
}

/** Holds a port so nothing else can bind it. */
export function occupy(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(port, '127.0.0.1', () => resolve(s))
  })
}

export const quiet = (): ((m: string) => void) => () => {}
