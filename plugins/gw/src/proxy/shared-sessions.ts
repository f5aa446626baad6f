import type {Redis} from 'ioredis'
import {randomUUID} from 'node:crypto'

/**
 * Open sessions per user over all replicas: each replica keeps its count per user in a hash in
 * the shared store (one field per replica) and a heartbeat key that expires when the replica
 * dies, so the sessions of a replica that crashed stop counting. Read once per new session
 * (`initialize`, `GET /sse`), never per request. While the store is unreachable only each
 * replica's own limit applies.
 */
export class SharedSessionCounts {
  private readonly beat: NodeJS.Timeout
  private readonly id = randomUUID()

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {
    const alive = () => {
      this.redis.set(this.key('replica', this.id), '1', 'EX', 30).catch(() => {})
    }
    alive()
    this.beat = setInterval(alive, 10_000)
    this.beat.unref()
  }

  private key(kind: string, name: string): string {
    return `${this.prefix}${kind}:${name}`
  }

  /** Sessions of `owner` open on every live replica; undefined when the store cannot say. */
  async count(owner: string): Promise<number | undefined> {
    if (this.redis.status !== 'ready') return undefined
    try {
      const fields = await this.redis.hgetall(this.key('sessions', owner))
      const replicas = Object.keys(fields)
      if (replicas.length === 0) return 0
      const live = await this.redis.mget(...replicas.map((r) => this.key('replica', r)))
      let total = 0
      replicas.forEach((r, i) => {
        if (live[i] !== null) total += Math.max(0, Number(fields[r]))
        else this.redis.hdel(this.key('sessions', owner), r).catch(() => {})
      })
      return total
    } catch {
      return undefined
    }
  }

  /** A session of `owner` opened (+1) or ended (-1) on this replica. */
  change(owner: string, delta: number): void {
    if (this.redis.status !== 'ready') return
    const key = this.key('sessions', owner)
    this.redis
      .multi()
      .hincrby(key, this.id, delta)
      .expire(key, 86_400)
      .exec()
      .catch(() => {})
  }

  close(): void {
    clearInterval(this.beat)
    this.redis.del(this.key('replica', this.id)).catch(() => {})
  }
}
