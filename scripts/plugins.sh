#!/usr/bin/env bash
# Builds every Wasm plugin the tests and the demo use, from source (nothing vendored).
# Each part lives in scripts/plugins.d/NAME.sh; parts skip work whose output is newer than
# its sources, so `make test` after `make plugins` rebuilds nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
for part in scripts/plugins.d/*.sh; do
  [ -e "$part" ] || continue
  # shellcheck disable=SC1090
  source "$part"
done
