/**
 * When the engine asks `git fast-import` for a checkpoint (which makes acknowledged writes visible
 * to `git` and lets the write-ahead log be trimmed): after a short quiet period following the last
 * write, so a burst shares one checkpoint, but never later than `maxDelayMs` after the first write
 * not yet covered, so a steady stream still reaches Git. Only timing lives here; what a checkpoint
 * does is the engine's.
 */
export class CheckpointSchedule {
  private timer: NodeJS.Timeout | undefined
  /** When the oldest write not yet covered by a checkpoint was scheduled (0: none). */
  private firstPendingAt = 0

  constructor(
    private readonly run: () => void,
    private readonly options: {delayMs: number; maxDelayMs: number; now?: () => number},
  ) {}

  /** A write (or a checkpoint that left writes behind) wants a checkpoint soon. */
  schedule(): void {
    const now = this.now()
    if (this.firstPendingAt === 0) this.firstPendingAt = now
    const delay = Math.min(this.options.delayMs, Math.max(0, this.firstPendingAt + this.options.maxDelayMs - now))
    clearTimeout(this.timer)
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.run()
    }, delay)
  }

  /** A checkpoint is starting now (a caller waits for it): the pending timer is not needed. */
  cancel(): void {
    clearTimeout(this.timer)
    this.timer = undefined
  }

  /** A checkpoint finished; `behind` when writes arrived meanwhile (their wait starts now). */
  checkpointed(behind: boolean): void {
    this.firstPendingAt = behind ? this.now() : 0
  }

  private now(): number {
    return (this.options.now ?? Date.now)()
  }
}
