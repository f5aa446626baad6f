#!/usr/bin/env bash
# Runs each language binding's own test suite against the built bin/run.js (npm run build first).
set -euo pipefail
cd "$(dirname "$0")/.."
export TOOLKIT_BIN="$PWD/bin/run.js"

echo "bindings/python: python3 -m unittest"
python3 -W ignore::ResourceWarning -m unittest discover -s bindings/python/tests

echo "bindings/ruby: minitest"
ruby -Ibindings/ruby/lib bindings/ruby/test/test_svc.rb

echo "bindings/rust: cargo test (offline, Debian's crates)"
(cd bindings/rust && cargo test --offline --quiet)
