/** The fixed seed of every fuzz test of the three plugins (FUZZ_SEED overrides it to explore; a failure prints the seed and path to replay). */
export const FUZZ_SEED = Number(process.env.FUZZ_SEED ?? 20_241_124)

const factor = (): number => Number(process.env.FUZZ_RUNS_FACTOR ?? 1)

/** A run count kept to a few seconds in CI; FUZZ_RUNS_FACTOR=20 (say) for a longer search (npm run soak uses 10). */
export function fuzzRuns(base: number): number {
  return Math.max(1, Math.round(base * factor()))
}

/** A suite's timeout grown with FUZZ_RUNS_FACTOR, since a suite's own this.timeout() wins over mocha's --timeout. */
export function fuzzTimeout(ms: number): number {
  return Math.round(ms * Math.max(1, factor()))
}
