package bench

import (
	"syscall"
	"testing"
)

// withCPU runs the timed loop f and reports the process CPU time per op (user + system,
// garbage collector and helper goroutines included) as cpu-ns/op, from getrusage as in
// loop/bench_test.go: unlike ns/op it does not grow when other processes compete for the
// cores, so it is the steadier figure on a shared machine.
func withCPU(b *testing.B, f func()) {
	b.ReportAllocs()
	cpu0 := processCPU()
	f()
	if b.N > 0 {
		b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	}
}

func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
