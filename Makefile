# agenthost — build, test, bench, demo.
# `make demo` runs the main job offline; `make test` is what CI runs (see .ci/run).

GO      ?= go
BIN     := bin
PKGS    := ./...
BINS    := $(BIN)/agenthost $(BIN)/agenthost-provider-scripted $(BIN)/agenthost-provider-openai $(BIN)/agenthost-provider-anthropic $(BIN)/agenthost-sigstore

.PHONY: all build install test test-deploy test-short lint cover bench bench-all demo deps plugins proto fuzz clean release image test-image conformance $(BINS)

all: build

# deps installs what the tests need on a fresh machine (toolchains for the Wasm
# examples, Go tools). It is idempotent and quiet when everything is present.
deps:
	@bash scripts/deps.sh

# The host and the provider adapters, one explicit target per binary so that `make demo`
# can ask for only the two it runs. The targets are phony: go, not make, decides what is
# stale (make cannot see the Go sources a binary depends on), and `go build -o` leaves an
# up-to-date binary alone without relinking it, so a warm build costs a cache lookup.
# (`go build ./...` used to come first: it relinked every main package of the module each
# time for nothing; `make test` compiles every package anyway, with go vet and go test.)
# scripts/build.sh runs that go build per binary and shows its progress (each binary's
# name, a count of the packages compiled, a note of what a cold cache is slow on); the
# binaries are stripped (-trimpath -ldflags "-s -w": no symbols or DWARF, a third smaller,
# measured in the README); `make build DEBUG=1` keeps them for a debugger.
build: $(BINS)

$(BINS): $(BIN)/%:
	@GO=$(GO) DEBUG=$(DEBUG) bash scripts/build.sh $@

# install puts agenthost, its provider adapters and agenthost-sigstore (the keyless
# verifier it starts) in GOBIN (or GOPATH/bin), where agenthost finds them by name: `go install github.com/agenthost/agenthost/cmd/...@latest`
# does the same from the module proxy.
install:
	$(GO) install -buildvcs=auto ./cmd/...

plugins:
	@bash scripts/plugins.sh

# proto regenerates the provider protocol's Go code after an edit of
# providers/proto/provider.proto, with the protoc and plugin versions the committed files
# were made with (scripts/proto.sh names them, and installs the Go plugins if missing).
proto:
	@GO=$(GO) bash scripts/proto.sh

# release writes dist/agenthost_VERSION_OS_ARCH.tar.gz for linux and darwin on amd64 and
# arm64, beside each its SBOM (agenthost_VERSION_OS_ARCH.cdx.json, CycloneDX, made by
# cyclonedx-gomod from the binaries' build information: scripts/sbom.sh), and
# dist/SHA256SUMS over both: static, stripped, -trimpath binaries, the same bytes from the
# same commit (TestE2E_ReleaseArchivesAreReproducibleStrippedAndSayTheirVersion builds the
# host's twice and compares). TARGETS=linux/amd64 for one; VERSION=v1.2.3 to name it.
release:
	@bash scripts/release.sh

# image prepares the Containerfile's context in build/image (linux binaries built here, the
# host's CA bundle, a non-root user) and builds it with podman when podman is installed.
image:
	@bash scripts/image.sh build/image
	@if command -v podman >/dev/null; then podman build -f build/image/Containerfile -t agenthost build/image; \
	else echo "podman is not installed: the context is in build/image (podman build -f build/image/Containerfile build/image)"; fi

# test-image builds the image with podman and serves a run from it with a mounted plugin,
# checks its SBOM, pushes it to a loopback registry, signs it keylessly and verifies it
# (TestE2E_ImageServesARunWithAMountedPlugin) alone; `make test` runs it too. Needs podman,
# which `make deps` installs (scripts/deps.d/image.sh).
test-image: build plugins
	$(GO) test -count=1 -run TestE2E_ImageServesARunWithAMountedPlugin -v ./cmd/agenthost/

# test runs every test with the race detector, on our code and on the libraries it
# shares memory with (gRPC, pgx, River, extism's SDK...). The CPU-heavy parts of two
# libraries are compiled without its instrumentation (RACEFREE_PKGS): wazero's compiler
# passes, which turn each Wasm module into machine code (8.6x the CPU instrumented: 25.9 s
# against 3.0 s for the summarize example), and modernc's SQLite engine and C runtime, C
# translated to Go, which every stored byte passes through. Neither shares a Go value with
# our goroutines (wazero copies in and out of a module's linear memory, SQLite of its own heap).
# The list is narrow on purpose: a package compiled without instrumentation also compiles,
# uninstrumented, every std generic it instantiates (sync.Map's core, atomic.Pointer[T]),
# and the linker keeps one copy per program, the largest. The whole of wazero and modernc
# once left sync.Map blind program-wide: encoding/json's field cache then raced.
# racefree_test.go holds the list to that (run under -race: make test runs it).
#
# -timeout 60m: cmd/agenthost's e2e package takes ~11 min on an idle 2-core machine and
# went past 30 min with the machine ten times oversubscribed; every test bounds its own
# waits, so the package timeout is only the last resort against a hang, and CI stops at 90.
RACEFREE_PKGS := github.com/tetratelabs/wazero/internal/engine/wazevo/ssa/... \
	github.com/tetratelabs/wazero/internal/engine/wazevo/backend/... \
	github.com/tetratelabs/wazero/internal/engine/wazevo/frontend \
	github.com/tetratelabs/wazero/internal/wasm/binary \
	modernc.org/libc/... modernc.org/sqlite/lib modernc.org/memory modernc.org/mathutil
RACEFREE := $(foreach p,$(RACEFREE_PKGS),-gcflags='$(p)=-race=false')
# TESTLDFLAGS names go.mod's wazero version in the test binaries, whose build information
# lists no modules (wazero and the sandbox would say "dev"), as in the agenthost processes
# the tests start: the two then share one Wasm compilation cache (testbin.ShareWasmCache)
# instead of compiling each module and making each pre-initialised snapshot once per side.
WAZERO_VERSION = $(shell $(GO) list -m -f '{{.Version}}' github.com/tetratelabs/wazero)
TESTLDFLAGS = -ldflags='-X github.com/tetratelabs/wazero/internal/version.version=$(WAZERO_VERSION) -X github.com/agenthost/agenthost/sandbox.wazeroVersionUnlisted=$(WAZERO_VERSION)'
test: deps build plugins lint test-deploy
	$(GO) test -race $(RACEFREE) $(TESTLDFLAGS) -count=1 -timeout 60m $(PKGS)

# test-deploy renders deploy/k8s with kustomize's library and decodes every object strictly
# into Kubernetes' own API types (tools/k8scheck, a module of its own so that the main
# module links neither k8s.io/api nor kustomize; its tests include misspelt and mistyped
# manifests, which must fail). Under a second once compiled. With LINTENV's flags, as
# lint vets it: -trimpath keeps the checkout's directory out of the build cache's keys, so
# a fresh clone finds the test binary (k8s.io/api and kustomize, ~40 CPU-s to compile and
# link) where any earlier checkout of the same sources left it, and vet's packages too.
test-deploy:
	cd tools/k8scheck && $(LINTENV) $(GO) test -count=1 ./...

# lint: both modules tidy (bench/eino follows the main module: a dependency added there
# without its tidy broke `make bench` twice), go vet, staticcheck and deadcode (tests
# included), all clean. deadcode looks at
# the packages the binaries and tests reach; the plugin SDK (plugins/sdk) is a library
# for Wasm guests, built for wasip1, so its API is unreachable from here by design. A
# deliberate use of a deprecated API carries a //lint:ignore saying why.
# Then the size limits (scripts/sizes.sh): no function over cyclomatic 20, no file over
# 450 lines. Test files (*_test.go) are exempt: a test reads best as one scenario or one
# table of cases, and splitting it for a count hides what it proves. Generated files
# (*.pb.go) are exempt too. `bash scripts/sizes.sh DIR...` checks some directories only.
#
# vet and the tools build with the flags `make build` uses (CGO_ENABLED=0, -trimpath:
# LINTENV), whose compiled packages they then find in the build cache; with the
# machine's defaults they compiled the whole tree once more (the cgo setting and
# -trimpath are part of every package's cache key). No package here uses cgo.
LINTENV := CGO_ENABLED=0 GOFLAGS=-trimpath
lint:
	$(GO) mod tidy -diff
	cd bench/eino && $(GO) mod tidy -diff
	cd tools/k8scheck && $(GO) mod tidy -diff && $(LINTENV) $(GO) vet ./...
	$(LINTENV) $(GO) vet $(PKGS)
	$(LINTENV) $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 $(PKGS)
	$(LINTENV) $(GO) run golang.org/x/tools/cmd/deadcode@v0.52.0 -test -filter 'agenthost/(a2abridge|access|approval|audit|bench|cmd|confine|eval|host|insights|loop|manifest|mcpclient|memory|ociplugin|oidc|providers|redact|sandbox|schedule|serve|store|surface|telemetry|workflow)' $(PKGS) | { ! grep . ; }
	@bash scripts/sizes.sh

test-short:
	$(GO) test -count=1 $(PKGS)

# conformance runs the official MCP conformance suite (pinned in
# cmd/agenthost/testdata/mcp-conformance, installed with its own Node 22 by `make deps`)
# against `mcp serve --http` and agenthost's MCP client; expected-failures.yml there says
# what fails and why (docs/mcp.md). `make test` runs the same tests.
conformance: deps build
	$(GO) test -count=1 -timeout 20m -run 'TestE2E_MCPConformance' ./cmd/agenthost/

cover:
	$(GO) test -count=1 -coverprofile=coverage.out ./loop/
	$(GO) tool cover -func=coverage.out | tail -1

# bench prints the performance table and rewrites its section of BENCHMARKS.md (plus
# bench/last-run.txt): 5 rounds, each running every benchmark process once (-count 1), so the
# two sides of a ratio alternate (A B, A B, ...); medians, and each ratio as the median and
# range of the rounds' ratios, in wall time and CPU (bench/cmd/benchtable).
# `go run ./bench/cmd/benchtable -only REGEXP` runs some rows only and leaves BENCHMARKS.md alone.
# It builds its own fixtures (the C plugin needs clang + wasi-libc from `make deps`).
# The side-by-side table (BENCHMARKS.md), then the server's load test: 1,000 concurrent
# runs over HTTP on loopback (surface/server/README.md).
bench:
	$(GO) run ./bench/cmd/benchtable -count 5
	$(GO) test -run '^$$' -bench ServeConcurrentRuns -benchtime 1x ./surface/server/

# fuzz runs every Go fuzz target of the module for FUZZTIME (default 60s) each, finding
# them itself (scripts/fuzz.sh); seeds are in each package's testdata/fuzz/. Not part of
# `make test`.
fuzz:
	@bash scripts/fuzz.sh

# bench-all runs every benchmark of the module, the per-package ones included.
bench-all:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 $(PKGS)

# The main job, offline: the scripted provider plays testdata/scripts/demo.json and the
# calc Wasm plugin computes the answers. It builds only what agent.toml loads (the Go
# calc plugin), so it needs nothing but Go: no `make deps` on a fresh machine. It builds
# the host and the scripted adapter only: the OpenAI and Anthropic adapters (a third of a
# cold build, for their SDKs) are not started by the demo.
demo: $(BIN)/agenthost $(BIN)/agenthost-provider-scripted
	@bash scripts/plugins.d/examples.sh calc
	./$(BIN)/agenthost run -c agent.toml "What is 17*23 + 19*29? Use the calculator."

clean:
	rm -rf $(BIN) coverage.out dist build/image
