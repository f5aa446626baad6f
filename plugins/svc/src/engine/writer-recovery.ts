/**
 * Restarting the Git writer after it died: `attempt` starts a new `git fast-import` and sends it
 * every commit not yet checkpointed; it is tried again with a growing pause (250 ms doubling up to
 * 30 s), so a writer that dies again at once cannot spin the machine, until it succeeds or the
 * engine closes. The engine owns what an attempt does; this owns when attempts happen.
 */
export async function restartWithBackoff(options: {
  attempt(n: number): Promise<'done' | 'retry'>
  closed(): boolean
  failed(n: number, error: Error): void
}): Promise<void> {
  for (let n = 1; !options.closed(); n++) {
    if (n > 1) {
      const until = Date.now() + Math.min(30_000, 250 * 2 ** (n - 2))
      // Short sleeps so close() is not held up by a long pause.
      while (!options.closed() && Date.now() < until) await new Promise((r) => setTimeout(r, 50))
      if (options.closed()) return
    }
    try {
      if ((await options.attempt(n)) === 'done') return
    } catch (error) {
      options.failed(n, error as Error)
    }
  }
}
