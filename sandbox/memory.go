package sandbox

import (
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// memoryWatch enforces the memory permission for one instance. wazero's own
// page limit makes memory.grow fail silently, so a plugin that died of it
// would look like any other trap. Allocating the linear memories ourselves
// lets the sandbox refuse the grow and remember that it did, and the error
// can then say "memory limit 32 MiB exceeded".
type memoryWatch struct {
	limit    uint64
	exceeded atomic.Bool
}

func (w *memoryWatch) Allocate(capacity, maximum uint64) experimental.LinearMemory {
	return &limitedMemory{watch: w}
}

// limitedMemory is a linear memory backed by a Go slice that grows
// geometrically and never beyond its watch's limit.
type limitedMemory struct {
	watch *memoryWatch
	buf   []byte
}

func (m *limitedMemory) Reallocate(size uint64) []byte {
	if size > m.watch.limit {
		m.watch.exceeded.Store(true)
		return nil
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		return m.buf
	}
	capacity := max(size, min(2*uint64(cap(m.buf)), m.watch.limit))
	nb := make([]byte, size, capacity)
	copy(nb, m.buf)
	m.buf = nb
	return nb
}

func (m *limitedMemory) Free() { m.buf = nil }
