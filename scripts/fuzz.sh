#!/usr/bin/env bash
# `make fuzz`: runs every Go fuzz target of the module (each `func FuzzXxx(f *testing.F)`
# in a _test.go file) for FUZZTIME (default 60s) each, one after the other. It finds the
# targets itself, so a new one needs no change here. Seed corpora live beside each
# package in testdata/fuzz/FuzzXxx/; a crash is written there too and fails the run.
# Not part of `make test`: fuzzing is open-ended, tests are not.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-60s}
failed=()
n=0
while IFS=: read -r file name; do
  pkg=./$(dirname "$file")
  n=$((n + 1))
  echo "fuzz: $pkg $name ($FUZZTIME)"
  if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg"; then
    failed+=("$pkg $name")
  fi
done < <(git ls-files -co --exclude-standard -- '*_test.go' | grep -v '^bench/eino/' |
  xargs grep -oE '^func Fuzz[A-Za-z0-9_]+\(' /dev/null | sed -E 's/:func (Fuzz[A-Za-z0-9_]+)\(/:\1/' | sort)
echo "fuzz: $n targets, ${#failed[@]} failed"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'fuzz: FAILED %s\n' "${failed[@]}" >&2
  exit 1
fi
