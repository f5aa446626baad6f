import type {Redis} from 'ioredis'

import type {Admission, RegistrationLimits} from './registrations.js'

const now = () => Math.floor(Date.now() / 1000)

/**
 * The `/register` flood limits over all replicas: per source address, a one-minute window of
 * registrations (INCR with expiry, in one MULTI with the count, so two replicas cannot both take
 * the last place) and the registrations that were never used (a sorted set of client ids scored
 * by when they stop counting; the first sign-in removes one). Only commands `toolkit svc`'s
 * Redis port has too (no Lua). While the store cannot say, `admit` answers undefined and each
 * replica's own limits apply (with a shared store, registering needs the store anyway).
 */
export class SharedRegistrationLimits {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly limits: RegistrationLimits,
  ) {}

  private key(kind: string, name: string): string {
    return `${this.prefix}reg:${kind}:${name}`
  }

  /** May `source` register now, counting every replica? Counts the attempt when it may. */
  async admit(source: string): Promise<Admission | undefined> {
    if (this.redis.status !== 'ready') return undefined
    const t = now()
    const minute = Math.floor(t / 60)
    const window = this.key('rate', `${source}:${minute}`)
    try {
      const results = await this.redis.multi().zcount(this.key('unused', source), `(${t}`, '+inf').incr(window).expire(window, 120).exec()
      if (!results || results.some(([error]) => error)) return undefined
      const waiting = Number(results[0][1])
      const made = Number(results[1][1])
      if (waiting >= this.limits.unusedPerSource) {
        return {ok: false, reason: `this address has ${waiting} registrations that were never used`, retryAfterSeconds: Math.min(this.limits.unusedTtlSeconds, 3600)}
      }
      if (made > this.limits.perMinutePerSource) return {ok: false, reason: 'too many registrations from this address', retryAfterSeconds: Math.max(1, (minute + 1) * 60 - t)}
      return {ok: true}
    } catch {
      return undefined
    }
  }

  /** A client registered from `source`: it counts as unused until it signs in or its time runs out. */
  registered(clientId: string, source: string): void {
    if (this.redis.status !== 'ready') return
    const t = now()
    const ttl = this.limits.unusedTtlSeconds
    const unused = this.key('unused', source)
    this.redis
      .multi()
      .zadd(unused, t + ttl, clientId)
      .expire(unused, ttl)
      .set(this.key('source', clientId), source, 'EX', ttl)
      .exec()
      .then(async () => {
        // Members whose time ran out no longer count (ZCOUNT skips them); dropping them keeps the set small.
        const old = await this.redis.zrangebyscore(unused, '-inf', t)
        if (old.length > 0) await this.redis.zrem(unused, ...old)
      })
      .catch(() => {})
  }

  /** The client signed in (through any replica): it no longer counts against its source. */
  async used(clientId: string): Promise<void> {
    if (this.redis.status !== 'ready') return
    try {
      const source = await this.redis.getdel(this.key('source', clientId))
      if (source !== null) await this.redis.zrem(this.key('unused', source), clientId)
    } catch {
      // The count is a flood limit, not state: an entry left behind expires with its set.
    }
  }
}
