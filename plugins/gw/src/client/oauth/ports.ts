import {UsageError} from '@toolkit/kit'

export const DEFAULT_CALLBACK_PORTS = {first: 8085, last: 8099}

/**
 * The callback ports to try, in order: `GW_OAUTH_CALLBACK_PORT` as one port (`8090`) or an
 * inclusive range (`8090-8095`), else 8085..8099.
 */
export function callbackPorts(env: Record<string, string | undefined> = process.env): number[] {
  const raw = env.GW_OAUTH_CALLBACK_PORT?.trim()
  let {first, last} = DEFAULT_CALLBACK_PORTS
  if (raw) {
    const m = /^(\d{1,5})(?:\s*-\s*(\d{1,5}))?$/.exec(raw)
    if (!m) throw new UsageError(`GW_OAUTH_CALLBACK_PORT must be a port (8090) or a range (8090-8095), got "${raw}"`, 'invalid_callback_port')
    first = Number(m[1])
    last = m[2] === undefined ? first : Number(m[2])
    if (first < 1 || last > 65_535 || last < first) {
      throw new UsageError(`GW_OAUTH_CALLBACK_PORT: "${raw}" is not a valid port range (1-65535, low-high)`, 'invalid_callback_port')
    }
  }
  return Array.from({length: last - first + 1}, (_, i) => first + i)
}
