// Package bench holds the benchmarks behind `make bench`: one file per row of the table
// in BENCHMARKS.md (warm tool call, plugin start, loop step, 1,000 sessions, process start, run start vs
// history), each
// measuring agenthost and its comparison in the same process, so that every ratio comes
// from figures of the same run. bench/cmd/benchtable runs them and writes the table; the
// eino comparison is a separate module, bench/eino, so this one does not depend on eino.
//
// The package has no tests: plain `go test ./...` runs nothing here, and the fixtures
// (Wasm plugins, the scripted provider) are built only when benchmarks run.
package bench
