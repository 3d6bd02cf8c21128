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
  # C: WASI commands, clang + wasi-libc (Debian's sysroot is clang's default for wasm32-wasi).
  for d in plugins/examples/c/*/; do
    d=${d%/}; name=$(basename "$d"); out=$d/$name.wasm
    examples_want "$name" || continue
    examples_stale "$out" "$d" || continue
    examples_need clang || return 1
    echo "plugins: $out"
    clang --target=wasm32-wasi -O2 -Wl,--strip-all -o "$out" "$d"/*.c
  done
  # Rust: WASI commands with Debian's rustc 1.63 and its wasm32-wasi std (no cargo, no
  # crates.io); /usr/bin/rustc, not a rustup one that may come first on PATH.
  for d in plugins/examples/rust/*/; do
    d=${d%/}; name=$(basename "$d"); out=$d/$name.wasm
    examples_want "$name" || continue
    examples_stale "$out" "$d" || continue
    examples_need /usr/bin/rustc || return 1
    echo "plugins: $out"
    /usr/bin/rustc --edition 2021 -O -C strip=symbols --target wasm32-wasi -o "$out" "$d/main.rs"
  done
  # AssemblyScript: WASI commands; the compiler comes from package-lock.json (npm ci).
  local as=plugins/examples/assemblyscript
  for d in "$as"/*/; do
    d=${d%/}; name=$(basename "$d"); out=$d/$name.wasm
    [ "$name" = node_modules ] && continue
    examples_want "$name" || continue
    examples_stale "$out" "$d" "$as/package-lock.json" || continue
    if [ ! -x "$as/node_modules/.bin/asc" ]; then
      examples_need npm || return 1
      (cd "$as" && npm ci --no-audit --no-fund --loglevel=error)
    fi
    echo "plugins: $out"
    (cd "$as" && node_modules/.bin/asc "$name/$name.ts" --runtime stub --use abort= -O3 --noAssert -o "$name/$name.wasm")
  done
  # WAT: hand-written WebAssembly text, assembled by wabt's wat2wasm.
  for d in plugins/examples/wat/*/; do
    d=${d%/}; name=$(basename "$d"); out=$d/$name.wasm
    examples_want "$name" || continue
    examples_stale "$out" "$d" || continue
    examples_need wat2wasm || return 1
    echo "plugins: $out"
    wat2wasm "$d/$name.wat" -o "$out"
  done
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -euo pipefail
  cd "$(dirname "$0")/../.."
fi
examples_main "$@"
