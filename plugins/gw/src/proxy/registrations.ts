import {isIP} from 'node:net'

import {normalizeAddress} from './cidr.js'
import {TokenBuckets} from './limits.js'

/** What the built-in authorization server remembers of each dynamic registration. */
export interface Registration {
  /** Seconds since the epoch. */
  at: number
  source: string
  /** A sign-in (an authorization code) was issued to it: it never expires for being unused. */
  used: boolean
}

export interface RegistrationLimits {
  /** Registrations per source address per minute, after a burst of the same size. */
  perMinutePerSource: number
  /** Registrations of one source that were never used, at most. */
  unusedPerSource: number
  /** Unused registrations are forgotten after this many seconds. */
  unusedTtlSeconds: number
}

export type Admission = {ok: true} | {ok: false; reason: string; retryAfterSeconds: number}

/**
 * Keeps dynamic client registration (RFC 7591, unauthenticated by design) from being flooded:
 * a token bucket per source address, a cap on a source's registrations that were never used,
 * and expiry of unused ones. A flood from one address is answered 429 while other addresses
 * keep registering; the total bound is the registry's own (`maxClients`).
 */
export class RegistrationGuard {
  private readonly buckets: TokenBuckets
  private readonly unused = new Map<string, number>()

  constructor(
    private readonly limits: RegistrationLimits,
    private readonly now: () => number = () => Date.now() / 1000,
  ) {
    this.buckets = new TokenBuckets(limits.perMinutePerSource / 60, limits.perMinutePerSource, now)
  }

  /** Counts a restored registration (state file) toward its source. */
  restore(r: Registration): void {
    if (!r.used) this.unused.set(r.source, (this.unused.get(r.source) ?? 0) + 1)
  }

  /** May `source` register now? Takes a token from its bucket when it may. */
  admit(source: string): Admission {
    const waiting = this.unused.get(source) ?? 0
    if (waiting >= this.limits.unusedPerSource) {
      return {ok: false, reason: `this address has ${waiting} registrations that were never used`, retryAfterSeconds: Math.min(this.limits.unusedTtlSeconds, 3600)}
    }
    const wait = this.buckets.take(source)
    return wait === 0 ? {ok: true} : {ok: false, reason: 'too many registrations from this address', retryAfterSeconds: wait}
  }

  registered(r: Registration): void {
    this.restore(r)
  }

  /** The registration was used (signed in) or removed: it no longer counts as waiting. */
  released(r: Registration): void {
    if (r.used) return
    const n = (this.unused.get(r.source) ?? 1) - 1
    if (n > 0) this.unused.set(r.source, n)
    else this.unused.delete(r.source)
  }

  /** Drops full buckets (idle sources), so the map stays as small as the set of active sources. */
  sweep(): void {
    this.buckets.sweep()
  }

  expired(r: Registration): boolean {
    return !r.used && r.at + this.limits.unusedTtlSeconds <= this.now()
  }
}

/**
 * The address a registration comes from: the peer, or, when the peer is the trusted reverse
 * proxy, the last address it appended to `X-Forwarded-For` (the client as that proxy saw it;
 * earlier entries are the client's own claims and are ignored).
 */
export function sourceAddress(peer: string | undefined, forwardedFor: string | string[] | undefined, trusted: (a: string | undefined) => boolean): string {
  const direct = normalizeAddress(peer) ?? 'unknown'
  if (!forwardedFor || !trusted(peer)) return direct
  const list = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',').map((s) => s.trim()).filter(Boolean)
  const last = normalizeAddress(list.at(-1))
  return last && isIP(last) ? last : direct
}
