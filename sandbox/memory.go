package sandbox

import (
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// memoryWatch enforces the memory permission for one instance. wazero's own
// page limit makes memory.grow fail silently, so a plugin that died of it
// would look like any other trap. Allocating the linear memories ourselves
// lets the sandbox refuse the grow and remember that it did, and the error
// can then say "memory limit 32 MiB exceeded".
//
// The watch also hands the instance's memories back to its plugin's
// memoryPool when the instance is disposed of (recycle), so that the next
// instance does not allocate them again: see memoryPool for why.
type memoryWatch struct {
	limit    uint64
	exceeded atomic.Bool
	pool     *memoryPool // nil: nothing is recycled
	mems     []*limitedMemory
}

// Allocate is called by wazero while it instantiates a module, on the
// instantiating goroutine, once per memory (the guest's and, for extism
// plugins, the kernel's).
func (w *memoryWatch) Allocate(capacity, maximum uint64) experimental.LinearMemory {
	m := &limitedMemory{watch: w}
	w.mems = append(w.mems, m)
	return m
}

// recycle gives the instance's memories to the pool. Call it only once the
// instance is closed and no call of it is running: the buffers are written
// by the next instance, and a guest still executing would see them change.
// (wazero's Free, which may run while a guest is stopped mid-call by its
// deadline, therefore recycles nothing.)
func (w *memoryWatch) recycle() {
	for _, m := range w.mems {
		w.pool.put(m.buf)
		m.buf = nil
	}
	w.mems = nil
}

// limitedMemory is a linear memory backed by a Go slice that grows
// geometrically and never beyond its watch's limit. Every byte of buf past
// len(buf) is zero: a guest only writes below its memory's length, which
// never shrinks, so growing within the capacity needs no clearing.
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
	nb := m.watch.pool.get(size)
	if nb == nil {
		nb = make([]byte, size, capacity)
	}
	copy(nb, m.buf)
	// The old buffer is left to the collector, not recycled: wazero and host
	// functions may hold views of it until the call that grew it returns.
	m.buf = nb
	return nb
}

// Free is wazero's notice that the module is closed. It keeps buf for
// recycle, which runs when the sandbox knows the instance is idle.
func (m *limitedMemory) Free() {}

// memoryPool keeps the linear memories of a plugin's disposed instances for
// its next ones. A new instance of a Go-built plugin grows its memory to
// several MiB while the Go runtime starts; allocating that afresh for every
// session (isolation "session") or call ("call") made most of the garbage
// of a busy server, and the collections it caused cost more than the
// instantiation itself (BENCHMARKS.md, round two). A recycled buffer is
// cleared before it is handed out, so nothing of one instance is visible to
// the next.
type memoryPool struct {
	mu      sync.Mutex
	free    [][]byte // each zero past its length
	max     int      // buffers kept at most
	closed  bool     // drained: keep nothing more
	reused  atomic.Int64
	dropped atomic.Int64
}

func newMemoryPool(buffers int) *memoryPool { return &memoryPool{max: buffers} }

// get returns a zeroed buffer of length size from the pool, or nil when it
// holds none large enough. It takes the smallest that fits.
func (p *memoryPool) get(size uint64) []byte {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	best := -1
	for i, b := range p.free {
		if uint64(cap(b)) >= size && (best < 0 || cap(b) < cap(p.free[best])) {
			best = i
		}
	}
	if best < 0 {
		p.mu.Unlock()
		return nil
	}
	b := p.free[best]
	last := len(p.free) - 1
	p.free[best], p.free[last] = p.free[last], nil
	p.free = p.free[:last]
	p.mu.Unlock()
	clear(b) // the previous instance wrote only below len(b)
	p.reused.Add(1)
	return b[:size]
}

// put keeps b for a later get, or drops it when the pool is full.
func (p *memoryPool) put(b []byte) {
	if p == nil || cap(b) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.free) >= p.max {
		p.dropped.Add(1)
		return
	}
	p.free = append(p.free, b)
}

// drain empties the pool (the plugin is closed).
func (p *memoryPool) drain() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.free, p.closed = nil, true
	p.mu.Unlock()
}
