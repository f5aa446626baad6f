import type {Logger} from '../engine/types.js'

/**
 * Background work inside the server process, every `tickMs`: never two passes at once (a slow
 * pass skips the ticks it overlaps), a failed pass is logged and the next tick tries again, and
 * `stop()` waits for the pass under way so the server shuts down with nothing half done.
 */
export class Periodic {
  private busy = false
  private readonly timer: NodeJS.Timeout

  constructor(pass: () => Promise<void>, options: {failure: string; log: Logger; tickMs: number}) {
    this.timer = setInterval(async () => {
      if (this.busy) return
      this.busy = true
      try {
        await pass()
      } catch (error) {
        options.log.error(options.failure, {error: (error as Error).message})
      } finally {
        this.busy = false
      }
    }, options.tickMs)
    this.timer.unref()
  }

  async stop(): Promise<void> {
    clearInterval(this.timer)
    while (this.busy) await new Promise((r) => setTimeout(r, 20))
  }
}

/** When to try again after `failures` consecutive failures: 1 s, 2 s, 4 s ... at most 60 s. */
export function retryAfter(failures: number): string {
  return new Date(Date.now() + Math.min(60_000, 1000 * 2 ** (failures - 1))).toISOString()
}
