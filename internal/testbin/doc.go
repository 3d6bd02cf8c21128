// Package testbin builds the binaries tests run — the provider adapters, agenthost
// itself, test plugins compiled to Wasm — from this module's source, each once per test
// process, into one temporary directory the process removes at the end (Cleanup, from
// TestMain).
//
// Across packages the work is shared through the Go build cache, not through a directory
// of our own: a binary is built with `go run -exec cp PKG DEST`, and go run (unlike
// go build -o) caches the linked executable, under a key the go command computes from
// every source file, dependency, flag, environment setting and toolchain the binary
// depends on. So the second package of a `go test ./...` that needs the scripted adapter
// copies it instead of linking it again (measured: ~1.6 s of CPU for the adapter, ~11 s
// for agenthost, per package), and a binary is never stale: an edit changes the key.
// Binaries built so carry no VCS stamp (go run does not stamp), which no test reads.
//
// It is imported by tests only. It must not import any package of this module: a test
// helper that linked the code under test would build it into every test binary.
package testbin
