/**
 * Token buckets keyed by a string (a subject, an address): `rate` tokens a second, holding at
 * most `burst`. `take` answers 0 when the request may go ahead, else the whole seconds after
 * which it would (for `Retry-After`). Full buckets are dropped by `sweep`, so memory follows the
 * set of currently active keys, not every key ever seen. A rate of 0 switches the limit off.
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, {at: number; tokens: number}>()

  constructor(
    private readonly rate: number,
    private readonly burst: number,
    private readonly now: () => number = () => performance.now() / 1000,
  ) {}

  take(key: string): number {
    if (this.rate <= 0) return 0
    const t = this.now()
    let b = this.buckets.get(key)
    if (b) {
      b.tokens = Math.min(this.burst, b.tokens + (t - b.at) * this.rate)
      b.at = t
    } else {
      b = {at: t, tokens: this.burst}
      this.buckets.set(key, b)
    }
    if (b.tokens >= 1) {
      b.tokens -= 1
      return 0
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / this.rate))
  }

  sweep(): void {
    const t = this.now()
    for (const [k, b] of this.buckets) if (b.tokens + (t - b.at) * this.rate >= this.burst) this.buckets.delete(k)
  }
}
