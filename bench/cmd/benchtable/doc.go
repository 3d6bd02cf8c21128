// Command benchtable is `make bench`: it runs the benchmarks of bench/ and bench/eino
// with `go test -bench -benchmem -count N`, takes the median of every figure, prints one
// table (agenthost, its comparison, their ratio, the target) and writes it into
// BENCHMARKS.md between the benchtable markers, with the command, machine, load average
// and date; the raw `go test` output goes to bench/last-run.txt. Every ratio divides two
// medians of the same invocation. It parses the output itself (no benchstat) so the
// table's layout and the ratios are under this project's control.
//
// Run it from the repository root: go run ./bench/cmd/benchtable [-count 5].
package main
