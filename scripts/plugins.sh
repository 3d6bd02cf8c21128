#!/usr/bin/env bash
# Builds every Wasm plugin the tests and the demo use (from source, nothing vendored).
set -euo pipefail
cd "$(dirname "$0")/.."
