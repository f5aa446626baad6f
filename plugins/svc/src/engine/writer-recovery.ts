/**
 * Restarting the Git writer after it died: `attempt` starts a new `git fast-import` and sends it
 * every commit not yet checkpointed; it is tried again with a growing pause (250 ms doubling up to
 * 30 s), so a writer that dies again at once cannot spin the machine, until it succeeds or the
 * engine closes. The engine owns what an attempt does; this owns when attempts happen.
 */
import {statfsSync} from 'node:fs'

export interface RestartOptions {
  attempt(n: number): Promise<'done' | 'retry'>
  closed(): boolean
  failed(n: number, error: Error): void
  /**
   * Looked at during a pause: true ends it early. A writer that died of a full disk is worth
   * trying as soon as space is freed, not after a pause that grew while the disk stayed full
   * (up to 30 s of writes refused for nothing).
   */
  retryNow?(): boolean
  /** One short wait of the pause loop (tests give their own). */
  tick?(ms: number): Promise<void>
  now?(): number
}

/** How long the pause before attempt `n` (from 1) is. */
export function pauseBefore(n: number): number {
  return n > 1 ? Math.min(30_000, 250 * 2 ** (n - 2)) : 0
}

export async function restartWithBackoff(options: RestartOptions): Promise<void> {
  const tick = options.tick ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)))
  const now = options.now ?? Date.now
  for (let n = 1; !options.closed(); n++) {
    const until = now() + pauseBefore(n)
    // Short waits so close() is not held up by a long pause.
    while (!options.closed() && now() < until && !options.retryNow?.()) await tick(50)
    if (options.closed()) return
    try {
      if ((await options.attempt(n)) === 'done') return
    } catch (error) {
      options.failed(n, error as Error)
    }
  }
}

/** Bytes free for an unprivileged writer on `dir`'s filesystem; undefined when it cannot be read. */
export function freeBytes(dir: string): number | undefined {
  try {
    const fs = statfsSync(dir)
    return fs.bavail * fs.bsize
  } catch {
    return undefined
  }
}
