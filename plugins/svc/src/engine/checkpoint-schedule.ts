/**
 * When the engine asks `git fast-import` for a checkpoint (which makes acknowledged writes visible
 * to `git` and lets the write-ahead log be trimmed): after a short quiet period following the last
 * write, so a burst shares one checkpoint, but never later than `maxDelayMs` after the first write
 * not yet covered, so a steady stream still reaches Git. Only timing lives here; what a checkpoint
 * does is the engine's.
 */
export class CheckpointSchedule {
  private timer: NodeJS.Timeout | undefined
  /** When the armed timer fires (performance.now(): the timer's own clock, not the injectable one). */
  private firesAt = 0
  /** When the checkpoint is due (performance.now()): the timer, once it fires before this, waits for the rest. */
  private dueAt = 0
  /** When the oldest write not yet covered by a checkpoint was scheduled (0: none). */
  private firstPendingAt = 0

  constructor(
    private readonly run: () => void,
    private readonly options: {delayMs: number; maxDelayMs: number; now?: () => number},
  ) {}

  /**
   * A write (or a checkpoint that left writes behind) wants a checkpoint soon. A later due time
   * only moves `dueAt`: the armed timer re-arms itself for the rest when it fires, so a stream of
   * writes costs no clearTimeout and setTimeout each (3 us of a durable Redis SET).
   */
  schedule(): void {
    const now = this.now()
    if (this.firstPendingAt === 0) this.firstPendingAt = now
    const delay = Math.min(this.options.delayMs, Math.max(0, this.firstPendingAt + this.options.maxDelayMs - now))
    this.dueAt = performance.now() + delay
    if (this.timer !== undefined && this.firesAt <= this.dueAt) return
    this.arm(delay)
  }

  /** A checkpoint is starting now (a caller waits for it): the pending timer is not needed. */
  cancel(): void {
    clearTimeout(this.timer)
    this.timer = undefined
  }

  private arm(delay: number): void {
    clearTimeout(this.timer)
    this.firesAt = performance.now() + delay
    this.timer = setTimeout(this.fire, delay)
  }

  private readonly fire = (): void => {
    this.timer = undefined
    const rest = this.dueAt - performance.now()
    // libuv times from the loop's cached clock: a timer may fire a fraction of a millisecond early.
    if (rest >= 1) this.arm(rest)
    else this.run()
  }

  /** A checkpoint finished; `behind` when writes arrived meanwhile (their wait starts now). */
  checkpointed(behind: boolean): void {
    this.firstPendingAt = behind ? this.now() : 0
  }

  private now(): number {
    return (this.options.now ?? Date.now)()
  }
}
