#!/usr/bin/env bash
# The long reliability run (issue 20; docs/reliability.md "Soak"): the svc crash soak for
# SOAK_CYCLES kill/restart cycles (default 20; CI runs 3), the disk-full and Git-writer-kill soaks
# for as many cycles, then every fuzz suite of svc, gw and
# campaign with FUZZ_RUNS_FACTOR times their CI run counts (default 10), then gw's token-refresh
# races at full length (CI runs 3 and 2 rounds). Stops at the first failure;
# a fast-check failure prints the seed and path that replay it.
set -euo pipefail
cd "$(dirname "$0")/.."
export SOAK_CYCLES="${SOAK_CYCLES:-20}"
export FUZZ_RUNS_FACTOR="${FUZZ_RUNS_FACTOR:-10}"
export FUZZ_REPORT=1
mocha=(npx mocha --no-config --import=tsx --timeout 3600000)
npm run build
echo "svc crash soak: ${SOAK_CYCLES} cycles"
(cd plugins/svc && "${mocha[@]}" test/fuzz/crash-soak.fuzz.test.ts)
echo "svc fault soak (disk full, Git writer killed): ${SOAK_CYCLES} cycles each"
(cd plugins/svc && "${mocha[@]}" test/fuzz/crash-soak-faults.fuzz.test.ts)
echo "svc, gw and campaign fuzz: run counts x${FUZZ_RUNS_FACTOR}"
(cd plugins/svc && "${mocha[@]}" 'test/fuzz/*.test.ts' --exclude test/fuzz/crash-soak.fuzz.test.ts --exclude test/fuzz/crash-soak-faults.fuzz.test.ts)
(cd plugins/gw && "${mocha[@]}" 'test/fuzz/*.test.ts')
(cd plugins/campaign && "${mocha[@]}" 'test/fuzz/*.test.ts')
echo "gw refresh races: ${GW_RACE_ROUNDS:-20} rounds of 8 parallel calls, ${GW_SERVE_RACE_ROUNDS:-10} key rotations under gw serve"
(cd plugins/gw && GW_RACE_ROUNDS="${GW_RACE_ROUNDS:-20}" GW_SERVE_RACE_ROUNDS="${GW_SERVE_RACE_ROUNDS:-10}" "${mocha[@]}" test/client/refresh-race.e2e.test.ts test/client/refresh-race-serve.e2e.test.ts)
