#!/usr/bin/env bash
# Builds the binaries named on the command line (bin/NAME from ./cmd/NAME), one after the
# other, and shows progress a user can see: each binary's name before its build, a count
# of the packages compiled while it builds (go build -v names each package it compiles;
# on a terminal one line updated in place, in a log a line per 100), then the count and the
# time. A warm build compiles nothing and prints one short line per binary.
#
# Flags: GOFLAGS_BUILD (default: -trimpath -ldflags "-s -w", no paths of this machine, no
# symbol table, no DWARF: a third smaller; `make build DEBUG=1` keeps them for a debugger).
# -buildvcs=auto stamps the commit into `agenthost version` even where GOFLAGS turns it off.
#
# CGO_ENABLED=0 by default: static binaries that need no C library on the machine they run
# on, as the release archives' (scripts/release.sh), which then find every package already
# compiled in the build cache (the cgo setting is part of each package's cache key).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
export CGO_ENABLED=${CGO_ENABLED:-0}
flags=(-buildvcs=auto -trimpath)
if [ -z "${DEBUG:-}" ]; then
  flags+=(-ldflags "-s -w")
fi
tty=false
[ -t 2 ] && tty=true

# What a cold cache (a fresh machine, or a new Go version) spends its time on, said once,
# when the 20th package of a build is compiled (an edit recompiles a few, not 20).
cold_note() {
  echo "  (a cold Go build cache compiles each package once, minutes of CPU: bin/agenthost is about" >&2
  echo "   940 packages, modernc.org/sqlite/lib (SQLite translated to Go), wazero, cel-go, River and" >&2
  echo "   gRPC the longest; the adapters' SDKs are the rest. Later builds take seconds.)" >&2
}

noted=false
for out in "$@"; do
  name=${out#bin/}
  start=$SECONDS
  echo "build $out" >&2
  n=0
  # go build -v prints the import path of each package it compiles, one per line, on
  # stderr, where compiler errors go too: a line that is not an import path is passed on.
  status=1
  while IFS= read -r line; do
    if [[ $line =~ ^exit:[0-9]+$ ]]; then
      status=${line#exit:}
    elif [[ $line =~ ^[A-Za-z0-9._~/-]+$ ]]; then
      n=$((n + 1))
      if ! $noted && ((n == 20)); then
        noted=true
        cold_note
      fi
      if $tty; then
        printf '\r  %d packages compiled, now %s\033[K' "$n" "$line" >&2
      elif ((n % 100 == 0)); then
        echo "  $n packages compiled" >&2
      fi
    else
      $tty && ((n > 0)) && printf '\n' >&2
      printf '%s\n' "$line" >&2
    fi
  done < <("$GO" build -v "${flags[@]}" -o "$out" "./cmd/$name" 2>&1; echo "exit:$?")
  $tty && ((n > 0)) && printf '\r\033[K' >&2
  if [ "$status" != 0 ]; then
    echo "build $out failed" >&2
    exit "$status"
  fi
  if ((n > 0)); then
    echo "  $out: $n packages compiled in $((SECONDS - start)) s" >&2
  fi
done
