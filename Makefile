# agenthost — build, test, bench, demo.
# `make demo` runs the main job offline; `make test` is what CI runs (see .ci/run).

GO      ?= go
BIN     := bin
PKGS    := ./...

.PHONY: all build test test-short cover bench demo deps plugins clean

all: build

# deps installs what the tests need on a fresh machine (toolchains for the Wasm
# examples, Go tools). It is idempotent and quiet when everything is present.
deps:
	@bash scripts/deps.sh

build:
	$(GO) build $(PKGS)

plugins:
	@bash scripts/plugins.sh

test: plugins
	$(GO) vet $(PKGS)
	$(GO) test -race -count=1 $(PKGS)

test-short:
	$(GO) test -count=1 $(PKGS)

cover:
	$(GO) test -count=1 -coverprofile=coverage.out ./loop/
	$(GO) tool cover -func=coverage.out | tail -1

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 $(PKGS)

demo:
	$(GO) test -count=1 -run '^ExampleAgent_RunWith$$' -v ./loop/

clean:
	rm -rf $(BIN) coverage.out
