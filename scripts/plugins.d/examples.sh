# plugins/examples/: builds every example plugin next to its sources
# (plugins/examples/<lang>/<name>/<name>.wasm). Sourced by scripts/plugins.sh, or run
# alone: `bash scripts/plugins.d/examples.sh [NAME...]` builds only the named examples
# (the plugins/ tests do that for a missing .wasm). An output newer than all its sources
# is left alone. Toolchains come from scripts/deps.d/examples.sh (`make deps`).

examples_main() {
  local only=" $* "
  examples_want() { [ "$only" = "  " ] || [[ "$only" == *" $1 "* ]]; }

  # examples_stale OUT SRC... — true when OUT is missing or older than a file under SRC.
  examples_stale() {
    local out=$1; shift
    [ -e "$out" ] || return 0
    [ -n "$(find "$@" -type f -newer "$out" ! -name '*.wasm' ! -name '*_test.go' ! -name '*.md' ! -path '*/node_modules/*' -print -quit)" ]
  }
  examples_need() { # TOOL — fail with the fix when a toolchain is missing
    command -v "$1" >/dev/null || { echo "plugins: $1 not found; run \`make deps\` (scripts/deps.d/examples.sh)" >&2; return 1; }
  }

  local d name out
  # Go: reactors (-buildmode=c-shared) on plugins/sdk.
  for d in plugins/examples/go/*/; do
    d=${d%/}; name=$(basename "$d"); out=$d/$name.wasm
    examples_want "$name" || continue
    examples_stale "$out" "$d" plugins/sdk go.mod go.sum || continue
    echo "plugins: $out"
    GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -ldflags='-s -w' -o "$out" "./$d"
  done
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -euo pipefail
  cd "$(dirname "$0")/../.."
fi
examples_main "$@"
