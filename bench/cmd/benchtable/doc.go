// Command benchtable is `make bench`: it runs the benchmarks of bench/ and bench/eino in
// N rounds, each round running every `go test -bench -benchmem -count 1` process once, so
// the two sides of a ratio alternate (A B, A B, ...) instead of each side's repetitions
// running back to back, where drift on a shared machine lands in the ratio. It takes the
// median of every figure, prints one table (agenthost, its comparison, their ratio, the
// target) and writes it into BENCHMARKS.md between the benchtable markers, with the
// command, machine, load average and date; the raw `go test` output goes to
// bench/last-run.txt. A ratio is the median of the rounds' ratios with their range (the
// spread), and says what it divides: wall time (ns/op) or CPU (cpu-ns/op). -only REGEXP
// runs the matching jobs only and prints their rows, leaving BENCHMARKS.md alone. It parses the output itself (no benchstat) so the
// table's layout and the ratios are under this project's control.
//
// Run it from the repository root: go run ./bench/cmd/benchtable [-count 5] [-only REGEXP].
package main
