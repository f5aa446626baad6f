import type {RequestKind} from './dispatch.js'

/** Numbered requests of one kind, and waiting until all those numbered below a target have settled. */
class Settlement {
  issued = 0
  /** Every request numbered below this has settled. */
  private prefix = 0
  private readonly ahead = new Set<number>()
  private readonly waiters: Array<{release: () => void; target: number}> = []

  issue(): number {
    return this.issued++
  }

  /** Nothing issued is still running. */
  get idle(): boolean {
    return this.prefix >= this.issued
  }

  settled(n: number): void {
    this.ahead.add(n)
    while (this.ahead.delete(this.prefix)) this.prefix++
    // Waiters arrive in request order, so their targets only grow.
    while (this.waiters.length > 0 && this.waiters[0].target <= this.prefix) this.waiters.shift()!.release()
  }

  /** Resolves when every request issued so far has settled. */
  allSoFar(): Promise<void> {
    const target = this.issued
    if (this.prefix >= target) return Promise.resolve()
    return new Promise((release) => this.waiters.push({release, target}))
  }
}

/**
 * Gives pipelined requests the effects of running one after another, in the order sent, without
 * giving up the engine's group commit: consecutive writes run together (the engine applies them in
 * call order and commits many per disk flush), consecutive reads run together, a read waits for the
 * writes sent before it, and a write for the reads sent before it (so a read never sees a later
 * write). An exclusive request (a backup, a restore) waits for everything before it and holds
 * everything after.
 */
export class RequestOrder {
  private exclusive: Promise<unknown> = Promise.resolve()
  private exclusiveRunning = false
  private readonly inflight = new Set<Promise<unknown>>()
  private readonly reads = new Settlement()
  private readonly writes = new Settlement()

  /** Starts `run` when its turn comes; the returned promise settles with it. */
  schedule<T>(kind: RequestKind, run: () => Promise<T>): Promise<T> {
    const gate = this.exclusive
    let started: Promise<unknown>
    let own: Settlement | undefined
    if (kind === 'exclusive') started = Promise.all([gate, ...this.inflight])
    else if (kind === 'read') {
      started = Promise.all([gate, this.writes.allSoFar()])
      own = this.reads
    } else {
      started = Promise.all([gate, this.reads.allSoFar()])
      own = this.writes
    }
    const p = started.then(run)
    const tracked = p.then(
      () => undefined,
      () => undefined,
    )
    this.inflight.add(tracked)
    if (own) {
      const n = own.issue()
      const settlement = own
      void tracked.then(() => settlement.settled(n))
    }
    void tracked.then(() => this.inflight.delete(tracked))
    if (kind === 'exclusive') {
      this.exclusive = tracked
      this.exclusiveRunning = true
      void tracked.then(() => {
        if (this.exclusive === tracked) this.exclusiveRunning = false
      })
    }
    return p
  }

  /**
   * A read may be answered on the spot, without scheduling: no write and no exclusive request
   * sent before it is still running, so it sees exactly the effects it would see in its turn.
   */
  readMayRunNow(): boolean {
    return !this.exclusiveRunning && this.writes.idle
  }

  /** Resolves once nothing is in flight. */
  async idle(): Promise<void> {
    while (this.inflight.size > 0) await Promise.all([...this.inflight])
  }
}
