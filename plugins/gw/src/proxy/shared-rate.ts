import type {Redis} from 'ioredis'

/**
 * The per-user request limit across replicas: each replica counts its requests per user locally
 * and adds them every `flushMs` to a one-second window counter in the shared store (INCRBY,
 * expiring); a user whose total over all replicas passes `limit` in a window is refused by every
 * replica until the window ends. Nothing waits on the store in the request path, so the check
 * costs a map lookup; the price is that a burst is noticed up to `flushMs` late. While the
 * store is unreachable the shared limit is not enforced (each replica's own limit still is).
 */
export class SharedRateWindow {
  private blocked = new Map<string, number>()
  private failing = false
  private pending = new Map<string, number>()
  private readonly timer: NodeJS.Timeout

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly limit: number,
    private readonly log?: (m: string) => void,
    flushMs = 100,
  ) {
    this.timer = setInterval(() => {
      this.flush().catch(() => {})
    }, flushMs)
    this.timer.unref()
  }

  /** Counts one request of `key`; answers 0, or the seconds to wait when the shared window is full. */
  hit(key: string): number {
    const until = this.blocked.get(key)
    if (until !== undefined) {
      if (until > Date.now()) return 1
      this.blocked.delete(key)
    }
    this.pending.set(key, (this.pending.get(key) ?? 0) + 1)
    return 0
  }

  private async flush(): Promise<void> {
    if (this.pending.size === 0 || this.redis.status !== 'ready') return
    const batch = this.pending
    this.pending = new Map()
    const second = Math.floor(Date.now() / 1000)
    const keys = [...batch.keys()]
    const multi = this.redis.pipeline()
    for (const k of keys) {
      const key = `${this.prefix}rate:${k}:${second}`
      multi.incrby(key, batch.get(k)!)
      multi.pexpire(key, 2000)
    }
    try {
      const results = (await multi.exec()) ?? []
      this.failing = false
      keys.forEach((k, i) => {
        const total = Number(results[i * 2]?.[1] ?? 0)
        if (total > this.limit) this.blocked.set(k, (second + 1) * 1000)
      })
    } catch (error) {
      if (!this.failing) this.log?.(`shared store: per-user request counts not shared (${(error as Error).message})`)
      this.failing = true
    }
  }

  close(): void {
    clearInterval(this.timer)
  }
}
