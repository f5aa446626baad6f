import {InputError} from '@toolkit/kit'

import type {ServersConfig} from '../client/config.js'

/** A stdio server that received no request for this long is stopped (and started again on the next use). */
export const DEFAULT_STDIO_IDLE_SECONDS = 600

/**
 * How long each server may sit idle before the proxy stops it, in milliseconds, from
 * `gwServers.<name>.idleTimeout` (seconds; `0` keeps it running from the start). Stdio servers
 * (`command`) are lazy by default: started on first use, stopped after ten idle minutes. HTTP
 * servers stay connected unless an idleTimeout says otherwise. A value that is not a
 * non-negative number is a config error.
 */
export function idleTimeouts(config: ServersConfig): Map<string, number> {
  const out = new Map<string, number>()
  for (const [name, entry] of Object.entries(config.servers)) {
    const given = entry.idleTimeout
    if (given !== undefined && (typeof given !== 'number' || !Number.isFinite(given) || given < 0)) {
      throw new InputError(`gwServers.${name}.idleTimeout must be a number of seconds (0 keeps the server running), not ${JSON.stringify(given)}`, {
        code: 'config_invalid',
        file: config.file,
      })
    }
    const seconds = given ?? (entry.command ? DEFAULT_STDIO_IDLE_SECONDS : 0)
    out.set(name, seconds * 1000)
  }
  return out
}

/** Servers whose entry differs between two configs (URL, command, headers, idle time...): a reload restarts them. */
export function changedServers(before: ServersConfig, after: ServersConfig): Set<string> {
  const changed = new Set<string>()
  for (const [name, entry] of Object.entries(after.servers)) {
    const old = before.servers[name]
    if (old !== undefined && JSON.stringify(old) !== JSON.stringify(entry)) changed.add(name)
  }
  return changed
}
