# plugins/jsruntime/: the JavaScript runtime plugin (goja in a Go reactor), built from
# source to plugins/jsruntime/jsruntime.wasm and copied to bin/jsruntime.wasm, where
# agenthost looks for it beside itself (docs/javascript.md). Sourced by
# scripts/plugins.sh, or run alone: `bash scripts/plugins.d/jsruntime.sh` (the plugins/
# tests do, once per process). The ~19 MB module takes a few seconds of CPU to compile;
# an output newer than its sources is left alone.

jsruntime_main() {
  local out=plugins/jsruntime/jsruntime.wasm
  if [ ! -e "$out" ] || [ -n "$(find plugins/jsruntime plugins/js plugins/sdk go.mod go.sum -type f -newer "$out" ! -name '*.wasm' ! -name '*_test.go' ! -name '*.md' -print -quit)" ]; then
    echo "plugins: $out"
    GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -ldflags='-s -w' -o "$out.tmp" ./plugins/jsruntime
    mv "$out.tmp" "$out"
  fi
  if [ ! -e bin/jsruntime.wasm ] || [ "$out" -nt bin/jsruntime.wasm ]; then
    mkdir -p bin && cp "$out" bin/jsruntime.wasm.tmp && mv bin/jsruntime.wasm.tmp bin/jsruntime.wasm
  fi
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -euo pipefail
  cd "$(dirname "$0")/../.."
fi
jsruntime_main
