#!/usr/bin/env bash
# Installs the Debian packages the test suites and benchmarks use as real peers and protocol
# clients, when they are missing. Both the README's test command (`npm test`) and `.ci/run`
# call it, so a fresh machine needs nothing installed by hand.
# Set TOOLKIT_SKIP_PEERS=1 to skip it (the tests that need a missing peer then fail loudly).
set -euo pipefail

[ "${TOOLKIT_SKIP_PEERS:-}" = "1" ] && exit 0

# One package per line; add a package here when a test starts using a new program.
packages=(
  git
  wrk
  redis-server
  redis-tools
  postgresql
  postgresql-client
  ruby
  librust-serde-json-dev
  chromium
)

command -v dpkg >/dev/null 2>&1 || {
  echo "install-peers: not a Debian-like system; install these by hand: ${packages[*]}" >&2
  exit 0
}

missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
((${#missing[@]})) || exit 0

if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
else
  echo "install-peers: the tests need these Debian packages, and installing them needs root: ${missing[*]}" >&2
  echo "install-peers: run 'apt-get install -y ${missing[*]}' as root, then the tests again" >&2
  exit 1
fi

echo "install-peers: installing ${missing[*]}" >&2
"${SUDO[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# A package install may start system services on the default ports; the tests use their own ports.
