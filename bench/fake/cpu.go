package fake

import (
	"syscall"
	"testing"
)

// WithCPU runs a benchmark's timed loop f and reports the process CPU time per op (user +
// system, garbage collector and helper goroutines included) as cpu-ns/op, from
// getrusage: unlike ns/op it does not grow when other processes compete for the cores, so
// it is the steadier figure on a shared machine. Both bench modules use it.
func WithCPU(b *testing.B, f func()) {
	b.ReportAllocs()
	cpu0 := ProcessCPU()
	f()
	if b.N > 0 {
		b.ReportMetric(float64(ProcessCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	}
}

// ProcessCPU is the CPU time this process has used, in nanoseconds.
func ProcessCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
