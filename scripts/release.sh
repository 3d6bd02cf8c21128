#!/usr/bin/env bash
# Release archives: one tar.gz per OS/arch holding agenthost and the provider adapters,
# built stripped and with -trimpath, an SBOM beside each, and SHA256SUMS over them all.
# The same commit gives the same bytes (a test builds twice and compares): no VCS stamp (its modified
# flag and time depend on the checkout), the version and commit passed with -X instead,
# CGO off, and the archive's entries sorted, owned by 0:0 and dated at the commit's time
# (SOURCE_DATE_EPOCH), gzip without a name or a time stamp.
#
#   scripts/release.sh                      # every target in TARGETS, into dist/
#   TARGETS=linux/amd64 OUT=/tmp/d scripts/release.sh
#   VERSION=v1.2.0 scripts/release.sh       # default: git describe --tags --always
#
# Each archive also carries BUILDINFO.json: `go version -m -json` of agenthost, the
# modules (and their sums) it was built from. Beside each archive, NAME.cdx.json is its
# SBOM (CycloneDX JSON, scripts/sbom.sh: every module its four binaries link, with
# versions and hashes), listed in SHA256SUMS with the archives, so that a signature of
# SHA256SUMS (docs/deploy.md, "Verifying a release") covers both.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
OUT=${OUT:-dist}
TARGETS=${TARGETS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
COMMIT=${COMMIT:-$(git rev-parse HEAD)}
VERSION=${VERSION:-$(git describe --tags --always 2>/dev/null || echo "${COMMIT:0:12}")}
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct "$COMMIT")}
BINS=(agenthost agenthost-provider-scripted agenthost-provider-openai agenthost-provider-anthropic agenthost-sigstore)

case $VERSION in
  *[!A-Za-z0-9._+~-]*) echo "release: VERSION $VERSION: letters, digits and ._+~- only" >&2; exit 2 ;;
esac
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

archives=()
for target in $TARGETS; do
  goos=${target%/*} goarch=${target#*/}
  name="agenthost_${VERSION}_${goos}_${goarch}"
  dir="$work/$name"
  mkdir -p "$dir"
  for bin in "${BINS[@]}"; do
    echo "release: $name/$bin" >&2
    CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch "$GO" build -buildvcs=false -trimpath \
      -ldflags "-s -w -buildid= -X main.version=$VERSION -X main.commit=$COMMIT" \
      -o "$dir/$bin" "./cmd/$bin"
  done
  "$GO" version -m -json "$dir/agenthost" >"$dir/BUILDINFO.json"
  echo "release: $name.cdx.json" >&2
  GO=$GO bash scripts/sbom.sh "$dir" "$VERSION" "$OUT/$name.cdx.json" "${BINS[@]}"
  git show "$COMMIT:README.md" >"$dir/README.md" # the commit's, whatever the checkout holds
  # Every entry the same mode, owner and time on every machine (umask and checkout times
  # differ): the archive's bytes depend on the commit only.
  chmod 0755 "$dir" "$dir"/agenthost*
  chmod 0644 "$dir/README.md" "$dir/BUILDINFO.json"
  tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
    --format=gnu -C "$work" -cf - "$name" | gzip -n >"$OUT/$name.tar.gz"
  archives+=("$name.tar.gz" "$name.cdx.json")
done
(cd "$OUT" && sha256sum "${archives[@]}" >SHA256SUMS)
(cd "$OUT" && ls -l "${archives[@]}" SHA256SUMS) >&2
