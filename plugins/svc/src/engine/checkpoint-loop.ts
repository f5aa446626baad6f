import {CheckpointSchedule} from './checkpoint-schedule.js'

/** What the checkpoint loop needs from the engine. */
export interface CheckpointHost {
  /** Writes were sent to Git that no checkpoint covers yet. */
  behind(): boolean
  /** One checkpoint covering everything sent so far: Git's part through `CheckpointLoop.ask`, then the engine's bookkeeping. */
  checkpoint(): Promise<void>
  closed(): boolean
  /** A checkpoint failed: the engine restarts its Git writer, or fails for good. */
  failed(error: unknown): void
  /** Why the engine failed for good, if it did: no checkpoint starts, and callers waiting get this. */
  failure(): Error | undefined
  /** The Git writer is down: its restart sends everything again and then calls `run`. */
  writerDown(): boolean
}

/**
 * Runs the engine's Git checkpoints one after another: when the debounce timer
 * (`CheckpointSchedule`) fires, or at once for a caller that must see its writes in Git (flush,
 * close, branch creation), who then waits for a checkpoint that started after it asked. What a
 * checkpoint does is the engine's (`CheckpointHost.checkpoint`); the order and the waiting are here.
 */
export class CheckpointLoop {
  private inFlightCount = 0
  private running = false
  private started = 0
  private readonly timing: CheckpointSchedule
  private waiters: Array<{after: number; reject(e: Error): void; resolve(): void}> = []

  constructor(
    private readonly host: CheckpointHost,
    options: {delayMs: number; maxDelayMs: number; now?: () => number; sustainedMaxDelayMs?: number},
  ) {
    this.timing = new CheckpointSchedule(() => void this.run(), options)
  }

  /** Checkpoints sent to Git and not yet reported done. */
  get inFlight(): number {
    return this.inFlightCount
  }

  /** Git's part of one checkpoint, counted while on its way; the number it returns goes to `completed`. */
  async ask(gitCheckpoint: () => Promise<void>): Promise<number> {
    const generation = ++this.started
    this.inFlightCount++
    try {
      await gitCheckpoint()
    } finally {
      this.inFlightCount--
    }
    return generation
  }

  cancel(): void {
    this.timing.cancel()
  }

  /** The engine applied checkpoint `generation`: callers who asked before it started are released. */
  completed(generation: number, behind: boolean): void {
    const ready = this.waiters.filter((w) => w.after < generation)
    this.waiters = this.waiters.filter((w) => w.after >= generation)
    for (const w of ready) w.resolve()
    this.timing.checkpointed(behind)
  }

  /** Resolves once a checkpoint that starts after this call has completed. */
  force(): Promise<void> {
    const failure = this.host.failure()
    if (failure) return Promise.reject(failure)
    const done = new Promise<void>((resolve, reject) => this.waiters.push({after: this.started, reject, resolve}))
    this.timing.cancel()
    void this.run()
    return done
  }

  /** The engine failed for good: nobody waits for a checkpoint that will not come. */
  rejectWaiters(error: Error): void {
    for (const w of this.waiters.splice(0)) w.reject(error)
  }

  async run(): Promise<void> {
    // While the writer is down its restart sends everything again and then checkpoints.
    if (this.running || this.host.writerDown()) return
    this.running = true
    try {
      while (this.host.behind() || this.waiters.length > 0) {
        // Each checkpoint closes fast-import's pack, and the next pack starts without delta bases:
        // while one is still on its way there is no point asking for another unless a caller waits.
        if (this.inFlightCount > 0 && this.waiters.length === 0) break
        await this.host.checkpoint()
        // Under a steady stream, let the debounce timer gather more commits per checkpoint.
        if (!this.host.closed() && this.waiters.length === 0) break
      }
    } catch (error) {
      this.host.failed(error)
    } finally {
      this.running = false
      // A checkpoint still on its way schedules the next one when it completes.
      if (!this.host.failure() && !this.host.writerDown() && this.inFlightCount === 0 && this.host.behind()) this.schedule()
    }
  }

  /** Writes want a checkpoint soon (debounced). */
  schedule(): void {
    if (this.host.closed() && this.waiters.length === 0) return
    this.timing.schedule()
  }
}
