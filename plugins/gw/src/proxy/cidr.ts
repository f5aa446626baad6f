import {BlockList, isIP} from 'node:net'

/** Thrown for an address or CIDR that does not parse; the proxy refuses to start with it. */
export class CidrError extends Error {}

/** A peer address as a socket reports it, with IPv4-mapped IPv6 (`::ffff:10.0.0.1`) unwrapped. */
export function normalizeAddress(address: string | undefined): string | undefined {
  if (!address) return undefined
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  return m ? m[1] : address
}

/**
 * Compiles a list of CIDR ranges or single addresses (`10.0.0.0/8`, `127.0.0.1`, `::1`, `fd00::/8`)
 * into a membership test, using Node's own BlockList.
 */
export function compileCidrs(list: readonly string[], where: string): (address: string | undefined) => boolean {
  const set = new BlockList()
  for (const entry of list) {
    if (typeof entry !== 'string') throw new CidrError(`${where}: ${JSON.stringify(entry)} is not an address or CIDR range`)
    const [ip, bits, extra] = entry.trim().split('/')
    const family = isIP(ip)
    const prefix = bits === undefined ? (family === 6 ? 128 : 32) : Number(bits)
    if (family === 0 || extra !== undefined || !Number.isInteger(prefix) || prefix < 0 || prefix > (family === 6 ? 128 : 32) || bits === '') {
      throw new CidrError(`${where}: ${JSON.stringify(entry)} is not an address or CIDR range`)
    }
    set.addSubnet(ip, prefix, family === 6 ? 'ipv6' : 'ipv4')
  }
  return (address) => {
    const a = normalizeAddress(address)
    if (!a) return false
    const family = isIP(a)
    if (family === 0) return false
    return set.check(a, family === 6 ? 'ipv6' : 'ipv4')
  }
}
