#!/usr/bin/env bash
# Prepares the build context of the Containerfile in DIR (default build/image): rootfs/
# with agenthost and the adapters in /usr/local/bin (static linux binaries for GOARCH,
# default the host's, built as scripts/release.sh builds them), the host's CA bundle, an
# /etc/passwd and /etc/group naming the user 65532 (agenthost), /tmp, and the binaries'
# SBOM (CycloneDX) in /usr/local/share/agenthost/sbom.cdx.json. Then
# `podman build -f Containerfile DIR` (or any OCI image builder) makes the image.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
DIR=${1:-build/image}
GOARCH=${GOARCH:-$($GO env GOARCH)}
COMMIT=${COMMIT:-$(git rev-parse HEAD)}
VERSION=${VERSION:-$(git describe --tags --always 2>/dev/null || echo "${COMMIT:0:12}")}
CA=${CA:-/etc/ssl/certs/ca-certificates.crt}
[ -r "$CA" ] || { echo "image: no CA bundle at $CA (set CA=...)" >&2; exit 1; }
rm -rf "$DIR/rootfs"
root="$DIR/rootfs"
mkdir -p "$root/usr/local/bin" "$root/etc/ssl/certs" "$root/etc/agenthost" "$root/plugins" "$root/tmp"
chmod 1777 "$root/tmp"
for bin in agenthost agenthost-provider-scripted agenthost-provider-openai agenthost-provider-anthropic agenthost-sigstore; do
  echo "image: $bin (linux/$GOARCH)" >&2
  CGO_ENABLED=0 GOOS=linux GOARCH=$GOARCH "$GO" build -buildvcs=false -trimpath \
    -ldflags "-s -w -buildid= -X main.version=$VERSION -X main.commit=$COMMIT" \
    -o "$root/usr/local/bin/$bin" "./cmd/$bin"
done
# The image's SBOM, as a release archive's (scripts/sbom.sh), in the image beside what it
# describes: /usr/local/share/agenthost/sbom.cdx.json.
mkdir -p "$root/usr/local/share/agenthost"
GO=$GO bash scripts/sbom.sh "$root/usr/local/bin" "$VERSION" "$root/usr/local/share/agenthost/sbom.cdx.json" \
  agenthost agenthost-provider-scripted agenthost-provider-openai agenthost-provider-anthropic agenthost-sigstore
cp "$CA" "$root/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/root:/sbin/nologin\nagenthost:x:65532:65532:agenthost:/tmp:/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\nagenthost:x:65532:\n' >"$root/etc/group"
cp Containerfile "$DIR/Containerfile"
echo "image: context in $DIR; build with: podman build -f $DIR/Containerfile -t agenthost $DIR" >&2
