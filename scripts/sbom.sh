#!/usr/bin/env bash
# A CycloneDX SBOM (JSON, spec 1.6) of the Go binaries in DIR, written to OUT:
#
#   scripts/sbom.sh DIR VERSION OUT BINARY...
#
# CycloneDX's cyclonedx-gomod (`bin` mode, pinned below, from the Go module proxy) reads
# each binary's embedded build information (the modules it was linked from, each with its
# version and go.sum hash, and the GOOS/GOARCH it was built for): what is in the file, not
# what go.mod allows. One document per binary, no serial number and no time stamp, so the
# same binaries give the same bytes. The binaries of a release are one module's several
# commands, so their documents are merged: the first binary's is the document (its
# metadata names the main module at VERSION), the others' main components (bom-ref
# MODULE@VERSION?type=module#cmd/NAME, with their binaries' hashes) and every library
# module join its components, each bom-ref once; dependencies and compositions are joined.
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: scripts/sbom.sh DIR VERSION OUT BINARY..." >&2; exit 2; }
dir=$1 version=$2 out=$3
shift 3
GO=${GO:-go}
CYCLONEDX_GOMOD=${CYCLONEDX_GOMOD:-github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The binaries at once; go run caches the tool's executable (a lookup after the first build).
"$GO" run "$CYCLONEDX_GOMOD" version >/dev/null # built once, not by each of the runs below
docs=() pids=()
for bin in "$@"; do
  "$GO" run "$CYCLONEDX_GOMOD" bin -json -noserial -notimestamp -version "$version" \
    -output "$tmp/$bin.json" "$dir/$bin" &
  pids+=($!)
  docs+=("$tmp/$bin.json")
done
for p in "${pids[@]}"; do wait "$p"; done
jq -s '.[0] + {
  components: ([.[1:][] | .metadata.component + {properties: .metadata.properties}] + [.[].components[]] | unique_by(.["bom-ref"])),
  dependencies: ([.[].dependencies[]] | unique_by(.ref)),
  compositions: ([.[].compositions[]] | group_by(.aggregate) | map({aggregate: .[0].aggregate, dependencies: ([.[].dependencies[]] | unique)}))
}' "${docs[@]}" >"$out"
