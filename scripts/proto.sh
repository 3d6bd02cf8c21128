#!/usr/bin/env bash
# proto.sh regenerates the provider protocol's Go code (providers/proto/*.pb.go) from
# providers/proto/provider.proto: `make proto`. It uses the versions the committed files
# were generated with, so a regeneration changes only what the .proto changed; a tool of
# another version is refused with the command that installs the right one.
set -euo pipefail
cd "$(dirname "$0")/.."

PROTOC_VERSION=3.21.12        # Debian 12's protobuf-compiler
PROTOC_GEN_GO=v1.36.12
PROTOC_GEN_GO_GRPC=v1.6.2
GO=${GO:-go}
PATH="$PATH:$($GO env GOPATH)/bin"

fail() { echo "proto: $*" >&2; exit 1; }

command -v protoc >/dev/null || fail "protoc is not installed: apt-get install -y protobuf-compiler (v$PROTOC_VERSION)"
got=$(protoc --version | awk '{print $2}')
[ "$got" = "$PROTOC_VERSION" ] || fail "protoc is v$got, want v$PROTOC_VERSION (Debian 12's protobuf-compiler)"

# version prints a plugin's version as the generated headers name it ("v1.36.12").
version() { "$1" --version 2>/dev/null | awk '{print $NF}' | sed 's/^v*/v/'; }
for tool in "protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO $PROTOC_GEN_GO" \
	"protoc-gen-go-grpc google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC $PROTOC_GEN_GO_GRPC"; do
	read -r name pkg want <<<"$tool"
	if ! command -v "$name" >/dev/null || [ "$(version "$name")" != "$want" ]; then
		echo "proto: installing $pkg" >&2
		$GO install "$pkg"
	fi
done

cd providers/proto
protoc --go_out=. --go_opt=paths=source_relative \
	--go-grpc_out=. --go-grpc_opt=paths=source_relative provider.proto
echo "proto: regenerated providers/proto/provider.pb.go and provider_grpc.pb.go"
