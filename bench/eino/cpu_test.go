package eino

import (
	"syscall"
	"testing"
)

// withCPU runs the timed loop f and reports process CPU per op (getrusage) as
// cpu-ns/op, like bench/cpu_test.go in the main module.
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
