/**
 * Under a sustained stream the quiet period that ends it is this many times the configured one:
 * long enough that the log's group commits under load (gaps of tens of ms) do not end it.
 */
const SUSTAINED_QUIET_FACTOR = 10

/**
 * When the engine asks `git fast-import` for a checkpoint (which makes acknowledged writes visible
 * to `git` and lets the write-ahead log be trimmed): after a short quiet period following the last
 * write, so a burst shares one checkpoint, but never later than the bound after the first write
 * not yet covered, so a steady stream still reaches Git. Only timing lives here; what a checkpoint
 * does is the engine's.
 *
 * The bound is `maxDelayMs` for the first checkpoint of a stream. A checkpoint that finishes with
 * writes behind it (they arrived while it ran) means a sustained stream: the next one waits for
 * the bound, not for a quiet period (under load the log's group commits leave gaps of more than
 * the quiet period inside a steady stream), and the bound doubles, up to `sustainedMaxDelayMs`.
 * A checkpoint that finishes with nothing behind it ends the stream: quiet periods count again and
 * the bound is `maxDelayMs` again. A sustained stream that stops (no write for
 * SUSTAINED_QUIET_FACTOR quiet periods) is checkpointed then, not at its bound: waiting up to 8 s
 * for writes that no longer come only left Git (and the log's trim) that far behind, and it was
 * half of the time bench/svc-write.mjs measured until pending-entries was 0. Why (issue 26, docs/benchmarks.md
 * "svc sustained writes at 1M: fewer, larger checkpoints"): every checkpoint ends a pack, and
 * fast-import looks each new object up in every pack of the repository, so under a sustained
 * stream a checkpoint a second made the packs that every later commit pays for. Acknowledgement
 * comes from the write-ahead log, and a caller that needs Git current asks for a checkpoint at
 * once (`CheckpointLoop.force`), so only the lag of Git behind the log grows.
 */
export class CheckpointSchedule {
  private timer: NodeJS.Timeout | undefined
  /** When the armed timer fires (performance.now(): the timer's own clock, not the injectable one). */
  private firesAt = 0
  /** When the checkpoint is due (performance.now()): the timer, once it fires before this, waits for the rest. */
  private dueAt = 0
  /** When the oldest write not yet covered by a checkpoint was scheduled (0: none). */
  private firstPendingAt = 0
  /** The present bound on a write's wait (grows under a sustained stream, see above). */
  private bound: number
  /** The last checkpoint finished with writes behind it. */
  private sustained = false

  constructor(
    private readonly run: () => void,
    private readonly options: {delayMs: number; maxDelayMs: number; now?: () => number; sustainedMaxDelayMs?: number},
  ) {
    this.bound = options.maxDelayMs
  }

  /** The present longest wait of a write before its checkpoint, in ms. */
  get maxDelayMs(): number {
    return this.bound
  }

  /**
   * A write (or a checkpoint that left writes behind) wants a checkpoint soon. A later due time
   * only moves `dueAt`: the armed timer re-arms itself for the rest when it fires, so a stream of
   * writes costs no clearTimeout and setTimeout each (3 us of a durable Redis SET).
   */
  schedule(): void {
    const now = this.now()
    if (this.firstPendingAt === 0) this.firstPendingAt = now
    const left = Math.max(0, this.firstPendingAt + this.bound - now)
    const delay = Math.min(this.sustained ? this.options.delayMs * SUSTAINED_QUIET_FACTOR : this.options.delayMs, left)
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
    const most = Math.max(this.options.maxDelayMs, this.options.sustainedMaxDelayMs ?? this.options.maxDelayMs)
    this.bound = behind ? Math.min(most, Math.max(1, this.bound * 2)) : this.options.maxDelayMs
    this.sustained = behind
  }

  private now(): number {
    return (this.options.now ?? Date.now)()
  }
}
