import {randomBytes, timingSafeEqual} from 'node:crypto'
import {readFileSync, rmSync} from 'node:fs'
import {join, resolve} from 'node:path'

import {writeFileAtomicSync} from '@toolkit/kit'

import {EngineError} from '../engine/errors.js'
import {lockState} from '../engine/lock.js'

/**
 * How an ops command reaches the server that holds a data directory. A running server writes
 * `server.json` (mode 0600) into its data directory: its pid, REST address and a random token.
 * A command run on the same machine by someone who can read the data directory sends the token,
 * and the server then runs the operation itself (a backup of a live database needs the server's
 * write-ahead log flushed, which only the server can do). The token only proves that the caller
 * can read the data directory: it lifts the REST rule that backup files stay inside the
 * configured backup directory, nothing else.
 */
export interface ServerLink {
  backupDir: string
  dataDir: string
  pid: number
  rest?: {host: string; port: number}
  token: string
}

export const LINK_FILE = 'server.json'
export const TOKEN_HEADER = 'x-svc-ops-token'

let current: ServerLink | undefined

/** Called by the server process once it listens; `rest` is absent when REST is disabled. */
export function publishServerLink(o: {backupDir?: string; dataDir: string; rest?: {host: string; port: number}}): ServerLink {
  const dataDir = resolve(o.dataDir)
  const link: ServerLink = {backupDir: resolve(o.backupDir ?? join(dataDir, '..', 'backups')), dataDir, pid: process.pid, rest: o.rest, token: randomBytes(24).toString('hex')}
  // It holds the token: 0600 from its first byte.
  writeFileAtomicSync(join(dataDir, LINK_FILE), JSON.stringify(link), {mode: 0o600})
  current = link
  return link
}

export function withdrawServerLink(): void {
  if (!current) return
  rmSync(join(current.dataDir, LINK_FILE), {force: true})
  current = undefined
}

/** This process's own link (inside the server), for the REST routes. */
export function ownServerLink(): ServerLink | undefined {
  return current
}

export function tokenMatches(given: string | undefined): boolean {
  if (!current || !given) return false
  const a = Buffer.from(given)
  const b = Buffer.from(current.token)
  return a.length === b.length && timingSafeEqual(a, b)
}

/** The live server holding `dataDir`, or undefined when none runs. */
export function liveServer(dataDir: string): ServerLink | undefined {
  const lock = lockState(resolve(dataDir))
  if (!lock.alive) return undefined
  let link: ServerLink | undefined
  try {
    link = JSON.parse(readFileSync(join(resolve(dataDir), LINK_FILE), 'utf8')) as ServerLink
  } catch {
    link = undefined
  }
  if (!link || link.pid !== lock.pid) {
    throw new EngineError('locked', `a server (pid ${lock.pid}) holds ${resolve(dataDir)} and is still starting or predates ops support; wait for it to listen, or stop it and run the command again`)
  }
  return link
}

/** Calls an ops route of the live server; its error record becomes an EngineError. */
export async function callServer<T>(link: ServerLink, path: string, body: unknown): Promise<T> {
  if (!link.rest) {
    throw new EngineError('locked', `a server (pid ${link.pid}) holds ${link.dataDir} with REST disabled, so this command cannot ask it to do the work; stop the server, or start it with REST enabled`)
  }
  const host = link.rest.host === '0.0.0.0' ? '127.0.0.1' : link.rest.host === '::' ? '[::1]' : link.rest.host.includes(':') ? `[${link.rest.host}]` : link.rest.host
  let res: Response
  try {
    res = await fetch(`http://${host}:${link.rest.port}${path}`, {
      body: JSON.stringify(body),
      headers: {'content-type': 'application/json', [TOKEN_HEADER]: link.token},
      method: 'POST',
      signal: AbortSignal.timeout(3_600_000),
    })
  } catch (error) {
    throw new EngineError('unavailable', `the server (pid ${link.pid}) holding ${link.dataDir} did not answer on ${host}:${link.rest.port}: ${(error as Error).message}`)
  }
  const text = await res.text()
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new EngineError('internal', `the server answered ${res.status} with a body that is not JSON: ${text.slice(0, 200)}`)
  }
  if (!res.ok) {
    const err = (value as {error?: {code?: string; message?: string}}).error
    const code = err?.code === 'invalid_argument' || err?.code === 'not_found' || err?.code === 'conflict' || err?.code === 'locked' || err?.code === 'branch_exists' || err?.code === 'branch_not_found' || err?.code === 'unavailable' ? err.code : 'internal'
    throw new EngineError(code, err?.message ?? `the server answered ${res.status}`)
  }
  return value as T
}
