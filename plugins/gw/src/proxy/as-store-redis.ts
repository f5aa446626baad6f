import type {OAuthClientInformationFull} from '@modelcontextprotocol/sdk/shared/auth.js'
import type {Redis} from 'ioredis'

import {type AsStore, type CodeGrant, type RefreshGrant, StoreUnavailableError} from './as-store.js'
import type {Registration} from './registrations.js'

const now = () => Math.floor(Date.now() / 1000)

/** Seconds left until `at` (epoch seconds), at least 1: Redis refuses an expiry of 0. */
const ttl = (at: number) => Math.max(1, at - now())

/**
 * The authorization server's state in a Redis-protocol server (redis-server, or `toolkit svc`'s
 * Redis port), shared by every `gw serve` replica that names the same store: a client registered
 * through one replica signs in and refreshes through another, a code or refresh token is
 * redeemed once (GETDEL), and a revocation or a family revoked for reuse holds everywhere.
 * Everything expires by itself (Redis TTLs): codes, grants, rotated tokens, and registrations
 * until they are first used. Commands fail at once while the store is unreachable (no offline
 * queue), so the OAuth endpoints answer 503 instead of hanging; ioredis reconnects by itself.
 */
export class RedisAsStore implements AsStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly unusedTtlSeconds: number,
  ) {}

  private failed = 0

  available(): boolean {
    return this.redis.status === 'ready'
  }

  failures(): number {
    return this.failed
  }

  async close(): Promise<void> {
    this.redis.disconnect()
  }

  private key(kind: string, id: string): string {
    return `${this.prefix}as:${kind}:${id}`
  }

  private async run<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op()
    } catch (error) {
      this.failed++
      throw new StoreUnavailableError(`the shared store is unavailable (${(error as Error).message})`)
    }
  }

  private async getJson<T>(kind: string, id: string, del = false): Promise<T | undefined> {
    const text = await this.run(() => (del ? this.redis.getdel(this.key(kind, id)) : this.redis.get(this.key(kind, id))))
    return text === null ? undefined : (JSON.parse(text) as T)
  }

  async getClient(id: string) {
    return this.getJson<OAuthClientInformationFull>('client', id)
  }

  async registerClient(client: OAuthClientInformationFull, _registration: Registration) {
    // Unused registrations expire by TTL; the first sign-in removes the TTL (markUsed).
    await this.run(() => this.redis.set(this.key('client', client.client_id), JSON.stringify(client), 'EX', this.unusedTtlSeconds))
    return []
  }

  async markUsed(id: string) {
    await this.run(() => this.redis.persist(this.key('client', id)))
  }

  async putCode(code: string, grant: CodeGrant) {
    await this.run(() => this.redis.set(this.key('code', code), JSON.stringify(grant), 'EX', ttl(grant.expiresAt)))
  }

  async takeCode(code: string) {
    return this.getJson<CodeGrant>('code', code, true)
  }

  async putRefresh(key: string, grant: RefreshGrant) {
    await this.run(() => this.redis.set(this.key('refresh', key), JSON.stringify(grant), 'EX', ttl(grant.expiresAt)))
  }

  async takeRefresh(key: string) {
    return this.getJson<RefreshGrant>('refresh', key, true)
  }

  async getRefresh(key: string) {
    return this.getJson<RefreshGrant>('refresh', key)
  }

  async deleteRefresh(key: string) {
    await this.run(() => this.redis.del(this.key('refresh', key)))
  }

  async putRotated(key: string, family: string, expiresAt: number) {
    await this.run(() => this.redis.set(this.key('rotated', key), family, 'EX', ttl(expiresAt)))
  }

  async takeRotated(key: string) {
    return (await this.run(() => this.redis.getdel(this.key('rotated', key)))) ?? undefined
  }

  async revokeFamily(family: string, until: number) {
    await this.run(() => this.redis.set(this.key('revoked', family), '1', 'EX', ttl(until)))
  }

  async familyRevoked(family: string) {
    return (await this.run(() => this.redis.exists(this.key('revoked', family)))) === 1
  }
}

export interface SharedStoreOptions {
  /** Key prefix, so several proxies (or other programs) can share one Redis. */
  prefix: string
  /** `redis://[user:password@]host:port[/db]` or `rediss://` for TLS. */
  url: string
}

/** Connects to the shared store; fails the start with a clear error when it cannot be reached. */
export async function connectRedis(o: SharedStoreOptions, log?: (m: string) => void): Promise<Redis> {
  const {Redis} = await import('ioredis')
  const redis = new Redis(o.url, {
    enableOfflineQueue: false,
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    retryStrategy: (times) => Math.min(times * 200, 2000),
  })
  let down = false
  redis.on('error', (error: Error) => {
    if (!down) log?.(`shared store: ${error.message}; retrying`)
    down = true
  })
  // A lost connection is reported when the retry is scheduled, before any reconnect attempt fails.
  redis.on('reconnecting', () => {
    if (!down) log?.('shared store: connection lost; retrying')
    down = true
  })
  redis.on('ready', () => {
    if (down) log?.('shared store: connected again')
    down = false
  })
  try {
    await redis.connect()
  } catch (error) {
    redis.disconnect()
    throw new StoreUnavailableError(`cannot reach the shared store (${(error as Error).message})`)
  }
  return redis
}
