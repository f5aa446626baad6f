// The fuzz settings every plugin shares (FUZZ_SEED, FUZZ_RUNS_FACTOR).
export {FUZZ_SEED, fuzzRuns, fuzzTimeout} from '../../../../test/helpers/fuzz-runs.js'
